import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { getWorkflow } from '../store/workflows';
import type { AgentsDeps } from './context';
import { agentsError } from './errors';
import type { StreamSink } from './generic-workflows';
import { followSession, type SessionMessage } from './sessions/messages';

/**
 * A deep search's live page (docs/agents.md, "Live session page"): `live_url` opens an HTML page that follows the
 * session through a server-sent stream of its messages. A browser cannot send the API key, so the URL carries a
 * short-lived token signed by this service (HMAC-SHA256 with a key derived from the identity secret; v1 format
 * `v1.<payload>.<mac>`, payload `{t: tenant, h: thread, e: expiry}`): it opens that one session's page and stream
 * until it expires, and nothing else. A token that is forged, expired or names another thread is 404, like a
 * thread that does not exist.
 */

const TOKEN = /^v1\.([A-Za-z0-9_-]{1,600})\.([A-Za-z0-9_-]{43})$/;

export class LiveTokens {
  private readonly key: Buffer;

  /**
   * `secret`: the identity secret shared by the API processes (a token minted by one verifies on another); a process
   * on its own (embedded mode, tests) may leave it out and gets a random one.
   */
  constructor(
    secret: string | Buffer = randomBytes(32),
    readonly ttlSeconds = 3_600,
  ) {
    this.key = createHmac('sha256', secret).update('lore agents live page v1').digest();
  }

  issue(tenantId: string, threadId: string, now = Date.now()): string {
    const payload = Buffer.from(JSON.stringify({ t: tenantId, h: threadId.toLowerCase(), e: Math.floor(now / 1000) + this.ttlSeconds })).toString('base64url');
    return `v1.${payload}.${this.mac(payload)}`;
  }

  /** The tenant the token opens `threadId` for, or null (malformed, forged, expired, another thread). */
  verify(token: string | undefined, threadId: string, now = Date.now()): { tenantId: string; expiresAt: number } | null {
    const m = TOKEN.exec(token ?? '');
    if (!m) return null;
    const given = Buffer.from(m[2]!, 'base64url');
    const wanted = Buffer.from(this.mac(m[1]!), 'base64url');
    if (given.length !== wanted.length || !timingSafeEqual(given, wanted)) return null;
    let claims: { t?: unknown; h?: unknown; e?: unknown };
    try {
      claims = JSON.parse(Buffer.from(m[1]!, 'base64url').toString('utf8')) as typeof claims;
    } catch {
      return null;
    }
    if (typeof claims.t !== 'string' || typeof claims.h !== 'string' || typeof claims.e !== 'number') return null;
    if (claims.h !== threadId.toLowerCase() || claims.e * 1000 <= now) return null;
    return { tenantId: claims.t, expiresAt: claims.e * 1000 };
  }

  private mac(payload: string): string {
    return createHmac('sha256', this.key).update(payload).digest('base64url');
  }
}

/** The live page's path with its token (the start route puts the public origin in front). */
export const livePagePath = (threadId: string, token: string): string => `/service-deep-search/live/${threadId}?token=${encodeURIComponent(token)}`;

export interface LiveSession {
  tenantId: string;
  threadId: string;
  listId: string;
  status: string;
  prompt: string;
  /** The number of the session's last event (0: none yet). */
  lastSeq: number;
  /** When the token stops opening the page (epoch ms). */
  expiresAt: number;
}

const NOT_FOUND = 'no such live page: the link is wrong or has expired';
const ENDED = new Set(['completed', 'stopped', 'error']);

/** The deep search a live-page token opens, or 404 (a bad token and a missing session answer the same). */
export async function openLiveSession(deps: AgentsDeps, tokens: LiveTokens, token: string | undefined, threadId: string): Promise<LiveSession> {
  const claims = tokens.verify(token, threadId);
  if (!claims) throw agentsError('NOT_FOUND', NOT_FOUND);
  const w = await deps.db.withTenant(claims.tenantId, (sql) => getWorkflow(sql, claims.tenantId, threadId.toLowerCase(), ['deep_search']));
  if (!w) throw agentsError('NOT_FOUND', NOT_FOUND);
  return { tenantId: claims.tenantId, threadId: w.thread_id, listId: w.list_id ?? '', status: w.status, prompt: w.prompt, lastSeq: Number(w.next_seq) - 1, expiresAt: claims.expiresAt };
}

export const isLiveEnded = (s: LiveSession): boolean => ENDED.has(s.status);

/** One server-sent event of a session message: its cursor as the id, its type as the event name. */
export const liveFrame = (m: SessionMessage): string => `${m.cursor !== null ? `id: ${m.cursor}\n` : ''}event: ${m.type}\ndata: ${JSON.stringify(m)}\n\n`;

export interface LiveFollowSettings {
  /** A comment line this often keeps a quiet stream open through proxies. */
  keepaliveMs: number;
  /** The longest one stream stays open (the page's EventSource reconnects and resumes after it). */
  maxMs: number;
}

export const LIVE_FOLLOW_DEFAULTS: LiveFollowSettings = { keepaliveMs: 15_000, maxMs: 30 * 60_000 };

/**
 * Streams a session's messages after `afterSeq` as server-sent events until its final message (`done`, `error`),
 * the client leaving, the token's expiry or `maxMs`. The messages are the socket's (the same log, the same cursor),
 * so a page that reconnects with `Last-Event-ID` loses nothing.
 */
export async function followLive(deps: AgentsDeps, s: LiveSession, afterSeq: number, sink: StreamSink, settings: LiveFollowSettings = LIVE_FOLLOW_DEFAULTS): Promise<void> {
  const stop = new AbortController();
  const end = () => stop.abort();
  sink.signal.addEventListener('abort', end, { once: true });
  const deadline = setTimeout(end, Math.max(1, Math.min(settings.maxMs, s.expiresAt - Date.now())));
  let lastWrite = Date.now();
  const keepalive = setInterval(() => {
    if (Date.now() - lastWrite < settings.keepaliveMs) return;
    lastWrite = Date.now();
    void sink.write(': keep-alive\n\n');
  }, Math.max(100, Math.floor(settings.keepaliveMs / 2)));
  try {
    // The answer starts at once (a comment the page ignores): a page opened before its session runs would otherwise
    // see no status line until the first message or keep-alive, and a proxy may give up on a first byte that late.
    await sink.write(': open\n\n');
    await followSession(
      deps,
      s.tenantId,
      s.threadId,
      s.listId,
      afterSeq,
      async (m) => {
        lastWrite = Date.now();
        await sink.write(liveFrame(m));
      },
      stop.signal,
    );
  } finally {
    clearTimeout(deadline);
    clearInterval(keepalive);
    sink.signal.removeEventListener('abort', end);
  }
}
