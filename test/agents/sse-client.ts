import { request, type ClientRequest } from 'node:http';
import type { AgentsStack } from './harness';

export interface Frame {
  id: string;
  data: Record<string, any>;
}

export interface StreamRead {
  status: number;
  contentType: string;
  frames: Frame[];
  /** Comment lines (`: keepalive`) seen. */
  comments: number;
  /** The server ended the answer (rather than the client leaving). */
  ended: boolean;
  body: string;
}

/**
 * A server-sent-events client on a raw HTTP request through the gateway: reads frames as they come, and leaves (closes
 * the connection) once `leaveWhen` says so, or reads to the end of the answer.
 */
export function readStream(
  s: AgentsStack,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: unknown,
  leaveWhen: (frames: Frame[], comments: number) => boolean = () => false,
  timeoutMs = 60_000,
): Promise<StreamRead> {
  const u = new URL(s.gateway.publicUrl);
  const payload = body === undefined ? undefined : JSON.stringify(body);
  const h: Record<string, string> = { accept: 'text/event-stream', ...headers };
  if (payload !== undefined) {
    h['content-type'] = 'application/json';
    h['content-length'] = String(Buffer.byteLength(payload));
  }
  return new Promise((resolve, reject) => {
    let req: ClientRequest | null = null;
    const out: StreamRead = { status: 0, contentType: '', frames: [], comments: 0, ended: false, body: '' };
    let buffer = '';
    let done = false;
    const finish = (ended: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      out.ended = ended;
      if (!ended) req?.destroy();
      resolve(out);
    };
    const timer = setTimeout(() => {
      done = true;
      req?.destroy();
      reject(new Error(`stream ${path} did not end in ${timeoutMs} ms (status ${out.status}, ${out.frames.length} frames, ${out.comments} comments, body ${JSON.stringify(out.body.slice(0, 300))})`));
    }, timeoutMs);
    req = request({ host: u.hostname, port: u.port, method, path, headers: h }, (res) => {
      out.status = res.statusCode ?? 0;
      out.contentType = String(res.headers['content-type'] ?? '');
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        if (done) return;
        out.body += chunk;
        if (!out.contentType.startsWith('text/event-stream')) return;
        buffer += chunk;
        for (let i = buffer.indexOf('\n\n'); i >= 0; i = buffer.indexOf('\n\n')) {
          const block = buffer.slice(0, i);
          buffer = buffer.slice(i + 2);
          const lines = block.split('\n');
          if (lines.every((l) => l.startsWith(':'))) {
            out.comments++;
          } else {
            const id = lines.find((l) => l.startsWith('id: '))?.slice(4) ?? '';
            const data = lines.filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n');
            out.frames.push({ id, data: JSON.parse(data) as Record<string, any> });
          }
          if (leaveWhen(out.frames, out.comments)) return finish(false);
        }
      });
      res.on('end', () => finish(true));
      res.on('error', () => finish(false));
    });
    req.on('error', (err) => {
      if (!done) {
        done = true;
        clearTimeout(timer);
        reject(err);
      }
    });
    req.end(payload);
  });
}
