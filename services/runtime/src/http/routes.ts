import type Koa from 'koa';
import type Router from '@koa/router';
import type { RouterContext, RouterMiddleware } from '@koa/router';
import { z } from 'zod';
import { AppError, errorEnvelopeView } from '../errors/app-error';
import { readJson, readJsonOrForm, assertCleanStrings } from './body';
import { zodIssues, type ValidationIssue } from './validate';

/**
 * One route = one definition: method, path, the zod schemas of what it reads and answers, the guards in front of
 * it, the handler, and the OpenAPI operation built from the same declaration. Registering a route and documenting
 * it are one act, so no route can be served undocumented (see docs/service-template.md).
 */

export type HttpMethod = 'get' | 'post' | 'put' | 'patch' | 'delete';

type Json = Record<string, unknown>;

/** How a route reads its body: JSON, JSON or a URL-encoded form, or not at all (the handler streams it). */
export type BodyKind = 'json' | 'json-or-form' | 'stream';

const RETRY_AFTER = { 'Retry-After': { description: 'seconds to wait before retrying', schema: { type: 'integer', minimum: 0 } } };

export interface ResponseSpec {
  description: string;
  /** zod schema of a JSON answer; absent for answers without a JSON body. */
  schema?: z.ZodType;
  /** Other media types (text/event-stream, multipart...) with an optional JSON Schema each. */
  content?: Record<string, { schema?: Json }>;
  headers?: Record<string, Json>;
}

type Out<T, Fallback> = T extends z.ZodType ? z.output<T> : Fallback;
type In<T> = T extends z.ZodType ? z.input<T> : unknown;

export interface RouteInput<P, Q, B> {
  params: Out<P, Record<string, string>>;
  query: Out<Q, Record<string, string | string[] | undefined>>;
  body: Out<B, undefined>;
}

export interface RouteDefinition<State, P = undefined, Q = undefined, B = undefined, R = undefined> {
  method: HttpMethod;
  /** The router's path (`/api/v1/projects/:project_id`); the document shows it as `/api/v1/projects/{project_id}`. */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tags?: string[];
  /** OpenAPI security requirements; `[]` for a route without a credential; absent: the document's default. */
  security?: Array<Record<string, string[]>>;
  /** Path parameters; every parameter of `path` not described here is documented as a string. */
  params?: P;
  /** Query parameters (values arrive as strings: coerce in the schema). */
  query?: Q;
  /**
   * Further OpenAPI parameter objects the handler or a guard reads itself (a cookie, a header), documented as
   * given after the path and query parameters.
   */
  parameters?: Json[];
  /** The body's schema; how it is read (`bodyKind`, default `json`). */
  body?: B;
  bodyKind?: BodyKind;
  /**
   * Largest body this route reads, instead of the table's: smaller for routes open to anyone (a sign-in), larger for
   * an internal batch route (a connector's documents).
   */
  bodyLimitBytes?: number;
  /** Media types a `stream` body accepts, for the document (e.g. `multipart/form-data`). */
  bodyContent?: Record<string, { schema?: Json }>;
  /** Everything in front of the handler, in order: authentication, limits, scope checks. */
  guards?: Array<Koa.Middleware<State>>;
  /** The success answer. */
  ok: { status: number; description: string; schema?: R; content?: Record<string, { schema?: Json }>; headers?: Record<string, Json> };
  /** Every other status this route answers itself (the table adds the statuses common to all its routes). */
  responses?: Record<number, ResponseSpec>;
  /** An invalid body, query or path answers this error instead of the table's default (spec 2's `detail`, spec 3's 422s). */
  invalid?: (issues: ValidationIssue[], where: 'body' | 'query' | 'path') => AppError;
  /**
   * Words the body reader's refusals (413, 415, 400 for bytes that are not clean JSON) in the route's spec-fixed
   * shape; the status stays the reader's. Default: the error envelope.
   */
  unreadable?: (err: AppError) => AppError;
  /**
   * Returns the success body (sent with `ok.status`), or undefined when it answered itself (a stream, a redirect,
   * an empty status it set).
   */
  handler: (ctx: RouterContext<State>, input: RouteInput<P, Q, B>) => Promise<In<R> | undefined | void> | In<R> | undefined | void;
}

// The table stores definitions with their types erased; `route()` is what keeps each one checked where it is written.
export type AnyRoute<State> = RouteDefinition<State, any, any, any, any>;

