import { cutUnits } from './text';
import { z } from 'zod';
import { AiProviderError } from './openai-client';
import type { ChatCompletion, ChatMessage, ChatRequest, ChatStreamEvent, JsonSchema, ToolCall, ToolDefinition } from './ports';

/** Why a model's answer was refused. */
export type AiOutputReason = 'invalid_json' | 'schema_mismatch' | 'unknown_tool' | 'invalid_arguments' | 'missing_tool_call' | 'refusal' | 'unsupported_schema';

/**
 * A model answered, but not in the shape the request asked for: a `json_schema` answer that is not JSON or does
 * not match the schema, a call of a tool that was not offered or with arguments that do not match its
 * parameters, no call where one was required, or a refusal. Raised after the one retry.
 */
export class AiOutputError extends AiProviderError {
  constructor(
    message: string,
    readonly reason: AiOutputReason,
    /** What did not match, `path: message`, at most 20. */
    readonly issues: string[],
    /** Answers received before giving up. */
    readonly attempts: number,
  ) {
    super(message);
    this.name = 'AiOutputError';
  }
}

const validators = new WeakMap<object, z.ZodType>();

/** The validator of a JSON Schema (zod's converter), compiled once per schema object. */
export function schemaValidator(schema: JsonSchema): z.ZodType {
  let validator = validators.get(schema);
  if (!validator) {
    try {
      validator = z.fromJSONSchema(schema as Parameters<typeof z.fromJSONSchema>[0]);
    } catch (err) {
      const message = (err as Error).message;
      throw new AiOutputError(`the JSON schema is not supported: ${message}`, 'unsupported_schema', [message], 0);
    }
    validators.set(schema, validator);
  }
  return validator;
}

/** Where `value` does not match `schema`, as `path: message` lines (empty when it matches). */
export function schemaIssues(schema: JsonSchema, value: unknown): string[] {
  const result = schemaValidator(schema).safeParse(value);
  if (result.success) return [];
  return result.error.issues.slice(0, 20).map((i) => `${i.path.length > 0 ? i.path.join('.') : '(root)'}: ${i.message}`);
}

/** Parses a model's JSON answer; a Markdown code fence around it is tolerated (some servers add one). */
export function parseJsonAnswer(text: string): { ok: true; value: unknown } | { ok: false; error: string } {
  const fenced = /^\s*```(?:json)?\s*\n([\s\S]*?)\n\s*```\s*$/i.exec(text);
  try {
    return { ok: true, value: JSON.parse(fenced ? (fenced[1] ?? '') : text) };
  } catch (err) {
    return { ok: false, error: (err as Error).message };
  }
}

/** The arguments of a tool call, parsed and checked against the tool's parameters. */
export function parseToolArguments(call: ToolCall, tools: ToolDefinition[]): Record<string, unknown> {
  const problems = toolCallIssues(call, tools, undefined);
  if (problems) throw new AiOutputError(`tool call ${call.function.name}: ${problems.issues.join('; ')}`, problems.reason, problems.issues, 1);
  return JSON.parse(call.function.arguments) as Record<string, unknown>;
}

function toolCallIssues(call: ToolCall, tools: ToolDefinition[], required: string | undefined, unchecked: readonly string[] = []): { reason: AiOutputReason; issues: string[] } | null {
  const tool = tools.find((t) => t.function.name === call.function.name);
  if (!tool) return { reason: 'unknown_tool', issues: [`${call.function.name} is not one of the offered tools (${tools.map((t) => t.function.name).join(', ') || 'none'})`] };
  if (required !== undefined && call.function.name !== required) return { reason: 'unknown_tool', issues: [`the tool to call is ${required}, not ${call.function.name}`] };
  // The caller reads this tool's arguments itself (ChatRequest.uncheckedArguments): a mismatch is its to tolerate.
  if (unchecked.includes(call.function.name)) return null;
  const parsed = parseJsonAnswer(call.function.arguments || '{}');
  if (!parsed.ok) return { reason: 'invalid_arguments', issues: [`arguments are not JSON: ${parsed.error}`] };
  if (parsed.value === null || typeof parsed.value !== 'object' || Array.isArray(parsed.value)) return { reason: 'invalid_arguments', issues: ['arguments are not a JSON object'] };
  const issues = tool.function.parameters ? schemaIssues(tool.function.parameters, parsed.value) : [];
  return issues.length > 0 ? { reason: 'invalid_arguments', issues } : null;
}

/**
 * Characters of a refused answer sent back to the model with the feedback: enough for it to see what it wrote, never
 * the whole of a long one (an answer of megabytes would otherwise go back up as the next prompt).
 */
export const ECHO_CHARS = 2_000;

/** A refused answer's text as the feedback repeats it: at most ECHO_CHARS, marked when cut. */
export function echoOf(text: string): string {
  return text.length > ECHO_CHARS ? `${cutUnits(text, ECHO_CHARS)}… [cut: ${text.length - ECHO_CHARS} more characters]` : text;
}

/** The refused tool calls as the feedback repeats them: each call's arguments cut like any echoed answer. */
const echoCalls = (calls: readonly ToolCall[]): ToolCall[] => calls.map((c) => ({ ...c, function: { ...c.function, arguments: echoOf(c.function.arguments) } }));

