import { AiOutputError, ExtractiveLanguageModel, OpenAiLanguageModel, parseToolArguments, type ChatCompletion, type ChatMessage, type ChatStreamEvent, type LanguageModel, type ToolDefinition } from '@lore/ai';
import { LoopbackModel } from '../support/loopback-model';

// The tool loop later services (chat, agents) run, against the OpenAI-compatible adapter talking to the shared
// loopback model and against the embedded default: the same code drives both.

const searchTool: ToolDefinition = {
  type: 'function',
  function: {
    name: 'search_memory',
    description: 'Search the memory for passages',
    parameters: { type: 'object', properties: { query: { type: 'string', minLength: 1 } }, required: ['query'], additionalProperties: false },
  },
};

const PASSAGES = [
  { title: 'Refund policy', document_id: 'doc_refunds', content: 'Refunds are issued within five business days after the return arrives.' },
  { title: 'Shipping', document_id: 'doc_shipping', content: 'Orders ship from Rotterdam every weekday.' },
];

/** Streams one turn, collecting text and tool calls from the pieces (dropping a turn the model had to redo). */
async function streamTurn(model: LanguageModel, messages: ChatMessage[]): Promise<{ completion: ChatCompletion; assembled: Map<number, string> }> {
  const assembled = new Map<number, string>();
  let completion: ChatCompletion | undefined;
  for await (const event of model.chatStream({ messages, tools: [searchTool], tool_choice: 'auto' }) as AsyncIterable<ChatStreamEvent>) {
    if (event.type === 'tool_call') assembled.set(event.index, (assembled.get(event.index) ?? '') + event.arguments);
    if (event.type === 'retry') assembled.clear();
    if (event.type === 'done') completion = event.completion;
  }
  if (!completion) throw new Error('no completion');
  return { completion, assembled };
}

async function toolLoop(model: LanguageModel, question: string): Promise<{ calls: ChatCompletion; answer: ChatCompletion; query: unknown }> {
  const messages: ChatMessage[] = [
    { role: 'system', content: 'Answer from the memory; cite passages as [n].' },
    { role: 'user', content: question },
  ];
  const first = await streamTurn(model, messages);
  const call = first.completion.message.tool_calls?.[0];
  if (!call) throw new Error('the model called no tool');
  expect(first.assembled.get(0)).toBe(call.function.arguments);
  const args = parseToolArguments(call, [searchTool]);
  messages.push(first.completion.message, { role: 'tool', tool_call_id: call.id, content: JSON.stringify({ results: PASSAGES }) });
  const second = await streamTurn(model, messages);
  return { calls: first.completion, answer: second.completion, query: args.query };
}

describe('tool calling end to end', () => {
  let loopback: LoopbackModel;
  beforeAll(async () => {
    loopback = await new LoopbackModel().start();
  });
  afterAll(() => loopback.stop());
  beforeEach(() => {
    loopback.turns = [];
    loopback.bodies = [];
  });

  it('an OpenAI-compatible model: streamed tool call, tool result with its call id, cited answer', async () => {
    loopback.turns = [{ tool_calls: [{ name: 'search_memory', arguments: { query: 'refund duration' }, id: 'call_refunds' }] }, { content: 'Refunds are issued within five business days [1].' }];
    const model = new OpenAiLanguageModel({ baseUrl: loopback.url, model: 'loopback', timeoutMs: 10_000, retries: 0 });
    const run = await toolLoop(model, 'How long do refunds take?');
    expect(run.query).toBe('refund duration');
    expect(run.answer.message.content).toBe('Refunds are issued within five business days [1].');
    expect(loopback.bodies).toHaveLength(2);
    expect(loopback.bodies[0]).toMatchObject({ stream: true, tools: [searchTool], tool_choice: 'auto' });
    expect(loopback.bodies[1]!.messages?.at(-1)).toMatchObject({ role: 'tool', tool_call_id: 'call_refunds' });
    expect(loopback.bodies[1]!.messages?.at(-2)).toMatchObject({ role: 'assistant', tool_calls: [{ id: 'call_refunds', function: { name: 'search_memory' } }] });
  });

  it('the embedded default: calls the search tool with the question, then answers from the results with a citation', async () => {
    const run = await toolLoop(new ExtractiveLanguageModel(), 'How long do refunds take?');
    expect(run.calls.message.tool_calls?.[0]?.function.name).toBe('search_memory');
    expect(run.query).toBe('How long do refunds take?');
    expect(run.answer.message.content).toBe('Refunds are issued within five business days after the return arrives [1].');
  });

  it('a tool call with arguments that break the parameters is retried once, then refused with a typed error', async () => {
    const model = new OpenAiLanguageModel({ baseUrl: loopback.url, model: 'loopback', timeoutMs: 10_000, retries: 0 });
    loopback.turns = [{ tool_calls: [{ name: 'search_memory', arguments: { query: '' } }] }, { tool_calls: [{ name: 'search_memory', arguments: { query: 'refunds' } }] }];
    const { completion, assembled } = await streamTurn(model, [{ role: 'user', content: 'refunds?' }]);
    expect(JSON.parse(completion.message.tool_calls?.[0]?.function.arguments ?? '')).toEqual({ query: 'refunds' });
    expect(assembled.get(0)).toBe('{"query":"refunds"}');
    loopback.turns = [{ tool_calls: [{ name: 'search_memory', arguments: '{"query":' }] }, { tool_calls: [{ name: 'drop_tables', arguments: {} }] }];
    await expect(streamTurn(model, [{ role: 'user', content: 'refunds?' }])).rejects.toBeInstanceOf(AiOutputError);
    expect(loopback.bodies).toHaveLength(4);
  });
});
