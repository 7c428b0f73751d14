import type { HealthCheck } from '@lore/runtime';
import type { UpstreamName } from '../config';
import { openUpstream, type UpstreamTarget } from './proxy';

export interface UpstreamsCheckOptions {
  /** How long one upstream's answer is reused before it is asked again. Default 5 s. */
  cacheMs?: number;
  /** How long one probe of an upstream may take. Default 1 s. */
  timeoutMs?: number;
  now?: () => number;
}

interface Reading {
  reachable: boolean;
  status?: number;
  error?: string;
  checked_at: string;
}

/**
 * The gateway's `upstreams` readiness check: each configured upstream's own `/readyz` (under its base path), asked at
 * most every `cacheMs` with a bounded timeout. It reports and never fails: the gateway stays ready while an upstream
 * is down, so its own routes (keys, identity, workspaces, webhooks, the admin API) keep serving, and a request for
 * the missing surface answers 502 as it would anyway (docs/gateway.md, "Readiness").
 * `degraded` is true when any configured upstream is unreachable or not ready.
 */
export function upstreamsCheck(upstreams: ReadonlyMap<UpstreamName, UpstreamTarget>, options: UpstreamsCheckOptions = {}): HealthCheck {
  const cacheMs = options.cacheMs ?? 5_000;
  const timeoutMs = options.timeoutMs ?? 1_000;
  const now = options.now ?? Date.now;
  const cache = new Map<UpstreamName, { at: number; reading: Promise<Reading> }>();

  const read = (name: UpstreamName, target: UpstreamTarget): Promise<Reading> => {
    const cached = cache.get(name);
    if (cached && now() - cached.at < cacheMs) return cached.reading;
    const reading = probe(target, timeoutMs);
    cache.set(name, { at: now(), reading });
    return reading;
  };

  return async () => {
    const entries = await Promise.all([...upstreams].map(async ([name, target]) => [name, await read(name, target)] as const));
    const details = Object.fromEntries(entries);
    const degraded = entries.some(([, r]) => !r.reachable || r.status !== 200);
    return { ok: true, details: { degraded, ...details } };
  };
}

/** One GET of the upstream's `/readyz`; never rejects. */
function probe(target: UpstreamTarget, timeoutMs: number): Promise<Reading> {
  const checked_at = new Date().toISOString();
  return new Promise<Reading>((resolve) => {
    const req = openUpstream(target, 'GET', `${target.basePath}/readyz`, { accept: 'application/json' });
    const timer = setTimeout(() => req.destroy(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    req.on('response', (res) => {
      clearTimeout(timer);
      res.resume();
      resolve({ reachable: true, status: res.statusCode ?? 0, checked_at });
    });
    req.on('error', (err) => {
      clearTimeout(timer);
      resolve({ reachable: false, error: err.message, checked_at });
    });
    req.end();
  });
}
