import { createLogger, IdentitySigner, runMigrations, runRuntimeMigrations, type Db, type Sql } from '@lore/runtime';
import { CORE_MIGRATIONS } from '@lore/core';
import { DEFAULT_INDEXING_SETTINGS, enqueueAttempt, runAttempt, type IndexingDeps } from '../../services/core/src/application/indexing';
import type { ConnectorDocuments } from '../../services/core/src/clients/graph-documents';
import type { ConnectorSource, RunOutcome, SourceItem } from '../../services/core/src/connectors/source';
import { getCcPair, insertCcPair } from '../../services/core/src/store/cc-pairs';
import { listProjects } from '../../services/core/src/store/chat-projects';
import { insertConnector } from '../../services/core/src/store/connectors';
import { insertCredential } from '../../services/core/src/store/credentials';
import { freshPostgresDb, rowsRead } from '../runtime/support';
import { testSecretBox } from '../support/encryption';

jest.setTimeout(300_000);

/**
 * Core's bulk operations on tables no ANALYZE has seen (a fresh install's first load, a new tenant), measured in rows
 * read (each transaction's own counters), not in time: each must read a few rows per input, not the tenant's or the
 * pair's table per input. Other statements measured linear on such tables are listed in docs/core.md ("Planner
 * statistics").
 */
describe('core\'s bulk statements on tables without statistics', () => {
  const T = 'tenant-plans';
  const TABLES = ['personas', 'chat_sessions', 'chat_messages', 'chat_projects', 'connectors', 'credentials', 'cc_pairs', 'index_attempts', 'connector_documents', 'index_schedule'];

  async function freshCore() {
    const stack = await freshPostgresDb();
    await runRuntimeMigrations(stack.db);
    await runMigrations(stack.db, CORE_MIGRATIONS);
    // Autovacuum stays away: the statements run as on a fresh install, before any ANALYZE.
    await stack.db.asOwner(async (sql) => {
      for (const t of TABLES) await sql.query(`ALTER TABLE core.${t} SET (autovacuum_enabled = false)`);
    });
    return stack;
  }

  it('a pair\'s load keeps its documents and their count reading each document a few times', async () => {
    const N = 5_000;
    const stack = await freshCore();
    try {
      const pairId = await stack.db.withTenant(T, async (sql) => {
        const place = { workspace_id: 'ws', memory_id: 'mem' };
        const connector = await insertConnector(sql, T, { name: 'site', source: 'web', input_type: 'load_state', connector_specific_config: {}, refresh_freq: 3600, prune_freq: null, indexing_start: null, access_type: 'public', groups: [] }, place);
        const credential = await insertCredential(sql, T, { owner: 'key:admin', user_email: '', source: 'web', name: 'none', admin_public: true, curator_public: false, groups: [] }, place);
        const pair = await insertCcPair(sql, T, { connector_id: connector.id, credential_id: credential.id, name: 'site', access_type: 'public', groups: [], ...place, creator_credential: 'key', creator_subject: 'admin' });
        return pair!.id;
      });
      let read = 0;
      const counted = countingDb(stack.db, (n) => (read += n));
      // The memory: what it holds; each write first notes what the pair's count says then (the batches before it).
      const held = new Set<string>();
      const counts: Array<{ said: number; held: number }> = [];
      const documents: ConnectorDocuments = {
        async push(_identity, _pair, _access, docs) {
          const said = await stack.db.withTenant(T, async (sql) => (await getCcPair(sql, T, pairId))!.num_docs_indexed);
          counts.push({ said, held: held.size });
          return docs.map((d) => {
            const known = held.has(d.id);
            held.add(d.id);
            return { id: d.id, doc_id: `doc-${d.id}`, outcome: known ? ('unchanged' as const) : ('created' as const) };
          });
        },
        async remove(_identity, _pair, ids) {
          for (const id of ids ?? []) held.delete(id);
          return ids?.length ?? 0;
        },
      };
      let pages = N;
      let listed = N;
      const source: ConnectorSource = {
        sourceType: 'web',
        loadAll: () => pagesUpTo(pages),
        pollSince: () => pagesUpTo(pages),
        async *listIds() {
          for (let i = 0; i < listed; i++) yield page(i);
          return outcome(listed);
        },
      };
      const deps: IndexingDeps = {
        db: counted,
        logger: createLogger({ level: 'silent', service: 'core-plans-test' }),
        signer: new IdentitySigner('core-plans-test-secret-0123456789abcdef'),
        secrets: testSecretBox(),
        documents,
        sources: () => source,
        settings: { ...DEFAULT_INDEXING_SETTINGS, batchLingerMs: 50 },
        blobs: null,
      };
      const run = async (prune: boolean) => {
        const attempt = await stack.db.withTenant(T, (sql) => enqueueAttempt(sql, T, pairId, 'load', prune, 'manual'));
        return runAttempt(deps, { event_id: `idx-${attempt!.id}`, tenant_id: T, cc_pair_id: pairId, attempt_id: attempt!.id }, new AbortController().signal);
      };

      // A first load: N documents in batches of 64.
      expect(await run(false)).toBe('success');
      expect(held.size).toBe(N);
      // Counted once, then batch by batch: 5,000 documents read about 10,500 rows; a count of the pair's documents in every
      // batch read 200,000 (N × N / 128, growing with the square).
      expect(read).toBeLessThan(10 * N);
      expect(counts.every((c) => c.said === c.held)).toBe(true);

      // Again with 100 more, pruning the last 50 the listing no longer finds: the count follows the new documents
      // batch by batch and the removals at the end.
      read = 0;
      counts.length = 0;
      pages = N + 100;
      listed = N + 50;
      expect(await run(true)).toBe('success');
      expect(read).toBeLessThan(10 * N);
      expect(counts.every((c) => c.said === c.held)).toBe(true);
      expect(held.size).toBe(N + 50);
      expect(await stack.db.withTenant(T, async (sql) => (await getCcPair(sql, T, pairId))!.num_docs_indexed)).toBe(N + 50);
    } finally {
      await stack.close();
    }
  });

  it('listing an owner\'s projects counts each project\'s sessions by an index', async () => {
    const P = 200;
    const S = 2_000;
    const OWNER = 'key:owner';
    const stack = await freshCore();
    try {
      await stack.db.withTenant(T, async (sql) => {
        await sql.query(`INSERT INTO core.personas (tenant_id, persona_id, name) VALUES ($1, 0, 'Default')`, [T]);
        await sql.query(`INSERT INTO core.chat_projects (tenant_id, owner, name) SELECT $1, $2, 'Project ' || g FROM generate_series(1, $3::int) g`, [T, OWNER, P]);
        // Half the sessions in a project (five each), half outside any.
        await sql.query(
          `INSERT INTO core.chat_sessions (tenant_id, session_id, owner, persona_id, project_id)
           SELECT $1, gen_random_uuid(), $2, 0, CASE WHEN g % 2 = 0 THEN 1 + g % $3::int END FROM generate_series(1, $4::int) g`,
          [T, OWNER, P, S],
        );
      });
      await stack.db.withTenant(T, async (sql) => {
        const before = await rowsRead(sql, ['core']);
        const projects = await listProjects(sql, T, OWNER, 500);
        const read = (await rowsRead(sql, ['core'])) - before;
        expect(projects).toHaveLength(P);
        expect(projects.reduce((n, p) => n + p.session_count, 0)).toBe(S / 2);
        // The projects and the sessions in them, once each (about 1,200 rows); counting each project's sessions
        // among all the tenant's read P × S (400,000).
        expect(read).toBeLessThan(5 * (P + S));
      });
    } finally {
      await stack.close();
    }
  });
});

