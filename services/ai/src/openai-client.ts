import type { Logger } from '@lore/runtime';

export interface OpenAiClientOptions {
  /** e.g. `https://api.openai.com/v1`, `http://vllm:8000/v1`, `http://ollama:11434/v1`. */
  baseUrl: string;
  apiKey?: string;
  /** Per attempt, covering connect and the complete response (for streams: until the first byte). */
  timeoutMs: number;
  /** Extra attempts after the first for network errors, 408, 409, 429 and 5xx. */
  retries: number;
  logger?: Logger;
  /** Base of the exponential backoff between attempts. */
  backoffMs?: number;
  /**
   * The most bytes a model's answer may have, whole or streamed in all (default MAX_MODEL_RESPONSE_BYTES); a longer
   * one is refused as an `AiProviderError` once that many bytes are read.
   */
  maxResponseBytes?: number;
}

/**
 * The most bytes a model's answer may have (4 MiB), whole or as a stream in all. Far above anything `max_tokens` lets
 * a model write (a 16,000-token answer is about 64 KB of text, a few times that as JSON with escapes), and small
 * enough that a server sending an endless or enormous body cannot fill the process's memory.
 */
export const MAX_MODEL_RESPONSE_BYTES = 4 * 1024 * 1024;

export class AiProviderError extends Error {
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
    this.name = 'AiProviderError';
  }
}

const RETRYABLE = new Set([408, 409, 425, 429, 500, 502, 503, 504]);
const MAX_ERROR_BODY = 2_000;

/**
 * A minimal client for the OpenAI wire format, shared by the language model and the embedder. Retries with
 * exponential backoff and jitter (honouring `Retry-After`), never logs request bodies (they hold user content)
 * nor the key.
 */
export class OpenAiClient {
  private readonly base: string;

  constructor(private readonly options: OpenAiClientOptions) {
    this.base = options.baseUrl.replace(/\/+$/, '');
  }

  /** The most bytes an answer may have (`maxResponseBytes`). */
  get maxResponseBytes(): number {
    return this.options.maxResponseBytes ?? MAX_MODEL_RESPONSE_BYTES;
  }

  /**
   * POSTs JSON and returns the response once its status is 2xx; the caller reads the body (with `readCapped` or
   * `sseData`'s total limit). `onAttempt` is called before every HTTP attempt, the first and each retry, so a caller
   * can charge each; a throw from it ends the request there, before that attempt is sent.
   */
  async post(path: string, body: unknown, signal?: AbortSignal, onAttempt?: () => void): Promise<Response> {
    const attempts = this.options.retries + 1;
    let lastError: unknown;
    for (let attempt = 1; attempt <= attempts; attempt += 1) {
      onAttempt?.();
      const timeout = AbortSignal.timeout(this.options.timeoutMs);
      const combined = signal ? AbortSignal.any([signal, timeout]) : timeout;
      let retryAfterMs: number | undefined;
      try {
        const res = await fetch(`${this.base}${path}`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
            ...(this.options.apiKey ? { authorization: `Bearer ${this.options.apiKey}` } : {}),
          },
          body: JSON.stringify(body),
          signal: combined,
        });
        if (res.ok) return res;
        const text = (await res.text().catch(() => '')).slice(0, MAX_ERROR_BODY);
        lastError = new AiProviderError(`AI provider answered ${res.status} on ${path}: ${providerMessage(text)}`, res.status);
        if (!RETRYABLE.has(res.status)) throw lastError;
        const ra = Number(res.headers.get('retry-after'));
        if (Number.isFinite(ra) && ra > 0) retryAfterMs = Math.min(ra * 1000, 30_000);
      } catch (err) {
        if (signal?.aborted) throw err;
        if (err instanceof AiProviderError && err.status !== undefined && !RETRYABLE.has(err.status)) throw err;
        lastError = err instanceof AiProviderError ? err : new AiProviderError(`AI provider unreachable on ${path}: ${(err as Error).message}`);
      }
      if (attempt < attempts) {
        const base = this.options.backoffMs ?? 250;
        const delay = retryAfterMs ?? Math.min(10_000, base * 2 ** (attempt - 1)) * (0.5 + Math.random() / 2);
        this.options.logger?.warn({ path, attempt, delay_ms: Math.round(delay) }, 'AI provider call failed; retrying');
        await sleep(delay, signal);
      }
    }
    throw lastError instanceof Error ? lastError : new AiProviderError(`AI provider failed on ${path}`);
  }
}

/** Pulls the provider's `error.message` out of an error body, without echoing anything else. */
function providerMessage(text: string): string {
  try {
    const parsed = JSON.parse(text) as { error?: { message?: unknown } | string };
    if (typeof parsed.error === 'string') return parsed.error.slice(0, 300);
    if (parsed.error && typeof parsed.error.message === 'string') return parsed.error.message.slice(0, 300);
  } catch {
    // not JSON: fall through
  }
  return text.slice(0, 300);
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });
}

/**
 * A response body read as text, at most `limit` bytes: a longer one (by its `content-length`, or once that many bytes
 * have arrived) is cancelled and refused as an `AiProviderError`, so an answer never costs more memory than the limit.
 */
export async function readCapped(res: Response, limit: number): Promise<string> {
  const tooLong = () => new AiProviderError(`AI provider answered more than ${limitText(limit)}; the answer is refused`);
  const declared = Number(res.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > limit) {
    await res.body?.cancel().catch(() => undefined);
    throw tooLong();
  }
  if (!res.body) return '';
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      total += value.byteLength;
      if (total > limit) {
        await reader.cancel().catch(() => undefined);
        throw tooLong();
      }
      chunks.push(value);
    }
  } finally {
    reader.releaseLock();
  }
  return Buffer.concat(chunks, total).toString('utf8');
}

const limitText = (bytes: number): string => (bytes % (1024 * 1024) === 0 ? `${bytes / (1024 * 1024)} MiB` : `${bytes} bytes`);

/**
 * Server-sent events from a fetch body: yields each `data:` payload (joined across lines), stops at `[DONE]`. An event
 * over `maxEventBytes`, or a stream over `maxTotalBytes` in all, is refused as an `AiProviderError` (the body is
 * cancelled).
 */
export async function* sseData(body: ReadableStream<Uint8Array>, maxEventBytes = 1_000_000, maxTotalBytes = MAX_MODEL_RESPONSE_BYTES): AsyncIterable<string> {
  const decoder = new TextDecoder();
  let buffer = '';
  let data: string[] = [];
  let total = 0;
  const reader = body.getReader();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      total += value.byteLength;
      if (total > maxTotalBytes) throw new AiProviderError(`AI provider streamed more than ${limitText(maxTotalBytes)}; the answer is refused`);
      buffer += decoder.decode(value, { stream: true });
      if (buffer.length > maxEventBytes) throw new AiProviderError('AI provider sent an oversized stream event');
      let nl: number;
      while ((nl = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, nl).replace(/\r$/, '');
        buffer = buffer.slice(nl + 1);
        if (line === '') {
          if (data.length > 0) {
            const payload = data.join('\n');
            data = [];
            if (payload.trim() === '[DONE]') return;
            yield payload;
          }
          continue;
        }
        if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
      }
    }
    if (data.length > 0 && data.join('\n').trim() !== '[DONE]') yield data.join('\n');
  } finally {
    reader.releaseLock();
    await body.cancel().catch(() => undefined);
  }
}
