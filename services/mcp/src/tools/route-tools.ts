import { z } from 'zod';
import { defineTool as defineServerTool, seg as idSegment, type AnyTool, type UpstreamResult } from './define';
import type { Upstream } from './upstream';

/**
 * Tools that wrap one upstream route each, written down as data: the arguments (a zod shape), the `data` an answer
 * carries (a zod schema), the MCP annotations, and how an argument set becomes one upstream request. The server's
 * registry turns each into an MCP tool; `request` never performs I/O itself, so what a tool sends is testable alone.
 */

/** Which configured address a tool calls: `core` is AGENT_CORE_URL, `memory` is MEMORY_URL. */
export type UpstreamBase = 'core' | 'memory';

/** One part of a multipart body. */
export interface FilePart {
  field: string;
  filename: string;
  contentType: string;
  bytes: Uint8Array;
}

export interface UpstreamRequest {
  base: UpstreamBase;
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Path below the base, every caller-given segment already encoded. */
  path: string;
  query?: Record<string, string | number | boolean | undefined>;
  json?: unknown;
  /** A multipart/form-data body: text fields, then file parts. */
  multipart?: { fields: Record<string, string>; files: FilePart[] };  /** Send the key as `x-api-key` instead of a bearer credential (spec 1's memory routes). */
  keyHeader?: 'x-api-key';
}

export interface ToolAnnotations {
  title: string;
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
}

/**
 * A route-wrapping tool. `module` is the gateway key module the route is forwarded under (docs/gateway.md,
 * "Forwarding"), `write` whether a read-only key is refused by it: together they decide which keys see the tool.
 */
export interface RouteTool<S extends z.ZodRawShape = z.ZodRawShape> {
  name: string;
  description: string;
  module: 'graph' | 'memory' | 'chat' | 'connectors';
  write: boolean;
  input: S;
  /** Further checks across arguments (each issue reported on its argument). */
  refine?: (args: z.output<z.ZodObject<S>>, ctx: z.RefinementCtx) => void;
  data: z.ZodType;
  annotations: ToolAnnotations;
  request: (args: z.output<z.ZodObject<S>>) => UpstreamRequest;
  /** Reads a streamed answer into `data` (only tools whose route streams); otherwise the body is parsed as JSON. */
  stream?: StreamReader;
}

/** Reads a streamed body into the tool's `data`, within the limits it is given. */
export type StreamReader = (body: AsyncIterable<Uint8Array>, limits: { maxBytes: number; signal: AbortSignal }) => Promise<unknown>;

export const defineRoute = <S extends z.ZodRawShape>(t: RouteTool<S>): RouteTool => t as unknown as RouteTool;

/** The whole argument schema of a tool (its shape and cross-argument checks). */
export function argumentSchema(t: RouteTool): z.ZodType {
  const base = z.strictObject(t.input);
  return t.refine ? base.superRefine(t.refine as (a: unknown, ctx: z.RefinementCtx) => void) : base;
}

export const read = (title: string): ToolAnnotations => ({ title, readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false });
export const additive = (title: string, idempotent = false): ToolAnnotations => ({ title, readOnlyHint: false, destructiveHint: false, idempotentHint: idempotent, openWorldHint: false });
export const destructive = (title: string, idempotent = false): ToolAnnotations => ({ title, readOnlyHint: false, destructiveHint: true, idempotentHint: idempotent, openWorldHint: false });

/**
 * A path segment from an argument: a string id as `define.ts` `seg` takes it (a dot segment, `.` or `..`, encoded or
 * not, is an input validation error: it would take the request to another route), an integer id as its digits.
 */
export const seg = (v: string | number): string => (typeof v === 'number' ? String(v) : idSegment(v));

/**
 * Argument types shared by the tool modules: strings need a character, ids and caps are at least 1. A string is sent
 * as given, never trimmed, as the REST routes take it: what a string of spaces means is the API's to say, and the
 * published schema (`minLength` 1) is then the whole rule.
 */
export const text = (max: number) => z.string().min(1, 'must not be empty').max(max, `at most ${max} characters`);
export const id = () => z.number().int('must be an integer').min(1, 'must be at least 1').max(2_147_483_647);
export const uuid = () => z.uuid('must be a UUID');

