jest.setTimeout(60_000);

import { randomUUID } from 'node:crypto';
import { PgliteDb, runMigrations, runRuntimeMigrations, explainingSql } from '@lore/runtime';
import { CORE_MIGRATIONS } from '../core-service';
import { lockSessionForTurn } from './chat-messages';

/**
 * The plan of a turn's branch walk on a database without planner statistics (embedded mode before its first ANALYZE,
 * or a table that grew since): every step a primary-key look-up, never the session's index with a filter over all
 * of the session's messages at every step (quadratic: 2.4 s for a branch of 1,227 messages).
 */
describe('a turn\'s walk of the message tree', () => {
  it('looks each message up by its primary key, statistics or none', async () => {
    const db = await PgliteDb.open();
    try {
      await runRuntimeMigrations(db);
      await runMigrations(db, CORE_MIGRATIONS);
      const session = randomUUID();
      await db.asOwner(async (sql) => {
        await sql.query(`INSERT INTO core.personas (tenant_id, persona_id, name) VALUES ('t', 0, 'default')`);
        await sql.query(`INSERT INTO core.chat_sessions (tenant_id, session_id, owner, persona_id) VALUES ('t', '${session}', 'key:k', 0)`);
        // A branch of 400 messages, each the latest child of the one before.
        await sql.query(`INSERT INTO core.chat_messages (tenant_id, session_id, message_type, message)
                         SELECT 't', '${session}', CASE WHEN i = 1 THEN 'system' WHEN i % 2 = 0 THEN 'user' ELSE 'assistant' END, 'm' || i FROM generate_series(1, 400) AS i`);
        await sql.query(`UPDATE core.chat_messages m SET parent_message_id = NULLIF(m.message_id - 1, (SELECT min(message_id) - 1 FROM core.chat_messages)),
                                latest_child_message_id = CASE WHEN m.message_id = (SELECT max(message_id) FROM core.chat_messages) THEN NULL ELSE m.message_id + 1 END`);
      });
      const plans: string[] = [];
      await db.withTenant('t', (sql) => lockSessionForTurn(explainingSql(sql, plans, (text) => text.includes('RECURSIVE')), 't', session, 'key:k', 'name', null, 20));
      expect(plans).toHaveLength(1);
      // Both recursive steps (down the latest children, up the parents) by the primary key.
      expect(plans[0]).toContain('Index Cond: ((tenant_id = \'t\'::text) AND (message_id = b.latest_child_message_id))');
      expect(plans[0]).toContain('Index Cond: ((tenant_id = \'t\'::text) AND (message_id = u.parent_message_id))');
      expect(plans[0]).not.toMatch(/Join Filter: \(.*message_id/);
    } finally {
      await db.close();
    }
  });
});
