import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { HttpPlatformAdmin, PlatformError, replayedKeyId } from './admin-client';

/** A loopback admin API that answers every call with the next canned response. */
function fakePlatform(): { server: Server; next: (status: number, body: string) => void; base: () => string; paths: string[] } {
  const queue: Array<{ status: number; body: string }> = [];
  const paths: string[] = [];
  const server = createServer((req, res) => {
    paths.push(`${req.method} ${req.url}`);
    req.resume();
    req.on('end', () => {
      const r = queue.shift() ?? { status: 500, body: '{}' };
      res.writeHead(r.status, { 'content-type': 'application/json' });
      res.end(r.body);
    });
  });
  return {
    server,
    paths,
    next: (status, body) => void queue.push({ status, body }),
    base: () => `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
  };
}

describe('HttpPlatformAdmin parses answers with the admin API contract', () => {
  const platform = fakePlatform();
  let admin: HttpPlatformAdmin;
  beforeAll(async () => {
    await new Promise<void>((resolve) => platform.server.listen(0, '127.0.0.1', resolve));
    admin = new HttpPlatformAdmin({ baseUrl: platform.base(), token: 't' });
  });
  afterAll(() => new Promise<void>((resolve) => platform.server.close(() => resolve())));

  it('returns a created key that matches the contract, without fields the contract does not know', async () => {
    platform.next(201, JSON.stringify({ key_id: 'key_1', key: 'mk_abc', prefix: 'mk_ab', type: 'memory', memory_id: 'm1', expires_at: null, extra: 1 }));
    const created = await admin.createKey('t1', { type: 'memory', name: 'k8s ns/m', memory_id: 'm1', client_token: 'iss1-x' });
    expect(created).toEqual({ key_id: 'key_1', key: 'mk_abc', prefix: 'mk_ab', type: 'memory', memory_id: 'm1', expires_at: null });
  });

  it('turns a 2xx answer of the wrong shape into a PlatformError MALFORMED_ANSWER that names the fields', async () => {
    platform.next(201, JSON.stringify({ key_id: 'key_1', prefix: 'mk_ab', type: 'root' }));
    const err = await admin.createKey('t1', { type: 'memory', name: 'n', memory_id: 'm1' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PlatformError);
    expect(err).toMatchObject({ operation: 'create_key', status: 201, code: 'MALFORMED_ANSWER' });
    expect((err as Error).message).toMatch(/key:.*type:/s);
  });

  it('turns a 2xx answer that is not JSON into a PlatformError, not a SyntaxError', async () => {
    platform.next(200, '<html>proxy</html>');
    await expect(admin.putMemory('t1', 'm1', { name: 'M', hostname: 'm.example.test' })).rejects.toMatchObject({ code: 'MALFORMED_ANSWER', status: 200 });
  });

  it('reads a refusal with its details, so a replayed client token yields the key it made', async () => {
    platform.next(409, JSON.stringify({ error: { code: 'CONFLICT', message: 'client_token was already used', request_id: 'r', details: { key_id: 'key_9' } } }));
    const err = await admin.rotateKey('t1', 'key_1', 60, 'iss1-y').catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 409, code: 'CONFLICT' });
    expect(replayedKeyId(err)).toBe('key_9');
  });

  it('answers undefined for a key the platform does not know, and parses a known one', async () => {
    platform.next(404, JSON.stringify({ error: { code: 'NOT_FOUND', message: 'key not found', request_id: 'r' } }));
    expect(await admin.getKey('t1', 'key_gone')).toBeUndefined();
    platform.next(200, JSON.stringify({ api_keys: [{ key_id: 'key_2' }] }));
    await expect(admin.findKeyByClientToken('t1', 'iss1-z')).rejects.toMatchObject({ operation: 'find_key', code: 'MALFORMED_ANSWER' });
  });
});

describe('PlatformError', () => {
  it('says which fields the admin API refused, so a condition message tells what to change', () => {
    const err = new PlatformError('put_memory', 400, 'VALIDATION_FAILED', 'request body is invalid', [{ path: 'name', message: 'String must contain at most 200 character(s)' }]);
    expect(err.message).toBe('platform put_memory: 400 VALIDATION_FAILED: request body is invalid (name: String must contain at most 200 character(s))');
    expect(new PlatformError('get_key', 404, 'NOT_FOUND', 'key not found').message).toBe('platform get_key: 404 NOT_FOUND: key not found');
  });
});