/** Loose views of upstream answers: the fields a client relies on, anything else passed through. */
export const open = <S extends z.ZodRawShape>(shape: S) => z.looseObject(shape);

const encoder = new TextEncoder();

/**
 * A file handed to a tool as text (`content`) or as base64 (`content_base64`), exactly one of them, at most
 * `maxBytes` once decoded. Files come only from the caller: the server never fetches a URL for one.
 */
export const fileArgs = (maxBytes: number) => ({
  file_name: text(255).describe('the file name the upload declares'),
  content: z.string().min(1).max(maxBytes).optional().describe('the file as text (UTF-8)'),
  content_base64: z.base64('must be base64').min(1).max(Math.ceil((maxBytes * 4) / 3) + 4).optional().describe('the file as base64, for a binary file'),
  content_type: text(200).optional().describe('the media type; default text/plain for text, application/octet-stream for base64'),
});

export type FileArgs = { file_name: string; content?: string; content_base64?: string; content_type?: string };

export function checkFile(f: FileArgs, maxBytes: number, ctx: z.RefinementCtx, at: (string | number)[] = []): void {
  const given = (f.content !== undefined ? 1 : 0) + (f.content_base64 !== undefined ? 1 : 0);
  if (given !== 1) ctx.addIssue({ code: 'custom', path: [...at, 'content'], message: 'give exactly one of content and content_base64' });
  else if (fileBytes(f).byteLength > maxBytes) ctx.addIssue({ code: 'custom', path: [...at, 'content'], message: `at most ${maxBytes} bytes` });
}

export function fileBytes(f: FileArgs): Uint8Array {
  return f.content !== undefined ? encoder.encode(f.content) : new Uint8Array(Buffer.from(f.content_base64 ?? '', 'base64'));
}

export function filePart(field: string, f: FileArgs): FilePart {
  const type = f.content_type ?? (f.content !== undefined ? 'text/plain' : 'application/octet-stream');
  return { field, filename: f.file_name, contentType: type, bytes: fileBytes(f) };
}

const TARGET = { core: 'agentCore', memory: 'memory' } as const;

/**
 * Sends a tool's request through the server's `Upstream` (the caller's key, its time-out and answer cap). A
 * streamed answer is read within the same cap: what arrives is the whole body, handed to the tool's reader.
 */
export async function callRoute(t: RouteTool, args: Record<string, unknown>, upstream: Upstream): Promise<UpstreamResult> {
  const r = t.request(args);
  let form: FormData | undefined;
  if (r.multipart) {
    form = new FormData();
    for (const [k, v] of Object.entries(r.multipart.fields)) form.append(k, v);
    for (const f of r.multipart.files) form.append(f.field, new Blob([new Uint8Array(f.bytes)], { type: f.contentType }), f.filename);
  }
  const answer = await upstream.call(TARGET[r.base], { method: r.method, path: r.path, query: r.query, body: r.json, form, keyHeader: r.keyHeader });
  if (!answer.success || !t.stream) return answer;
  const body = typeof answer.data === 'string' ? answer.data : JSON.stringify(answer.data);
  try {
    const bytes = new TextEncoder().encode(body);
    const data = await t.stream((async function* () { yield bytes; })(), { maxBytes: Number.MAX_SAFE_INTEGER, signal: new AbortController().signal });
    return { success: true, data };
  } catch (err) {
    return { success: false, error: err instanceof Error ? err.message : 'the streamed answer could not be read' };
  }
}

/** The route tools as the server's tool definitions (define.ts). */
export function serverTools(tools: readonly RouteTool[]): AnyTool[] {
  return tools.map((t) => {
    const { title, ...hints } = t.annotations;
    return defineServerTool({
      name: t.name,
      title,
      description: t.description,
      input: argumentSchema(t) as z.ZodObject,
      data: t.data,
      annotations: hints,
      access: t.write ? 'write' : 'read',
      module: t.module,
      call: (args, upstream) => callRoute(t, args as Record<string, unknown>, upstream),
    });
  });
}
