import { Agent, request, type IncomingHttpHeaders } from 'node:http';

export interface HttpResult {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  json: any;
}

const agent = new Agent({ keepAlive: true, maxSockets: 256 });

/** Closes the kept-alive connections (a suite's teardown; later calls open new ones). */
export function closeIdleHttpConnections(): void {
  agent.destroy();
}

/** A plain HTTP client: unlike fetch it lets a test set Host and read every header. */
export function http(
  baseUrl: string,
  method: string,
  path: string,
  opts: { headers?: Record<string, string>; body?: unknown; raw?: string | Buffer } = {},
): Promise<HttpResult> {
  const u = new URL(baseUrl);
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  let payload: string | Buffer | undefined;
  if (opts.raw !== undefined) payload = opts.raw;
  else if (opts.body !== undefined) {
    payload = JSON.stringify(opts.body);
    headers['content-type'] ??= 'application/json';
  }
  if (payload !== undefined) headers['content-length'] = String(Buffer.byteLength(payload));
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, method, path, headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json: unknown = undefined;
        try {
          json = text ? JSON.parse(text) : undefined;
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    if (payload !== undefined) req.write(payload);
    req.end();
  });
}

