import * as http from 'node:http';
import * as https from 'node:https';
import { KubeApiError } from './errors';
import { collectionPath, objectPath, type ResourceType } from './resources';
import type { KubeList, KubeObject, KubeStatus, WatchEvent } from './types';

/** How to reach and authenticate to the API server. Built from a kubeconfig by `kubeconfig.ts`, or by tests. */
export interface KubeConnection {
  /** `https://host:port` (or `http://` behind a local proxy). */
  server: string;
  ca?: string | Buffer;
  cert?: string | Buffer;
  key?: string | Buffer;
  rejectUnauthorized?: boolean;
  /** Headers for the next request (Authorization...). Called per request so rotated tokens are picked up. */
  headers(): Promise<Record<string, string>>;
}

export interface ListOptions {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  limit?: number;
  continue?: string;
}

export interface WatchOptions {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  resourceVersion: string;
  timeoutSeconds: number;
}

export interface JsonPatchOp {
  op: 'add' | 'remove' | 'replace' | 'test';
  path: string;
  value?: unknown;
}

export interface DeleteOptions {
  preconditions?: { uid?: string; resourceVersion?: string };
  propagationPolicy?: 'Background' | 'Foreground' | 'Orphan';
}

/** Per-request options: `signal` aborts the request (the caller's own deadline, shorter than the client's timeout). */
export interface RequestOptions {
  signal?: AbortSignal;
}

/** Called after every request with its verb and outcome (metrics, and counting writes in the benchmark). */
export type RequestObserver = (info: { verb: string; resource: string; status: number; seconds: number }) => void;

/**
 * The API-server operations the runtime and the controllers use. Everything is typed on `KubeObject`; callers
 * narrow to their kinds. Watch delivers decoded events until the server closes the stream or `signal` aborts.
 */
export interface KubeClient {
  get<T extends KubeObject>(rt: ResourceType, namespace: string | undefined, name: string, opts?: RequestOptions): Promise<T | undefined>;
  list<T extends KubeObject>(rt: ResourceType, opts?: ListOptions): Promise<KubeList<T>>;
  watch(rt: ResourceType, opts: WatchOptions, onEvent: (e: WatchEvent) => void, signal: AbortSignal): Promise<void>;
  create<T extends KubeObject>(rt: ResourceType, obj: T, opts?: RequestOptions): Promise<T>;
  replace<T extends KubeObject>(rt: ResourceType, obj: T, opts?: RequestOptions): Promise<T>;
  /** PUT of the status subresource; the object's resourceVersion makes it an optimistic-locked write. */
  replaceStatus<T extends KubeObject>(rt: ResourceType, obj: T): Promise<T>;
  /** Server-side apply (`application/apply-patch+yaml`) as `fieldManager`, forcing ownership of conflicting fields. */
  apply<T extends KubeObject>(rt: ResourceType, obj: T, fieldManager: string): Promise<T>;
  jsonPatch<T extends KubeObject>(rt: ResourceType, namespace: string | undefined, name: string, ops: JsonPatchOp[]): Promise<T>;
  delete(rt: ResourceType, namespace: string | undefined, name: string, opts?: DeleteOptions): Promise<void>;
}

interface RequestSpec {
  method: string;
  path: string;
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  contentType?: string;
  resource: string;
  verb: string;
  signal?: AbortSignal;
}

const REQUEST_TIMEOUT_MS = 30_000;

/** `KubeClient` over node's HTTP(S) with one keep-alive agent: no generated client, every call is visible here. */
export class HttpKubeClient implements KubeClient {
  private readonly base: URL;
  private readonly agent: http.Agent;
  private readonly transport: typeof http | typeof https;

  constructor(
    private readonly conn: KubeConnection,
    private readonly observe: RequestObserver = () => undefined,
  ) {
    this.base = new URL(conn.server);
    const secure = this.base.protocol === 'https:';
    this.transport = secure ? https : http;
    this.agent = secure
      ? new https.Agent({
          keepAlive: true,
          maxSockets: 32,
          ca: conn.ca,
          cert: conn.cert,
          key: conn.key,
          rejectUnauthorized: conn.rejectUnauthorized ?? true,
        })
      : new http.Agent({ keepAlive: true, maxSockets: 32 });
  }

