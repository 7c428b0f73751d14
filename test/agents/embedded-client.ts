import { upsertDirectoryRecords } from '@lore/agents';
import type { EmbeddedUnderTest } from '../support/embedded';
import { worldDirectoryRecords, type AgentsWorld } from '../support/agents-world';
import { eventually as until, type AgentsStack } from './harness';
import { readStream, type Frame, type StreamRead } from './sse-client';
import { openSession, socketUrl, type SessionClient } from './session-socket';

/**
 * What the embedded-mode agents suites (`*-embedded.int.test.ts`) share: every call goes through the embedded
 * process's gateway (its one public port) with the development key, as a client of `npm start` calls it; streams and
 * sockets use the same clients as the cluster-shaped suites.
 */

export type Json = Record<string, any>;

/** The development key as a bearer credential (spec 3's scheme). */
export const devAuth = (e: EmbeddedUnderTest): Record<string, string> => ({ authorization: `Bearer ${e.lore.credentials.api_key}` });

/** The world's companies and people as directory records of the development tenant (in the process's PGlite). */
export async function seedDirectory(e: EmbeddedUnderTest, world: AgentsWorld): Promise<void> {
  await upsertDirectoryRecords(e.lore.parts.db, e.lore.credentials.tenant_id, worldDirectoryRecords(world).map((r) => ({ kind: r.kind, data: r.data, source: r.source })));
}

/** A server-sent stream read through the embedded gateway (`sse-client.ts` only needs the public URL). */
export function streamOf(
  e: EmbeddedUnderTest,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: unknown,
  leaveWhen?: (frames: Frame[], comments: number) => boolean,
  timeoutMs?: number,
): Promise<StreamRead> {
  const gateway = { gateway: { publicUrl: e.lore.url } } as unknown as AgentsStack;
  return readStream(gateway, method, path, { ...devAuth(e), ...headers }, body, leaveWhen, timeoutMs);
}

/** Opens a session's socket with the development key in `?api-key=` (and `?cursor=` when given). */
export function sessionOf(e: EmbeddedUnderTest, start: Json, cursor?: number): Promise<SessionClient> {
  const url = socketUrl(start, e.lore.credentials.api_key);
  return openSession(cursor === undefined ? url : `${url}&cursor=${cursor}`);
}


/** A GET of `path` polled until `done` holds for its answer (200 each time), which it then gives. */
export function pollUntil(e: EmbeddedUnderTest, path: string, done: (json: Json) => boolean, timeoutMs = 60_000, everyMs = 100): Promise<Json> {
  return until(`${path} to be done`, async () => {
    const r = await e.call('GET', path);
    if (r.status !== 200) throw new Error(`${path} answered ${r.status}: ${JSON.stringify(r.json)}`);
    return done(r.json) ? (r.json as Json) : null;
  }, timeoutMs, everyMs);
}

/** Ended statuses of a workflow or research run. */
export const ENDED = ['completed', 'stopped', 'error'];
export const ended = (j: Json): boolean => ENDED.includes(j.status as string);

/** Polls `probe` until it gives a value: the agents harness's poller, under the name these suites use. */
export { until };
