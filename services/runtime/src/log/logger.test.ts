import { Writable } from 'node:stream';
import { context, INVALID_SPAN_CONTEXT, trace } from '@opentelemetry/api';
import { startTelemetry } from '../telemetry/setup';
import pino from 'pino';
import { componentLogger, createLogger, isoTimestamp, redactSecrets, REDACTED, writeAccessLine, type AccessFields } from './logger';

function capture() {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { lines, logger: createLogger({ level: 'debug', service: 'test', destination }) };
}

const flush = () => new Promise((r) => setImmediate(r));

describe('logger redaction', () => {
  it('censors authorization, api key, identity and cookie headers', async () => {
    const { lines, logger } = capture();
    logger.info(
      {
        req: { headers: { authorization: 'Bearer ck_live_abc', 'x-api-key': 'ck_live_def', cookie: 'sid=1', 'x-lore-identity': 'jwt', accept: '*/*' } },
        res: { headers: { 'set-cookie': 'sid=2' } },
        headers: { authorization: 'Bearer x', cookie: 'c', 'x-api-key': 'k', 'x-lore-identity': 'i', host: 'h' },
      },
      'request',
    );
    await flush();
    const line = JSON.stringify(lines[0]);
    for (const secret of ['ck_live_abc', 'ck_live_def', 'sid=1', 'sid=2', '"jwt"', 'Bearer x']) expect(line).not.toContain(secret);
    const req = lines[0]!.req as { headers: Record<string, string> };
    expect(req.headers.authorization).toBe(REDACTED);
    expect(req.headers.accept).toBe('*/*');
    expect((lines[0]!.headers as Record<string, string>).host).toBe('h');
  });

  it("censors a failed statement's values on a logged error, keeping its message, code and statement", async () => {
    const { lines, logger } = capture();
    // As the embedded database's errors come: the statement and its values on the error.
    const err = Object.assign(new Error('index row requires 9072 bytes'), { code: '54000', query: 'INSERT INTO graph.kg_nodes …', params: ['tenant', 'Ada Brook, 12 Quay Street'] });
    logger.warn({ err }, 'event handler failed; retrying');
    logger.warn({ error: err }, 'failed');
    await flush();
    expect(lines[0]!.err).toMatchObject({ message: 'index row requires 9072 bytes', code: '54000', query: 'INSERT INTO graph.kg_nodes …', params: REDACTED });
    expect(lines[1]!.error).toMatchObject({ code: '54000', params: REDACTED });
    for (const line of lines) expect(JSON.stringify(line)).not.toContain('Quay Street');
    expect(err.params).toEqual(['tenant', 'Ada Brook, 12 Quay Street']);
  });

  it('censors secret-named fields at the top level and one level down, keeping the rest', async () => {
    const { lines, logger } = capture();
    logger.warn({ token: 't0p', password: 'pw', apiKey: 'ak', key: 'ck_live_top', key_id: 'kid_1', subscription: { signing_secret: 'whsec_x', key: 'k', id: 's1' } }, 'x');
    await flush();
    const line = lines[0]!;
    expect(line.key).toBe(REDACTED);
    expect(line.token).toBe(REDACTED);
    expect(line.password).toBe(REDACTED);
    expect(line.apiKey).toBe(REDACTED);
    expect(line.key_id).toBe('kid_1');
    expect(line.subscription).toEqual({ signing_secret: REDACTED, key: REDACTED, id: 's1' });
    expect(JSON.stringify(line)).not.toMatch(/t0p|whsec_x|"pw"|ck_live_top/);
  });

  it("censors secret-named bindings of a child logger and of its children", async () => {
    const { lines, logger } = capture();
    logger.child({ token: 'sk-live-abc', tenant_id: 't1' }).child({ password: 'hunter2' }).warn('bound');
    await flush();
    expect(lines[0]).toMatchObject({ token: REDACTED, password: REDACTED, tenant_id: 't1', msg: 'bound' });
  });

  it('never mutates the object the caller logged', () => {
    const nested = { secret: 's', name: 'n' };
    const obj = { token: 'tok', nested };
    const out = redactSecrets(obj);
    expect(out).not.toBe(obj);
    expect(obj.token).toBe('tok');
    expect(nested.secret).toBe('s');
    expect(out).toEqual({ token: REDACTED, nested: { secret: REDACTED, name: 'n' } });
  });

  it('returns the same object when nothing is secret (no copy on the hot path)', () => {
    const obj = { method: 'GET', path: '/x', status: 200, labels: { a: 1 } };
    expect(redactSecrets(obj)).toBe(obj);
  });

  it('writes level as a word, the service, and the message', async () => {
    const { lines, logger } = capture();
    logger.child({ request_id: 'r1' }).error('boom');
    await flush();
    expect(lines[0]).toMatchObject({ level: 'error', service: 'test', request_id: 'r1', msg: 'boom' });
  });

  it('adds the active trace to lines inside it only, never changing the logged object', async () => {
    startTelemetry({}); // propagation only: an async context manager, no exporter
    const { lines, logger } = capture();
    const traced = trace.setSpanContext(context.active(), { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7', traceFlags: 1 });
    const obj = { op: 'x' };
    context.with(traced, () => {
      logger.info(obj, 'inside');
      logger.info({ span_id: 'mine' }, 'own field wins');
    });
    logger.info(obj, 'outside');
    // A placeholder span with the all-zero ids (work no trace started) names no trace either.
    context.with(trace.setSpanContext(context.active(), INVALID_SPAN_CONTEXT), () => logger.info('untraced'));
    await flush();
    expect(lines[3]).toMatchObject({ msg: 'untraced' });
    expect(lines[3]).not.toHaveProperty('trace_id');
    expect(lines[0]).toMatchObject({ op: 'x', msg: 'inside', trace_id: '4bf92f3577b34da6a3ce929d0e0e4736', span_id: '00f067aa0ba902b7' });
    expect(lines[1]).toMatchObject({ msg: 'own field wins', trace_id: '4bf92f3577b34da6a3ce929d0e0e4736', span_id: 'mine' });
    expect(lines[2]).toMatchObject({ op: 'x', msg: 'outside' });
    expect(lines[2]).not.toHaveProperty('trace_id');
    expect(lines[2]).not.toHaveProperty('span_id');
    expect(obj).toEqual({ op: 'x' });
  });

  it('stamps ISO-8601 UTC times with milliseconds, matching Date#toISOString', () => {
    const spy = jest.spyOn(Date, 'now');
    try {
      for (const t of [Date.UTC(2026, 10, 22, 7, 5, 9, 4), Date.UTC(2026, 10, 22, 7, 5, 9, 87), Date.UTC(2026, 10, 22, 7, 5, 10, 999), Date.UTC(2027, 0, 1, 0, 0, 0, 0)]) {
        spy.mockReturnValue(t);
        expect(isoTimestamp()).toBe(`,"time":"${new Date(t).toISOString()}"`);
      }
    } finally {
      spy.mockRestore();
    }
  });
});

describe('access line', () => {
  /** Every chunk written, as written (the raw line, not parsed). */
  function raw(level = 'debug') {
    const chunks: string[] = [];
    const destination = new Writable({
      write(chunk: Buffer, _enc, done) {
        chunks.push(chunk.toString('utf8'));
        done();
      },
    });
    return { chunks, logger: createLogger({ level, service: 'test', destination }) };
  }

  const fields: AccessFields = { request_id: 'req-12345678', method: 'GET', path: '/api/v1/pages/ping', route: '/api/v1/pages/:id', status: 200, duration_ms: 1.4 };

  /** The same request logged both ways at one frozen instant: the fast line must be byte for byte pino's. */
  async function bothWays(make: (logger: pino.Logger) => pino.Logger, f: AccessFields) {
    const spy = jest.spyOn(Date, 'now').mockReturnValue(Date.UTC(2026, 10, 24, 21, 30, 5, 42));
    try {
      const { chunks, logger } = raw();
      const target = make(logger);
      target.info({ ...f }, 'request');
      writeAccessLine(target, f);
      await flush();
      return chunks;
    } finally {
      spy.mockRestore();
    }
  }

  it("is byte for byte the line logger.info(fields, 'request') writes", async () => {
    const [slow, fast] = await bothWays((l) => l, fields);
    expect(fast).toBe(slow);
    expect(JSON.parse(fast!)).toEqual({ level: 'info', time: '2026-11-24T21:30:05.042Z', service: 'test', ...fields, msg: 'request' });
  });

  it("carries a child's bindings (its request id, a handler's fields, redacted as pino redacts them)", async () => {
    const { request_id: _id, ...rest } = fields;
    const [slow, fast] = await bothWays((l) => l.child({ request_id: 'req-child-1' }).child({ tenant_id: 't1', token: 'sk-secret' }), rest);
    expect(fast).toBe(slow);
    const line = JSON.parse(fast!) as Record<string, unknown>;
    expect(line).toMatchObject({ request_id: 'req-child-1', tenant_id: 't1', route: rest.route });
    expect(fast).not.toContain('sk-secret');
  });

  it('escapes paths as JSON and writes a non-finite number as null, as pino does', async () => {
    const odd = { ...fields, path: '/a"b\\c/\u00e9\u2028\u0001', duration_ms: Number.NaN };
    const [slow, fast] = await bothWays((l) => l, odd);
    expect(fast).toBe(slow);
    expect((JSON.parse(fast!) as { path: string }).path).toBe(odd.path);
  });

  it('escapes every string field, also the ones whose JSON it keeps between lines (methods, routes)', async () => {
    for (const odd of [
      { ...fields, request_id: 'id"with\\quote', route: '/r/"odd"\u0007/:id', method: 'M\u00e9THOD' },
      { ...fields, route: '/r/"odd"\u0007/:id', path: '\u{1F600}/x' },
    ]) {
      const [slow, fast] = await bothWays((l) => l, odd);
      expect(fast).toBe(slow);
      expect(JSON.parse(fast!)).toMatchObject({ request_id: odd.request_id, route: odd.route, method: odd.method, path: odd.path });
    }
  });

  it('adds the active trace like every other line', async () => {
    startTelemetry({});
    const traced = trace.setSpanContext(context.active(), { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7', traceFlags: 1 });
    const [slow, fast] = await context.with(traced, () => bothWays((l) => l, fields));
    expect(fast).toBe(slow);
    expect(JSON.parse(fast!)).toMatchObject({ trace_id: '4bf92f3577b34da6a3ce929d0e0e4736', span_id: '00f067aa0ba902b7' });
  });

  it('writes nothing when info is not enabled', async () => {
    const { chunks, logger } = raw('warn');
    writeAccessLine(logger, fields);
    await flush();
    expect(chunks).toEqual([]);
  });

  it('goes through logger.info for a logger it cannot reproduce (hooks, message prefix)', async () => {
    const seen: unknown[] = [];
    const chunks: string[] = [];
    const destination = new Writable({ write: (c: Buffer, _e, done) => (chunks.push(c.toString('utf8')), done()) });
    const hooked = pino({ hooks: { logMethod(args, method) { seen.push(args[0]); method.apply(this, args); } } }, destination);
    writeAccessLine(hooked, fields);
    const prefixed = pino({}, destination).child({}, { msgPrefix: '[api] ' });
    writeAccessLine(prefixed, fields);
    await flush();
    expect(seen).toEqual([fields]);
    expect(chunks.map((c) => (JSON.parse(c) as { msg: string }).msg)).toEqual(['request', '[api] request']);
  });
});

describe('bindings of a process that hosts several services', () => {
  function raw(service?: string) {
    const lines: string[] = [];
    const destination = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
        done();
      },
    });
    return { lines, logger: createLogger({ level: 'info', ...(service ? { service } : {}), destination }) };
  }
  const count = (line: string, key: string) => line.split(`"${key}":`).length - 1;

  it('prints each key once: a service bound under a root without one, a part under a component', async () => {
    const { lines, logger } = raw();
    const graph = logger.child({ service: 'graph' });
    const relay = componentLogger(componentLogger(graph, 'graph'), 'outbox-relay');
    relay.info('one');
    componentLogger(relay, 'deeper').info('two');
    await flush();
    expect(lines.map((l) => JSON.parse(l) as Record<string, unknown>)).toEqual([
      expect.objectContaining({ service: 'graph', component: 'graph', part: 'outbox-relay', msg: 'one' }),
      expect.objectContaining({ service: 'graph', component: 'graph', part: 'outbox-relay', msg: 'two' }),
    ]);
    for (const line of lines) for (const key of ['service', 'component', 'part']) expect(count(line, key)).toBe(1);
  });

  it('binds a first component as `component`, and a root with a service keeps it', async () => {
    const { lines, logger } = raw('gateway');
    componentLogger(logger, 'webhooks-worker').info('three');
    await flush();
    expect(JSON.parse(lines[0]!)).toMatchObject({ service: 'gateway', component: 'webhooks-worker' });
    expect(count(lines[0]!, 'part')).toBe(0);
  });
});
