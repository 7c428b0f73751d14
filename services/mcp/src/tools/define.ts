import { z } from 'zod';
import type { Upstream } from './upstream';

/**
 * The tool-definition API of Lore's MCP server (docs/mcp.md, "Adding tools"). A tool module exports an array of
 * `defineTool(...)` results and is added to `registry.ts` with one line.
 *
 * - `input` is a zod object: every string argument has at least 1 character and every integer cap at least 1
 *   (spec 3); `str()` and `cap()` below give those.
 * - `access` is what the tool does upstream: `read` tools are listed for read-only keys, `write` tools are not.
 * - `module` is the gateway module the tool's upstream routes belong to (docs/gateway.md, key scope): a key scoped to
 *   other modules does not see the tool.
 * - `call(args, upstream)` calls the API back through `upstream` with the caller's own key and returns its answer
 *   (`UpstreamResult`); it never throws on purpose (a throw becomes `{success:false, error}` without a stack).
 */
export type ToolAccess = 'read' | 'write';
/** Gateway modules (docs/gateway.md, `scopes.modules`). */
export type ToolModule = 'agents' | 'graph' | 'memory' | 'chat' | 'connectors' | 'pages' | 'projects' | 'workspaces' | 'webhooks';

export type UpstreamResult = { success: true; data: unknown } | { success: false; error: string };

export interface ToolAnnotations {
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
}

export interface ToolDefinition<I extends z.ZodObject = z.ZodObject> {
  name: string;
  title?: string;
  description: string;
  input: I;
  /** The schema of `data` on success (default: any JSON value); the envelope around it is the same for every tool. */
  data?: z.ZodType;
  annotations?: ToolAnnotations;
  access: ToolAccess;
  module: ToolModule;
  call: (args: z.infer<I>, upstream: Upstream) => Promise<UpstreamResult>;
}

/** A tool as the registry keeps it (its input type erased). */
export type AnyTool = ToolDefinition<z.ZodObject>;

export function defineTool<I extends z.ZodObject>(tool: ToolDefinition<I>): AnyTool {
  const annotations: ToolAnnotations = { readOnlyHint: tool.access === 'read', ...tool.annotations };
  if (tool.access === 'read' && annotations.destructiveHint) throw new Error(`tool ${tool.name}: a read tool cannot be destructive`);
  if (tool.access === 'write' && annotations.destructiveHint === undefined) annotations.destructiveHint = false;
  // Unknown arguments are refused, not dropped: a misspelt optional argument must not pass silently.
  return { ...tool, input: tool.input.strict(), annotations } as unknown as AnyTool;
}

/** A string argument: at least 1 character (spec 3), at most `max`. */
export function str(description: string, max = 4000) {
  return z.string().min(1).max(max).describe(description);
}

/** An integer cap: at least 1 (spec 3), at most `max`. */
export function cap(description: string, max: number) {
  return z.number().int().min(1).max(max).describe(description);
}

/** The deepest nesting a free-form argument may have (the API's own filters stop at 64 too). */
export const MAX_JSON_DEPTH = 64;

/** How deep a JSON value nests (objects and arrays), counted without recursion, stopping past `limit`. */
export function jsonDepth(value: unknown, limit = MAX_JSON_DEPTH): number {
  let deepest = 0;
  const stack: Array<{ v: unknown; d: number }> = [{ v: value, d: 0 }];
  while (stack.length > 0) {
    const { v, d } = stack.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    const depth = d + 1;
    if (depth > deepest) deepest = depth;
    if (deepest > limit) return deepest;
    for (const child of Array.isArray(v) ? v : Object.values(v)) stack.push({ v: child, d: depth });
  }
  return deepest;
}

/**
 * The deepest a free-form argument may nest: it is sent as a field of the request body, whose own object is one
 * level more of the API's `MAX_JSON_DEPTH` (until 2026-11-30 the argument alone was counted, and one nesting exactly
 * 64 levels passed the tool's check to be refused by the API).
 */
export const MAX_ARGUMENT_DEPTH = MAX_JSON_DEPTH - 1;

/**
 * A free-form JSON object argument (search payloads, filters), sent as a field of the request body's top level: its
 * field names have at least 1 character too, and it nests at most `MAX_ARGUMENT_DEPTH` levels, so the body the API
 * reads nests at most `MAX_JSON_DEPTH` (a deeper one would overflow the stack of whatever reads it next, and the tool
 * would answer only that it failed).
 */
export function jsonObject(description: string) {
  return z
    .record(z.string().min(1), z.unknown())
    .refine((v) => jsonDepth(v) <= MAX_ARGUMENT_DEPTH, `nests deeper than ${MAX_ARGUMENT_DEPTH} levels (${MAX_JSON_DEPTH} with the request body around it, as the API counts)`)
    .describe(description);
}

/** The envelope's two shapes in JSON Schema, beside the object's properties (see envelopeSchema). */
const ENVELOPE_ONE_OF = [
  { properties: { success: { const: true } }, required: ['success', 'data'], not: { required: ['error'] } },
  { properties: { success: { const: false } }, required: ['success', 'error'], not: { required: ['data'] } },
];

/**
 * The output schema every tool declares: the envelope spec 3 fixes, `data` typed by the tool. It is exactly one of
 * `{success: true, data}` and `{success: false, error}`. The SDK takes only an object schema as a tool's output schema
 * (a union is left out of the tool list and breaks its output check), so the envelope is one strict object: its
 * refinement holds the union for the server's check of every successful call's `structuredContent` (a success
 * carries `data` and no `error`, a failure an `error` and no `data`), and the same rule is published to clients as
 * the JSON Schema's `oneOf` (the SDK's client checks `structuredContent` of failures too).
 */
export function envelopeSchema(data: z.ZodType = z.unknown()) {
  return z
    .strictObject({
      success: z.boolean(),
      data: data.optional(),
      error: z.string().optional(),
    })
    .superRefine((e, ctx) => {
      if (e.success) {
        if (e.data === undefined) ctx.addIssue({ code: 'custom', path: ['data'], message: 'a success carries data' });
        if (e.error !== undefined) ctx.addIssue({ code: 'custom', path: ['error'], message: 'a success carries no error' });
      } else {
        if (e.error === undefined) ctx.addIssue({ code: 'custom', path: ['error'], message: 'a failure carries an error' });
        if (e.data !== undefined) ctx.addIssue({ code: 'custom', path: ['data'], message: 'a failure carries no data' });
      }
    })
    .meta({ oneOf: ENVELOPE_ONE_OF });
}

/** An argument a tool cannot use although its schema let it through: answered as an input validation error. */
export class ToolInputError extends Error {}

/**
 * Path segment encoding for upstream paths built from arguments. `.` and `..` are dot segments to a URL, encoded or
 * not (`%2E%2E` too), which would take the path to another route (`workflow_id: ".."` → `GET /company-search/`): such
 * an id names nothing and is refused.
 */
export function seg(value: string): string {
  if (/^(?:\.|%2e){1,2}$/i.test(value)) throw new ToolInputError(`"${value}" is not an id`);
  return encodeURIComponent(value);
}
