/**
 * The operator's view of poison messages: `cli.ts dead-letters list` shows what a consumer gave up on, with the
 * reason, and `dead-letters redrive` puts it back on its topic, against a real broker and an install prefix.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { TOPICS } from '@lore/contracts';
import { waitFor } from '../../services/runtime/src/bus/bus.contract';
import { KafkaBus } from '../../services/runtime/src/bus/kafka-bus';
import type { BusMessage } from '../../services/runtime/src/ports/event-bus';
import { requireEnv } from '../support/infra';
import { silentLogger } from './support';

jest.setTimeout(120_000);

const ROOT = join(__dirname, '..', '..');
const brokers = requireEnv('LORE_TEST_KAFKA_BROKERS');
const prefix = `dlcli-${randomBytes(4).toString('hex')}`;

function cli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--conditions=lore-src', '--import', 'tsx', join(ROOT, 'services/gateway/src/cli.ts'), 'dead-letters', ...args], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', LORE_KAFKA_BROKERS: brokers, LORE_KAFKA_PREFIX: prefix },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('dead-letters CLI', () => {
  const bus = new KafkaBus({ brokers: brokers.split(','), clientId: prefix, prefix, logger: silentLogger, partitions: 2, handlerRetry: { initialMs: 20, maxMs: 100 } });

  afterAll(async () => {
    await bus.close();
  });

  it('lists nothing for an install that never dead-lettered anything', async () => {
    const r = await cli(['list']);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('');
  });

  it('lists a dead-lettered message with its reason and re-drives it to the consumer that gave up on it', async () => {
    await bus.ensureTopics([TOPICS.memoryUploads]);
    let broken = true;
    const handled: BusMessage[] = [];
    const sub = await bus.subscribe({ groupId: 'graph-worker-uploads', topics: [TOPICS.memoryUploads], maxAttempts: 2 }, async (m) => {
      if (broken) throw new Error('the extractor crashed on this file');
      handled.push(m);
    });
    try {
      await bus.publish(TOPICS.memoryUploads, [{ key: 'mem-7', value: '{"upload_id":"up_1"}', headers: { 'event-id': 'evt-upload-1' } }]);
      await bus.publish(TOPICS.memoryUploads, [{ key: 'mem-7', value: '{"upload_id":"up_2"}', headers: { 'event-id': 'evt-upload-2' } }]);

      let listed: Array<Record<string, unknown>> = [];
      for (const deadline = Date.now() + 60_000; listed.length < 2 && Date.now() < deadline; ) {
        const r = await cli(['list', '--topic', TOPICS.memoryUploads]);
        expect({ code: r.code, stderr: r.stderr }).toMatchObject({ code: 0 });
        listed = r.stdout.trim() ? r.stdout.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>) : [];
      }
      expect(listed).toHaveLength(2);
      expect(listed[0]).toMatchObject({
        topic: TOPICS.memoryUploads,
        key: 'mem-7',
        group: 'graph-worker-uploads',
        attempts: 2,
        event_id: 'evt-upload-1',
        value: '{"upload_id":"up_1"}',
      });
      expect(String(listed[0]!.error)).toContain('the extractor crashed on this file');
      expect(listed[0]!.id).toMatch(/^\d+:\d+$/);
      expect(Date.parse(String(listed[0]!.last_failure_at))).toBeGreaterThanOrEqual(Date.parse(String(listed[0]!.first_failure_at)));

      broken = false;
      const redrive = await cli(['redrive', '--id', String(listed[1]!.id)]);
      expect({ code: redrive.code, stderr: redrive.stderr }).toMatchObject({ code: 0 });
      expect(JSON.parse(redrive.stdout)).toEqual({ redriven: [{ id: listed[1]!.id, topic: TOPICS.memoryUploads, key: 'mem-7' }] });
      await waitFor('the re-driven message', () => handled.length >= 1, 60_000);
      await new Promise((r) => setTimeout(r, 300));
      expect(handled.map((m) => m.headers['event-id'])).toEqual(['evt-upload-2']);

      const unknown = await cli(['redrive', '--id', '0:999999']);
      expect(unknown.code).toBe(1);
      expect(unknown.stderr).toContain('no dead letter with id 0:999999');
      const bad = await cli(['redrive']);
      expect(bad.code).toBe(2);
    } finally {
      await sub.stop();
    }
  });
});