  /** Closes idle keep-alive sockets (shutdown and tests). */
  close(): void {
    this.agent.destroy();
  }

  async get<T extends KubeObject>(rt: ResourceType, namespace: string | undefined, name: string, opts: RequestOptions = {}): Promise<T | undefined> {
    try {
      return await this.call<T>({ method: 'GET', verb: 'get', resource: rt.plural, path: objectPath(rt, namespace, name), signal: opts.signal });
    } catch (err) {
      if (err instanceof KubeApiError && err.status === 404) return undefined;
      throw err;
    }
  }

  list<T extends KubeObject>(rt: ResourceType, opts: ListOptions = {}): Promise<KubeList<T>> {
    return this.call<KubeList<T>>({
      method: 'GET',
      verb: 'list',
      resource: rt.plural,
      path: collectionPath(rt, opts.namespace),
      query: { labelSelector: opts.labelSelector, fieldSelector: opts.fieldSelector, limit: opts.limit, continue: opts.continue },
    });
  }

  create<T extends KubeObject>(rt: ResourceType, obj: T, opts: RequestOptions = {}): Promise<T> {
    return this.call<T>({ method: 'POST', verb: 'create', resource: rt.plural, path: collectionPath(rt, obj.metadata.namespace), body: obj, signal: opts.signal });
  }

  replace<T extends KubeObject>(rt: ResourceType, obj: T, opts: RequestOptions = {}): Promise<T> {
    return this.call<T>({
      method: 'PUT',
      verb: 'update',
      resource: rt.plural,
      path: objectPath(rt, obj.metadata.namespace, String(obj.metadata.name)),
      body: obj,
      signal: opts.signal,
    });
  }

  replaceStatus<T extends KubeObject>(rt: ResourceType, obj: T): Promise<T> {
    return this.call<T>({
      method: 'PUT',
      verb: 'update',
      resource: `${rt.plural}/status`,
      path: objectPath(rt, obj.metadata.namespace, String(obj.metadata.name), 'status'),
      body: obj,
    });
  }

  apply<T extends KubeObject>(rt: ResourceType, obj: T, fieldManager: string): Promise<T> {
    return this.call<T>({
      method: 'PATCH',
      verb: 'apply',
      resource: rt.plural,
      path: objectPath(rt, obj.metadata.namespace, String(obj.metadata.name)),
      // JSON is YAML: the apply content type accepts it as is.
      contentType: 'application/apply-patch+yaml',
      query: { fieldManager, force: true },
      body: obj,
    });
  }

  jsonPatch<T extends KubeObject>(rt: ResourceType, namespace: string | undefined, name: string, ops: JsonPatchOp[]): Promise<T> {
    return this.call<T>({
      method: 'PATCH',
      verb: 'patch',
      resource: rt.plural,
      path: objectPath(rt, namespace, name),
      contentType: 'application/json-patch+json',
      body: ops,
    });
  }

  async delete(rt: ResourceType, namespace: string | undefined, name: string, opts: DeleteOptions = {}): Promise<void> {
    const body: Record<string, unknown> = { apiVersion: 'v1', kind: 'DeleteOptions' };
    if (opts.preconditions) body.preconditions = opts.preconditions;
    if (opts.propagationPolicy) body.propagationPolicy = opts.propagationPolicy;
    await this.call({ method: 'DELETE', verb: 'delete', resource: rt.plural, path: objectPath(rt, namespace, name), body });
  }