function page(i: number): string {
  return `https://docs.example.org/page/${i}`;
}

function outcome(yielded: number): RunOutcome {
  return { stop: 'completed', detail: null, yielded, unchanged: 0, skipped: 0, requests: yielded, elapsedMs: 0 };
}

async function* pagesUpTo(n: number): AsyncGenerator<SourceItem, RunOutcome, undefined> {
  for (let i = 0; i < n; i++) {
    const id = page(i);
    yield {
      kind: 'document',
      document: { id, title: `Page ${i}`, text: `Text of page ${i}.`, link: id, source_type: 'web', updated_at: null, primary_owners: null, secondary_owners: null, metadata: {}, content_hash: `hash-${i}` },
      validators: { hash: `hash-${i}` },
      truncated: false,
    };
  }
  return outcome(n);
}


/** The database, each tenant transaction adding the rows it read from core's tables to `add`. */
function countingDb(db: Db, add: (rows: number) => void): Db {
  return new Proxy(db, {
    get(target, prop, receiver) {
      if (prop !== 'withTenant') {
        const v = Reflect.get(target, prop, receiver) as unknown;
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      }
      return <R>(tenantId: string, fn: (sql: Sql) => Promise<R>) =>
        target.withTenant(tenantId, async (sql) => {
          const before = await rowsRead(sql, ['core']);
          const value = await fn(sql);
          add((await rowsRead(sql, ['core'])) - before);
          return value;
        });
    },
  });
}