interface OutputProblem {
  reason: AiOutputReason;
  issues: string[];
  /** Messages that tell the model what was wrong, appended to the conversation for the retry. */
  feedback: ChatMessage[];
}

/**
 * Checks a completion against what the request asked for. Returns the completion (with `parsed` for a
 * `json_schema` answer) or the problem and the feedback for one retry.
 */
export function checkCompletion(request: ChatRequest, completion: ChatCompletion): { ok: true; completion: ChatCompletion } | { ok: false; problem: OutputProblem } {
  const tools = request.tools ?? [];
  const choice = request.tool_choice ?? (tools.length > 0 ? 'auto' : 'none');
  const calls = completion.message.tool_calls ?? [];
  if (calls.length > 0) {
    const named = typeof choice === 'object' ? choice.function.name : undefined;
    const results = calls.map((call) => ({ call, problem: choice === 'none' ? { reason: 'unknown_tool' as const, issues: ['no tool may be called'] } : toolCallIssues(call, tools, named, request.uncheckedArguments) }));
    const bad = results.filter((r) => r.problem !== null);
    if (bad.length === 0) return { ok: true, completion: { ...completion, finish_reason: 'tool_calls' } };
    const issues = bad.flatMap((r) => r.problem?.issues.map((i) => `${r.call.function.name}: ${i}`) ?? []);
    return {
      ok: false,
      problem: {
        reason: bad[0]?.problem?.reason ?? 'invalid_arguments',
        issues,
        feedback: [
          { role: 'assistant', content: completion.message.content === null ? null : echoOf(completion.message.content), tool_calls: echoCalls(calls) },
          ...results.map((r): ChatMessage => ({
            role: 'tool',
            tool_call_id: r.call.id,
            content: r.problem ? `Error: the call was not made: ${r.problem.issues.join('; ')}. Call the tool again with valid arguments.` : 'Not run: another call of this turn was invalid; call again.',
          })),
        ],
      },
    };
  }
  const text = completion.message.content ?? '';
  if (tools.length > 0 && (choice === 'required' || typeof choice === 'object')) {
    const which = typeof choice === 'object' ? `the tool ${choice.function.name}` : 'one of the offered tools';
    return {
      ok: false,
      problem: {
        reason: 'missing_tool_call',
        issues: [`the answer calls no tool, but ${which} must be called`],
        feedback: [
          { role: 'assistant', content: echoOf(text) },
          { role: 'user', content: `You must call ${which} now.` },
        ],
      },
    };
  }
  const format = request.response_format;
  if (format?.type !== 'json_schema') return { ok: true, completion };
  const parsed = parseJsonAnswer(text);
  const issues = parsed.ok ? schemaIssues(format.json_schema.schema, parsed.value) : [`not JSON: ${parsed.error}`];
  if (parsed.ok && issues.length === 0) return { ok: true, completion: { ...completion, parsed: parsed.value } };
  return {
    ok: false,
    problem: {
      reason: parsed.ok ? 'schema_mismatch' : 'invalid_json',
      issues,
      feedback: [
        { role: 'assistant', content: echoOf(text) },
        {
          role: 'user',
          content: `That answer does not match the JSON schema "${format.json_schema.name}": ${issues.join('; ')}. Answer again with only a JSON value that matches the schema.`,
        },
      ],
    },
  };
}

function failure(problem: OutputProblem, attempts: number): AiOutputError {
  return new AiOutputError(`the model's answer was refused after ${attempts} attempts (${problem.reason}): ${problem.issues.join('; ')}`, problem.reason, problem.issues, attempts);
}

/** Runs a completion, checks it, and on a problem asks once more with the feedback; a second problem throws. */
export async function completeChecked(request: ChatRequest, attempt: (request: ChatRequest) => Promise<ChatCompletion>): Promise<ChatCompletion> {
  const first = checkCompletion(request, await attempt(request));
  if (first.ok) return first.completion;
  const second = checkCompletion(request, await attempt({ ...request, messages: [...request.messages, ...first.problem.feedback] }));
  if (second.ok) return second.completion;
  throw failure(second.problem, 2);
}

/**
 * The streaming form of `completeChecked`: forwards the first attempt's pieces; when its completion has a problem,
 * yields a `retry` event (the consumer drops what it collected) and streams the second attempt.
 */
export async function* streamChecked(
  request: ChatRequest,
  attempt: (request: ChatRequest) => AsyncIterable<ChatStreamEvent>,
): AsyncGenerator<ChatStreamEvent> {
  let current = request;
  for (let n = 1; n <= 2; n += 1) {
    let done: ChatCompletion | undefined;
    for await (const event of attempt(current)) {
      if (event.type === 'done') done = event.completion;
      else if (event.type !== 'retry') yield event;
    }
    if (!done) throw new AiProviderError('AI provider ended the stream without a completion');
    const checked = checkCompletion(request, done);
    if (checked.ok) {
      yield { type: 'done', completion: checked.completion };
      return;
    }
    if (n === 2) throw failure(checked.problem, 2);
    yield { type: 'retry', reason: checked.problem.reason, issues: checked.problem.issues };
    current = { ...request, messages: [...request.messages, ...checked.problem.feedback] };
  }
}
