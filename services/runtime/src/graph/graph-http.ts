import { request } from 'node:http';
import { IDENTITY_HEADER } from '../identity/internal-identity';

/** A call to the graph service that failed (unreachable, too slow, too large an answer). */
export class GraphCallError extends Error {}

export interface GraphHttpOptions {
  /** `http://host:port` or `unix:/path/to.sock`. */
  url: string;
  timeoutMs: number;
  /** Largest answer read (bytes). */
  maxBytes?: number;
}

/**
 * POSTs a JSON body to the graph service with a signed identity (the gateway's for a caller; the indexer's own for
 * the pair it writes; the agents worker's for a workflow's starter), answering the status and the body's text. Graph is an internal service: a cluster's graph
 * Service, or the embedded process's unix socket.
 */
export function graphPost(options: GraphHttpOptions, path: string, body: string, identityToken: string, signal?: AbortSignal): Promise<{ status: number; text: string }> {
  const url = options.url;
  const target = url.startsWith('unix:')
    ? { socketPath: url.slice('unix:'.length) }
    : (() => {
        const u = new URL(url);
        return { host: u.hostname, port: u.port || 80 };
      })();
  const maxBytes = options.maxBytes ?? 8 * 1024 * 1024;
  return new Promise((resolve, reject) => {
    const req = request(
      {
        ...target,
        method: 'POST',
        path,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), [IDENTITY_HEADER]: identityToken },
        timeout: options.timeoutMs,
        signal,
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size > maxBytes) {
            req.destroy(new GraphCallError('the graph service answer is larger than the limit'));
            return;
          }
          chunks.push(c);
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new GraphCallError('the graph service did not answer in time')));
    req.on('error', (err) => reject(err instanceof GraphCallError ? err : new GraphCallError(`the graph service cannot be reached: ${err.message}`)));
    req.end(body);
  });
}
