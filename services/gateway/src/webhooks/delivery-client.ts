import { OutboundError, OutboundHttpClient, type TargetGuard } from '@lore/outbound';

export type AttemptOutcome = 'succeeded' | 'http_error' | 'redirect' | 'timeout' | 'network_error' | 'refused';

export interface AttemptResult {
  outcome: AttemptOutcome;
  statusCode: number | null;
  latencyMs: number;
  /** The start of the response body, at most `snippetBytes` bytes, as text. */
  responseSnippet: string | null;
  /** Why the attempt failed, safe to show to the subscriber. */
  error: string | null;
}

export interface SendInput {
  url: string;
  body: string;
  headers: Record<string, string>;
}

export interface WebhookHttpClientOptions {
  guard: TargetGuard;
  /** Whole-attempt deadline: resolution, connection, TLS, response headers and body. */
  timeoutMs: number;
  /** Bytes of the response body kept for the attempt record. */
  snippetBytes?: number;
  /** Bytes read before the rest of a large response is dropped with its connection. */
  maxResponseBytes?: number;
  /** Test-only: an extra certificate authority (PEM) trusted besides the public roots. */
  extraCaPem?: string;
  /** Sockets kept per receiver origin; also caps parallel connections to one origin. */
  maxSocketsPerOrigin?: number;
  userAgent?: string;
}

const ERROR_TEXT_MAX = 300;

/**
 * One delivery attempt over the shared guarded client (@lore/outbound), reported as the attempt record wants it.
 * Redirects are never followed (a 3xx is a failed attempt): following one gives a receiver a way to point the
 * worker elsewhere; a subscriber who moves its endpoint updates the subscription instead. A response larger than
 * `maxResponseBytes` still counts by its status: the rest is dropped with the connection.
 */
export class WebhookHttpClient {
  private readonly client: OutboundHttpClient;
  private readonly timeoutMs: number;
  private readonly snippetBytes: number;
  private readonly maxResponseBytes: number;

  constructor(options: WebhookHttpClientOptions) {
    this.timeoutMs = options.timeoutMs;
    this.snippetBytes = options.snippetBytes ?? 1024;
    this.maxResponseBytes = options.maxResponseBytes ?? 64 * 1024;
    this.client = new OutboundHttpClient({
      guard: options.guard,
      userAgent: options.userAgent ?? 'Lore-Webhooks/1',
      timeoutMs: options.timeoutMs,
      connectTimeoutMs: options.timeoutMs,
      maxSocketsPerOrigin: options.maxSocketsPerOrigin ?? 16,
      ...(options.extraCaPem ? { extraCaPem: options.extraCaPem } : {}),
    });
  }

  async send(input: SendInput): Promise<AttemptResult> {
    const started = performance.now();
    const elapsed = () => Math.max(0, Math.round(performance.now() - started));
    try {
      const res = await this.client.fetch({
        url: input.url,
        method: 'POST',
        headers: { ...input.headers, 'content-type': 'application/json' },
        body: input.body,
        redirect: 'manual',
        maxResponseBytes: this.maxResponseBytes,
        oversize: 'truncate',
        timeoutMs: this.timeoutMs,
      });
      const latencyMs = elapsed();
      const snippet = toSnippet(res.body, this.snippetBytes);
      // A response that completed after the deadline is not an acknowledgement, whatever its status.
      if (latencyMs > this.timeoutMs) return failure('timeout', res.status, latencyMs, snippet, `no complete response within ${this.timeoutMs} ms`);
      const status = res.status;
      if (status >= 200 && status < 300) return { outcome: 'succeeded', statusCode: status, latencyMs, responseSnippet: snippet, error: null };
      if (status >= 300 && status < 400) {
        return failure('redirect', status, latencyMs, snippet, 'redirects are not followed; update the subscription URL instead');
      }
      return failure('http_error', status, latencyMs, snippet, `receiver answered ${status}`);
    } catch (err) {
      if (!(err instanceof OutboundError)) throw err;
      const snippet = err.partial.body ? toSnippet(err.partial.body, this.snippetBytes) : null;
      return failure(outcomeOf(err), err.partial.status, elapsed(), snippet, err.message);
    }
  }

  close(): void {
    this.client.close();
  }
}

function outcomeOf(err: OutboundError): AttemptOutcome {
  switch (err.kind) {
    case 'refused':
    case 'invalid_request':
      return 'refused';
    case 'timeout':
    case 'aborted':
      return 'timeout';
    default:
      return 'network_error';
  }
}

function failure(outcome: AttemptOutcome, statusCode: number | null, latencyMs: number, snippet: string | null, error: string): AttemptResult {
  return { outcome, statusCode, latencyMs, responseSnippet: snippet, error: error.slice(0, ERROR_TEXT_MAX) };
}

/** Text of at most `maxBytes` bytes, without NUL (PostgreSQL text refuses it) and without a torn last character. */
function toSnippet(data: Buffer, maxBytes: number): string | null {
  if (data.length === 0) return null;
  const text = data.subarray(0, maxBytes).toString('utf8').replace(/\u0000/g, '');
  // A multi-byte character cut at the limit decodes to U+FFFD; drop it rather than store a broken character.
  const trimmed = data.length > maxBytes ? text.replace(/\uFFFD$/, '') : text;
  return trimmed.slice(0, maxBytes);
}