  async watch(rt: ResourceType, opts: WatchOptions, onEvent: (e: WatchEvent) => void, signal: AbortSignal): Promise<void> {
    const started = process.hrtime.bigint();
    const path = collectionPath(rt, opts.namespace);
    const query = {
      watch: true,
      allowWatchBookmarks: true,
      resourceVersion: opts.resourceVersion,
      timeoutSeconds: opts.timeoutSeconds,
      labelSelector: opts.labelSelector,
      fieldSelector: opts.fieldSelector,
    };
    const res = await this.open({ method: 'GET', path, query, verb: 'watch', resource: rt.plural }, signal, 0);
    if (res.statusCode !== 200) {
      const text = await readAll(res);
      this.record('watch', rt.plural, res.statusCode ?? 0, started);
      throw new KubeApiError(res.statusCode ?? 0, 'WATCH', path, parseStatus(text));
    }
    await new Promise<void>((resolve, reject) => {
      let buffered = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buffered += chunk;
        let nl: number;
        while ((nl = buffered.indexOf('\n')) >= 0) {
          const line = buffered.slice(0, nl).trim();
          buffered = buffered.slice(nl + 1);
          if (!line) continue;
          try {
            onEvent(JSON.parse(line) as WatchEvent);
          } catch (err) {
            res.destroy();
            reject(err);
            return;
          }
        }
      });
      res.on('end', () => resolve());
      res.on('error', (err) => (signal.aborted ? resolve() : reject(err)));
      res.on('close', () => resolve());
    });
    this.record('watch', rt.plural, 200, started);
  }

  private async call<T>(spec: RequestSpec): Promise<T> {
    const started = process.hrtime.bigint();
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), REQUEST_TIMEOUT_MS);
    const signal = spec.signal ? AbortSignal.any([controller.signal, spec.signal]) : controller.signal;
    try {
      const res = await this.open(spec, signal, REQUEST_TIMEOUT_MS);
      const text = await readAll(res);
      const status = res.statusCode ?? 0;
      this.record(spec.verb, spec.resource, status, started);
      if (status < 200 || status >= 300) throw new KubeApiError(status, spec.method, spec.path, parseStatus(text));
      return (text ? JSON.parse(text) : undefined) as T;
    } finally {
      clearTimeout(timer);
    }
  }

  private record(verb: string, resource: string, status: number, started: bigint): void {
    this.observe({ verb, resource, status, seconds: Number(process.hrtime.bigint() - started) / 1e9 });
  }

  private async open(spec: Omit<RequestSpec, 'verb' | 'resource'> & { verb: string; resource: string }, signal: AbortSignal, timeoutMs: number): Promise<http.IncomingMessage> {
    const url = new URL(spec.path, this.base);
    for (const [k, v] of Object.entries(spec.query ?? {})) if (v !== undefined && v !== '') url.searchParams.set(k, String(v));
    const payload = spec.body === undefined ? undefined : Buffer.from(JSON.stringify(spec.body));
    const headers: Record<string, string> = { accept: 'application/json', ...(await this.conn.headers()) };
    if (payload) {
      headers['content-type'] = spec.contentType ?? 'application/json';
      headers['content-length'] = String(payload.length);
    }
    return new Promise<http.IncomingMessage>((resolve, reject) => {
      const req = this.transport.request(url, { method: spec.method, headers, agent: this.agent, signal, timeout: timeoutMs || undefined }, resolve);
      req.on('error', reject);
      req.on('timeout', () => req.destroy(new Error(`${spec.method} ${spec.path} timed out after ${timeoutMs} ms`)));
      if (payload) req.write(payload);
      req.end();
    });
  }
}

function readAll(res: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let ended = false;
    res.on('data', (c: Buffer) => chunks.push(c));
    res.on('end', () => {
      ended = true;
      resolve(Buffer.concat(chunks).toString('utf8'));
    });
    res.on('error', reject);
    // An aborted request (its deadline passed) closes the response without an end.
    res.on('close', () => {
      if (!ended) reject(new Error('response closed before its end'));
    });
  });
}

function parseStatus(text: string): KubeStatus | undefined {
  try {
    return JSON.parse(text) as KubeStatus;
  } catch {
    return text ? { message: text.slice(0, 500) } : undefined;
  }
}
