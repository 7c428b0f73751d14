import { CLIENT_ADDRESS_HEADER } from '@lore/runtime';
import type { UpstreamResult } from './define';

/**
 * Calls the Lore API back with the caller's own key as `Authorization: Bearer <key>` (spec 3, "Authentication" 3).
 * The gateway decides everything (scope, tenant, limits); no other credential ever leaves the MCP server. An answer is
 * mapped to `{success:true, data}` (2xx) or `{success:false, error}` (anything else): the error names the status and
 * the upstream's own message, never a stack trace or an internal address.
 */
export interface UpstreamTargets {
  /** Company search, people search, research, enterprise search (spec 3: AGENT_CORE_URL). */
  agentCore: string;
  /** Graph and memory calls (spec 3: MEMORY_URL). */
  memory: string;
}

export type Target = keyof UpstreamTargets;

export interface UpstreamRequest {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  /** Multipart uploads and other bodies that are not JSON. */
  form?: FormData;
  /** How the key travels: `bearer` (the default, spec 3) or `x-api-key` (spec 1's memory routes take only that header). */
  keyHeader?: 'bearer' | 'x-api-key';
}

export interface UpstreamOptions {
  timeoutMs: number;
  /** The most bytes of an upstream answer read (a larger one is an error, never buffered whole). */
  maxAnswerBytes: number;
  /**
   * The place the session was opened in, when its request named one (`/mcp?memory_id=…` or `?workspace_id=…`): every
   * call back names it too, so a key that must name its memory (one scoped to some memories) can use the tools.
   */
  place?: { memory_id?: string; workspace_id?: string };
  /**
   * The tool call's cancellation (the client's `notifications/cancelled`, or its connection gone): it aborts the
   * request to the API too, so a cancelled call stops spending there (a chat answer, a research run).
   */
  signal?: AbortSignal;
  /**
   * Signs the address of the client whose `/mcp` request runs the tool, for `CLIENT_ADDRESS_HEADER`: the gateway
   * checks a key's IP allowlist against it rather than against this server's own address (docs/mcp.md).
   */
  clientAddress?: () => Promise<string>;
}

export class Upstream {
  constructor(
    private readonly targets: UpstreamTargets,
    private readonly apiKey: string,
    private readonly options: UpstreamOptions,
  ) {}

  get(target: Target, path: string, query?: UpstreamRequest['query']): Promise<UpstreamResult> {
    return this.call(target, { method: 'GET', path, query });
  }

  post(target: Target, path: string, body?: unknown): Promise<UpstreamResult> {
    return this.call(target, { method: 'POST', path, body: body ?? {} });
  }

  delete(target: Target, path: string): Promise<UpstreamResult> {
    return this.call(target, { method: 'DELETE', path });
  }

  async call(target: Target, req: UpstreamRequest): Promise<UpstreamResult> {
    const url = new URL(req.path.replace(/^\/+/, ''), this.targets[target].replace(/\/*$/, '/'));
    for (const [k, v] of Object.entries({ ...req.query, ...this.options.place })) if (v !== undefined) url.searchParams.set(k, String(v));
    const headers: Record<string, string> = req.keyHeader === 'x-api-key' ? { 'x-api-key': this.apiKey, accept: 'application/json' } : { authorization: `Bearer ${this.apiKey}`, accept: 'application/json' };
    if (this.options.clientAddress) headers[CLIENT_ADDRESS_HEADER] = await this.options.clientAddress();
    let body: string | FormData | undefined;
    if (req.form) body = req.form;
    else if (req.body !== undefined && req.method !== 'GET' && req.method !== 'DELETE') {
      body = JSON.stringify(req.body);
      headers['content-type'] = 'application/json';
    }
    const timeout = AbortSignal.timeout(this.options.timeoutMs);
    const cancelled = this.options.signal;
    if (cancelled?.aborted) return CANCELLED;
    let res: Response;
    try {
      res = await fetch(url, { method: req.method, headers, body, redirect: 'manual', signal: cancelled ? AbortSignal.any([timeout, cancelled]) : timeout });
    } catch (err) {
      if (cancelled?.aborted) return CANCELLED;
      const timedOut = timeout.aborted || (err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError'));
      return { success: false, error: timedOut ? `upstream did not answer within ${this.options.timeoutMs} ms` : 'upstream unreachable' };
    }
    let text: string;
    try {
      text = await readCapped(res, this.options.maxAnswerBytes);
    } catch {
      if (cancelled?.aborted) return CANCELLED;
      if (timeout.aborted) return { success: false, error: `upstream did not answer within ${this.options.timeoutMs} ms` };
      return { success: false, error: `upstream answer larger than ${this.options.maxAnswerBytes} bytes` };
    }
    const parsed = parseJson(text);
    if (res.status >= 200 && res.status < 300) {
      return { success: true, data: parsed.ok ? parsed.value : text };
    }
    return { success: false, error: `HTTP ${res.status}: ${errorMessage(parsed.ok ? parsed.value : undefined, res.statusText)}` };
  }
}

/** What a cancelled call answers: the SDK sends a cancelled request's client nothing, so this is for the log. */
const CANCELLED: UpstreamResult = { success: false, error: 'the tool call was cancelled' };

async function readCapped(res: Response, max: number): Promise<string> {
  if (!res.body) return '';
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel();
      throw new Error('too large');
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function parseJson(text: string): { ok: true; value: unknown } | { ok: false } {
  if (text === '') return { ok: true, value: null };
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false };
  }
}

/**
 * The upstream's own words for a failure, from any of Lore's error shapes: the envelope `message` (spec 3 body (a)
 * and (b), with its field errors), `detail` (string or spec 3 body (c)), `error` (string or `{code, message}`).
 */
export function errorMessage(body: unknown, fallback: string): string {
  if (body && typeof body === 'object') {
    const b = body as Record<string, unknown>;
    const fields = Array.isArray(b.errors)
      ? b.errors.map((e) => (e && typeof e === 'object' ? `${String((e as Record<string, unknown>).field ?? '')}: ${String((e as Record<string, unknown>).message ?? '')}` : '')).filter(Boolean)
      : [];
    if (typeof b.message === 'string') return fields.length ? `${b.message} (${fields.join('; ')})` : b.message;
    if (typeof b.detail === 'string') return b.detail;
    if (Array.isArray(b.detail)) {
      return b.detail
        .map((d) => (d && typeof d === 'object' ? `${(Array.isArray((d as Record<string, unknown>).loc) ? ((d as Record<string, unknown>).loc as unknown[]).join('.') : '')}: ${String((d as Record<string, unknown>).msg ?? '')}` : String(d)))
        .join('; ');
    }
    if (typeof b.error === 'string') return b.error;
    if (b.error && typeof b.error === 'object' && typeof (b.error as Record<string, unknown>).message === 'string') return (b.error as Record<string, string>).message!;
  }
  return fallback || 'upstream error';
}