/**
 * Typed definitions for one service's request state: `const route = routeFor<MyState>()`, then
 * `route({ method, path, ..., handler })` infers params, query, body and answer types from the schemas.
 */
export function routeFor<State>() {
  return <P extends z.ZodType | undefined = undefined, Q extends z.ZodType | undefined = undefined, B extends z.ZodType | undefined = undefined, R extends z.ZodType | undefined = undefined>(
    def: RouteDefinition<State, P, Q, B, R>,
  ): AnyRoute<State> => def as AnyRoute<State>;
}

/**
 * The route that serves a service's own OpenAPI 3.1 document at `path`, open to anyone (it documents, it grants
 * nothing): built by `build` on the first request (from the service's route table, which holds this route too) and
 * kept, with a five-minute public cache lifetime.
 */
export function openApiDocumentRoute<State>(path: string, description: string, build: () => Json): AnyRoute<State> {
  let document: Json | undefined;
  return routeFor<State>()({
    method: 'get',
    path,
    operationId: 'openApiDocument',
    summary: 'This document (OpenAPI 3.1)',
    security: [],
    ok: { status: 200, description, content: { 'application/json': { schema: { type: 'object' } } } },
    handler: (ctx) => {
      ctx.set('cache-control', 'public, max-age=300');
      document ??= build();
      return document;
    },
  });
}

export interface RouteTableOptions<State> {
  /** Largest body a route reads, in bytes. */
  bodyLimitBytes: number;
  /** Statuses every route of the table may answer (authentication, limits), by route. */
  commonResponses?: (route: AnyRoute<State>) => Record<number, ResponseSpec>;
  /** Headers a route's success answer always carries (set by a guard, e.g. rate-limit fields), by route. */
  successHeaders?: (route: AnyRoute<State>) => Record<string, Json> | undefined;
  /** The error an invalid request gets when the route names none (default: 400 VALIDATION_FAILED with every issue). */
  invalid?: (issues: ValidationIssue[], where: 'body' | 'query' | 'path') => AppError;
  /**
   * Check every success body against its schema before sending it (tests and development): a handler that
   * answers something its document does not declare is a 500 naming the mismatch, not a silent drift.
   */
  checkResponses?: boolean;
}

// In a `u` regex a surrogate pair is one code point, so this class matches only a surrogate standing alone.
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

/** The path or query values (and names) that hold NUL or a lone surrogate, which PostgreSQL text cannot store. */
function unstorable(values: Record<string, unknown> | undefined): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  for (const [name, value] of Object.entries(values ?? {})) {
    const texts = [name, ...[value].flat().filter((v): v is string => typeof v === 'string')];
    if (texts.some((t) => t.includes('\u0000') || LONE_SURROGATE.test(t))) {
      issues.push({ path: name.replace(/\u0000/g, ''), message: 'must not contain NUL characters or lone surrogates' });
    }
  }
  return issues;
}

const defaultInvalid = (issues: ValidationIssue[], where: 'body' | 'query' | 'path') =>
  new AppError('VALIDATION_FAILED', `${where === 'body' ? 'request body' : where === 'query' ? 'query' : 'path'} is invalid`, { details: issues });

/** The OpenAPI form of a router path: `:name` (with an optional `(pattern)`) becomes `{name}`. */
export function openApiPath(path: string): string {
  return path.replace(/:([A-Za-z0-9_]+)(\([^)]*\))?/g, '{$1}');
}

/** A path with its parameter names left out: `/a/:id` and `/a/:key` are the same route. */
function pathShape(path: string): string {
  return openApiPath(path).replace(/\{[^}]*\}/g, '{}');
}

function pathParamNames(path: string): string[] {
  return [...path.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => m[1]!);
}

/** JSON Schema (2020-12, the dialect of OpenAPI 3.1) of a zod schema, without the per-schema `$schema` line. */
export function jsonSchemaOf(schema: z.ZodType, io: 'input' | 'output' = 'output'): Json {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as Json;
  return rest;
}

/**
 * A server-sent events answer is documented as the events a client reads from it (what `EventSource` and OpenAPI
 * tools parse each event into: `event`, `data`, `id`, `retry`), with the route's description of its frames kept: a
 * declaration as one opaque string describes no event a client can check.
 */
export function eventStreamSchema(schema: Json): Json {
  if (schema.type !== 'string') return schema;
  const { type: _string, ...words } = schema;
  return {
    ...words,
    type: 'object',
    properties: {
      event: { type: 'string', description: 'the event\'s name (`message` when the frame names none)' },
      data: { type: 'string', description: 'the frame\'s `data` lines joined' },
      id: { type: 'string', description: 'the frame\'s `id`: what `Last-Event-ID` resumes after' },
      retry: { type: 'integer', minimum: 0 },
    },
  };
}

