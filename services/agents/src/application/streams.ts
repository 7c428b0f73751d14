import { isRunning } from '../domain/workflow';
import { RESEARCH_KIND } from '../domain/research';
import { getWorkflow, visibleThreads } from '../store/workflows';
import type { AgentsDeps } from './context';
import { notFound } from './errors';
import { seesWorkflow, type Principal } from './principal';
import { publicStreamKey, streamKeyOf, tenantStreamPrefix } from './progress';

/**
 * The stream inspection routes (spec 3, "/api/stream/..."): the caller's tenant's progress streams only. A key is
 * `workflow:<thread id>`; the tenant is added here, never taken from the caller, so another tenant's stream is
 * simply not found.
 */
export const MAX_ACTIVE_STREAMS = 1000;

const KEY = /^workflow:([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/i;

export async function activeStreams(deps: AgentsDeps, principal: Principal): Promise<string[]> {
  const prefix = tenantStreamPrefix(principal.tenantId);
  const keys = (await deps.streams.list(prefix, MAX_ACTIVE_STREAMS)).map((k) => k.slice(prefix.length));
  // The streams of the workflows the caller sees (`seesWorkflow`): a user's own; an administrator's, the tenant's
  // within its reach.
  const threads = keys.map((k) => KEY.exec(k)?.[1]?.toLowerCase()).filter((t): t is string => t !== undefined);
  const seen = await deps.db.withTenant(principal.tenantId, (sql) => visibleThreads(sql, principal.tenantId, principal, threads));
  return keys.filter((k) => seen.has(KEY.exec(k)?.[1]?.toLowerCase() ?? ''));
}

export interface StreamStatus {
  stream_key: string;
  active: boolean;
  length: number;
  first_entry_id: string;
  last_entry_id: string;
  age_seconds: number;
}

/** A stream's length, first and last ids and age; `active` while its workflow runs. 404 for a stream the tenant lacks. */
export async function streamStatus(deps: AgentsDeps, principal: Principal, streamKey: string): Promise<StreamStatus> {
  const m = KEY.exec(streamKey);
  if (!m) throw notFound('stream');
  const threadId = m[1]!.toLowerCase();
  const w = await deps.db.withTenant(principal.tenantId, (sql) => getWorkflow(sql, principal.tenantId, threadId, ['company_search', 'people_search', RESEARCH_KIND]));
  // The streams of the workflows the caller sees, as their snapshots.
  if (w && !seesWorkflow(principal, w)) throw notFound('stream');
  const info = await deps.streams.describe(streamKeyOf(principal.tenantId, threadId));
  if (!info) throw notFound('stream');
  return {
    stream_key: publicStreamKey(threadId),
    active: w !== null && isRunning(w.status),
    length: info.length,
    first_entry_id: info.firstEntryId ?? '',
    last_entry_id: info.lastEntryId ?? '',
    age_seconds: info.ageSeconds,
  };
}