function responseObject(spec: ResponseSpec): Json {
  const content: Json = {};
  if (spec.schema) content['application/json'] = { schema: jsonSchemaOf(spec.schema, 'output') };
  for (const [type, media] of Object.entries(spec.content ?? {})) {
    content[type] = media.schema ? { schema: type === 'text/event-stream' ? eventStreamSchema(media.schema) : media.schema } : {};
  }
  return {
    description: spec.description,
    ...(spec.headers ? { headers: spec.headers } : {}),
    ...(Object.keys(content).length > 0 ? { content } : {}),
  };
}

function objectShape(schema: z.ZodType | undefined): Record<string, z.ZodType> {
  if (schema instanceof z.ZodObject) return schema.shape as Record<string, z.ZodType>;
  return {};
}

/** The fields of an object schema documented as numbers (query parameters coerced from their text). */
function numericKeys(schema: z.ZodType | undefined): string[] {
  return Object.entries(objectShape(schema))
    .filter(([, field]) => ['integer', 'number'].includes(String(jsonSchemaOf(field, 'input').type)))
    .map(([key]) => key);
}

function parameters(route: AnyRoute<unknown>): Json[] {
  const out: Json[] = [];
  const pathShape = objectShape(route.params as z.ZodType | undefined);
  for (const name of pathParamNames(route.path)) {
    const s = pathShape[name];
    out.push({ name, in: 'path', required: true, schema: s ? jsonSchemaOf(s, 'input') : { type: 'string' } });
  }
  for (const [name, s] of Object.entries(objectShape(route.query as z.ZodType | undefined))) {
    const { description, ...schema } = jsonSchemaOf(s, 'input');
    out.push({ name, in: 'query', required: !s.safeParse(undefined).success, schema, ...(typeof description === 'string' ? { description } : {}) });
  }
  out.push(...(route.parameters ?? []));
  return out;
}

function requestBody(route: AnyRoute<unknown>): Json | undefined {
  const kind = route.bodyKind ?? 'json';
  // A body the handler reads itself (multipart) is declared by its content, whatever the kind says.
  if (kind === 'stream' || (!route.body && route.bodyContent)) {
    return route.bodyContent ? { required: true, content: route.bodyContent } : undefined;
  }
  if (!route.body) return undefined;
  const schema = jsonSchemaOf(route.body as z.ZodType, 'input');
  const content: Json = { 'application/json': { schema } };
  if (kind === 'json-or-form') content['application/x-www-form-urlencoded'] = { schema };
  // The body reader reads an empty body as `{}`: a body whose schema takes `{}` may be left out, so it is optional.
  const body = route.body as z.ZodType;
  return { required: !(body.safeParse(undefined).success || body.safeParse({}).success), content };
}

/**
 * The routes of one service (or one listener of it): mounts each definition on a router with its guards, body
 * reading and validation, and renders the OpenAPI paths of exactly what it mounted.
 */
export class RouteTable<State> {
  private readonly list: Array<AnyRoute<State>> = [];
  private router: Router<State> | undefined;

  constructor(private readonly options: RouteTableOptions<State>) {}

  add(...routes: Array<AnyRoute<State> | Array<AnyRoute<State>>>): this {
    for (const r of routes.flat()) {
      const clash = this.list.find((x) => x.operationId === r.operationId || (x.method === r.method && pathShape(x.path) === pathShape(r.path)));
      if (clash) throw new Error(`route ${r.method.toUpperCase()} ${r.path} (${r.operationId}) is declared twice`);
      this.list.push(r);
    }
    return this;
  }

  routes(): ReadonlyArray<AnyRoute<State>> {
    return this.list;
  }

  /** Registers every route on `router` (guards first, then the handler). */
  mount(router: Router<State>): void {
    this.router = router;
    for (const route of this.list) {
      router.register(route.path, [route.method.toUpperCase()], [...(route.guards ?? []), this.endpoint(route)] as RouterMiddleware<State>[], {
        name: route.operationId,
      });
    }
  }

  /**
   * The answer to a method a known path does not declare (RFC 9110, 15.5.6): 405 `METHOD_NOT_ALLOWED` with an
   * `Allow` header naming the methods the path's most specific patterns have on the router this table was mounted on
   * (HEAD with GET); a path
   * no route of the router has goes on to `next` (404, or whatever a later step serves). Used after the router's
   * routes (and, on the gateway, after forwarding), so nothing a later step serves is refused here.
   */
  methodNotAllowed(): Koa.Middleware<State> {
    return async (ctx, next) => {
      const matched = this.router?.match(ctx.path, ctx.method);
      if (!matched || matched.route) return next();
      // The path's most specific patterns name the methods, as the document groups them: `/graphs/create` (POST) is
      // its own path, not also `/graphs/:graph_id` (GET) with the id `create`.
      const routes = matched.path.filter((layer) => layer.methods.length > 0);
      const fewest = Math.min(...routes.map((layer) => layer.paramNames.length));
      const allowed = [...new Set(routes.filter((layer) => layer.paramNames.length === fewest).flatMap((layer) => layer.methods))];
      if (allowed.length === 0) return next();
      throw new AppError('METHOD_NOT_ALLOWED', `method ${ctx.method} is not allowed on this path (allowed: ${allowed.join(', ')})`, { headers: { Allow: allowed.join(', ') } });
    };
  }

  private endpoint(route: AnyRoute<State>): Koa.Middleware<State> {
    const limits = { limitBytes: route.bodyLimitBytes ?? this.options.bodyLimitBytes };
    const invalid = route.invalid ?? this.options.invalid ?? defaultInvalid;
    const check = <T extends z.ZodType>(schema: T | undefined, value: unknown, where: 'body' | 'query' | 'path') => {
      if (!schema) return value;
      const parsed = schema.safeParse(value);
      if (!parsed.success) throw invalid(zodIssues(parsed.error), where);
      return parsed.data as unknown;
    };
    const kind = route.bodyKind ?? 'json';
    const okSchema = route.ok.schema as z.ZodType | undefined;
    const numericQuery = numericKeys(route.query as z.ZodType | undefined);
    return async (koaCtx) => {
      const ctx = koaCtx as unknown as RouterContext<State>;
      // A value PostgreSQL text cannot hold would fail deep in a statement (a 500): refused here like any invalid one.
      const badPath = unstorable(ctx.params);
      if (badPath.length > 0) throw invalid(badPath, 'path');
      const badQuery = unstorable(ctx.query);
      if (badQuery.length > 0) throw invalid(badQuery, 'query');
      const params = check(route.params as z.ZodType | undefined, ctx.params, 'path');
      // `?limit=` is no number: coercion would read it as 0 (or the default), so it is refused like `?limit=x`.
      const empty = numericQuery.filter((key) => [ctx.query[key]].flat().some((v) => typeof v === 'string' && v.trim() === ''));
      if (empty.length > 0) throw invalid(empty.map((key) => ({ path: key, message: 'expected a number, received an empty value' })), 'query');
      const query = check(route.query as z.ZodType | undefined, ctx.query, 'query');
      let body: unknown;
      if (route.body && kind !== 'stream') {
        let raw: unknown;
        try {
          raw = await readBodyOnce(ctx, kind, limits);
        } catch (err) {
          throw route.unreadable && err instanceof AppError ? route.unreadable(err) : err;
        }
        body = check(route.body as z.ZodType, raw, 'body');
      }
      const result = await route.handler(ctx, { params, query, body } as RouteInput<unknown, unknown, unknown>);
      if (result === undefined) return;
      if (this.options.checkResponses && okSchema) {
        const parsed = okSchema.safeParse(result);
        if (!parsed.success) {
          throw new AppError('INTERNAL', `${route.operationId} answered a body its schema does not declare`, { details: zodIssues(parsed.error) });
        }
      }
      ctx.status = route.ok.status;
      ctx.body = result;
    };
  }

  /** OpenAPI `paths` of every mounted route, merged into `extra` (paths this table does not serve itself). */
  openApiPaths(extra: Record<string, Json> = {}): Record<string, Json> {
    const paths: Record<string, Json> = { ...extra };
    for (const route of this.list) {
      const path = openApiPath(route.path);
      const okHeaders = { ...this.options.successHeaders?.(route), ...route.ok.headers };
      const responses: Json = { [route.ok.status]: responseObject({ ...(route.ok as ResponseSpec), ...(Object.keys(okHeaders).length > 0 ? { headers: okHeaders } : {}) }) };
      const others = { ...this.options.commonResponses?.(route), ...route.responses };
      for (const [status, spec] of Object.entries(others)) if (Number(status) !== route.ok.status) responses[status] = responseObject(spec);
      // A body that cannot be read, or a body, query or path its schema refuses, answers 400 unless the route
      // words it otherwise (and then declares that answer itself).
      const validated = (route.body && (route.bodyKind ?? 'json') !== 'stream') || route.query || route.params;
      if (validated && responses['400'] === undefined && !route.invalid) {
        responses['400'] = responseObject({ description: 'invalid request (every issue listed in `error.details`)', schema: errorEnvelopeView });
      }
      // Every authenticated route reads or writes the record, or the gateway's shared state: when that dependency
      // cannot be reached the kit answers 503 UNAVAILABLE with Retry-After (docs/faults.md), unless the route words
      // it otherwise.
      if ((route.security === undefined || route.security.length > 0) && responses['503'] === undefined) {
        responses['503'] = { description: 'a dependency cannot be reached (the database, or the gateway\'s shared state): nothing was done; retry after `Retry-After`', headers: RETRY_AFTER };
      }
      const params = parameters(route as AnyRoute<unknown>);
      const reqBody = requestBody(route as AnyRoute<unknown>);
      const operation: Json = {
        operationId: route.operationId,
        summary: route.summary,
        ...(route.description ? { description: route.description } : {}),
        ...(route.tags ? { tags: route.tags } : {}),
        ...(route.security ? { security: route.security } : {}),
        ...(params.length > 0 ? { parameters: params } : {}),
        ...(reqBody ? { requestBody: reqBody } : {}),
        responses,
      };
      paths[path] = { ...(paths[path] as Json | undefined), [route.method]: operation };
    }
    return paths;
  }
}

/** Reads and parses a body once per request (a guard may have needed it first); NUL and bad Unicode are 400. */
async function readBodyOnce<State>(ctx: RouterContext<State>, kind: 'json' | 'json-or-form', limits: { limitBytes: number }): Promise<unknown> {
  const request = ctx.request as { body?: unknown };
  if (request.body !== undefined) {
    // Parsed by an earlier step of this request (a guard): the same checks apply.
    assertCleanStrings(request.body);
    return request.body;
  }
  const value = kind === 'json-or-form' ? await readJsonOrForm(ctx.req, limits) : await readJson(ctx.req, limits);
  request.body = value;
  return value;
}

/**
 * Documents another body a status may carry on every operation with a path parameter: a service behind the gateway
 * gets no request whose path the gateway refuses (a path an upstream could read differently is 404 there, in the
 * body of the path's surface), so its document names that body beside its own 404's (`anyOf`, or the one body when
 * they are the same). `schema` may depend on the path (a service whose paths answer in different bodies).
 */
export function withGatewayRefusal(paths: Record<string, Json>, status: number, description: string, schema: z.ZodType | ((path: string) => z.ZodType)): Record<string, Json> {
  const refusalOf = (path: string) => jsonSchemaOf(typeof schema === 'function' ? schema(path) : schema, 'output');
  const out: Record<string, Json> = {};
  for (const [path, operations] of Object.entries(paths)) {
    if (!path.includes('{')) {
      out[path] = operations;
      continue;
    }
    const refusal = refusalOf(path);
    const ops: Json = {};
    for (const [method, op] of Object.entries(operations)) {
      const responses = { ...((op as Json).responses as Json) };
      const own = responses[status] as Json | undefined;
      const ownSchema = ((own?.content as Json | undefined)?.['application/json'] as Json | undefined)?.schema as Json | undefined;
      const same = ownSchema !== undefined && JSON.stringify(ownSchema) === JSON.stringify(refusal);
      responses[status] = {
        description: own ? `${own.description as string}; or ${description}` : description,
        content: { 'application/json': { schema: ownSchema ? (same ? ownSchema : { anyOf: [ownSchema, refusal] }) : refusal } },
      };
      ops[method] = { ...(op as Json), responses };
    }
    out[path] = ops;
  }
  return out;
}

export interface OpenApiInfo {
  title: string;
  version: string;
  description?: string;
}

/** A whole OpenAPI 3.1 document around a table's paths. */
export function openApiDocument(info: OpenApiInfo, paths: Record<string, Json>, extra: { components?: Json; security?: Array<Record<string, string[]>>; servers?: Json[] } = {}): Json {
  return {
    openapi: '3.1.0',
    info,
    ...(extra.servers ? { servers: extra.servers } : {}),
    ...(extra.components ? { components: extra.components } : {}),
    ...(extra.security ? { security: extra.security } : {}),
    paths,
  };
}
