import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { SourceChunk } from './citations';
import { AiProviderError } from './openai-client';
import type { ChatRequest, ChatStreamEvent, JsonSchemaFormat, ToolDefinition } from './ports';
import { AiOutputError, parseToolArguments } from './structured-output';
import { OpenAiEmbedder } from './openai-embedder';
import { OpenAiLanguageModel } from './openai-language-model';

/** A loopback server that speaks the OpenAI wire format, scripted per test. */
/** An OpenAI-format server on loopback: the tests' fakes differ only in how they answer. */
abstract class LoopbackOpenAi {
  server!: Server;
  url = '';

  async start(): Promise<void> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', () => r()));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1`;
  }

  stop(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((r) => this.server.close(() => r()));
  }

  protected abstract handle(req: IncomingMessage, res: ServerResponse): Promise<void>;
}

class FakeOpenAi extends LoopbackOpenAi {
  requests: Array<{ path: string; auth: string | undefined; body: any }> = [];
  /** Status codes to answer before behaving normally (consumed one per request). */
  failures: number[] = [];
  delayMs = 0;
  completion = 'Refunds are issued within five business days [1]. The moon is made of cheese [7].';
  /** Scripted answers, one per chat request, before the default completion. */
  replies: Array<{ content?: string; tool_calls?: Array<{ id: string; name: string; arguments: string }>; refusal?: string; deltas?: unknown[] }> = [];
  dims = 8;

  protected async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let raw = '';
    for await (const c of req) raw += c;
    const body = raw ? JSON.parse(raw) : null;
    this.requests.push({ path: req.url ?? '', auth: req.headers.authorization, body });
    if (this.delayMs) await new Promise((r) => setTimeout(r, this.delayMs));
    const failure = this.failures.shift();
    if (failure) {
      res.writeHead(failure, { 'content-type': 'application/json', 'retry-after': '0' });
      res.end(JSON.stringify({ error: { message: `scripted ${failure}`, type: 'server_error' } }));
      return;
    }
    if (req.url === '/v1/chat/completions') {
      const reply = this.replies.shift() ?? { content: this.completion };
      const calls = reply.tool_calls ?? [];
      const finish = calls.length > 0 ? 'tool_calls' : 'stop';
      if (!body.stream) {
        const message = {
          role: 'assistant',
          content: reply.content ?? null,
          ...(calls.length > 0 ? { tool_calls: calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } })) } : {}),
          ...(reply.refusal ? { refusal: reply.refusal } : {}),
        };
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ id: 'c1', object: 'chat.completion', choices: [{ index: 0, message, finish_reason: finish }] }));
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const chunk = (delta: unknown, finishReason: string | null = null) =>
        res.write(`data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finishReason }] })}\n\n`);
      chunk({ role: 'assistant', content: '' });
      // A reply given as raw deltas is streamed as written (servers that deviate from OpenAI's chunking).
      for (const delta of reply.deltas ?? []) chunk(delta);
      for (const piece of reply.content?.match(/\S+\s*/g) ?? []) chunk({ content: piece });
      if (reply.refusal) chunk({ refusal: reply.refusal });
      // Each call opens with its id and name, then its arguments arrive 7 characters at a time, the calls' pieces
      // interleaved, as OpenAI streams parallel tool calls.
      calls.forEach((c, index) => chunk({ tool_calls: [{ index, id: c.id, type: 'function', function: { name: c.name, arguments: '' } }] }));
      const longest = Math.max(0, ...calls.map((c) => c.arguments.length));
      for (let at = 0; at < longest; at += 7) {
        calls.forEach((c, index) => {
          if (at < c.arguments.length) chunk({ tool_calls: [{ index, function: { arguments: c.arguments.slice(at, at + 7) } }] });
        });
      }
      chunk({}, finish);
      res.end('data: [DONE]\n\n');
      return;
    }
    if (req.url === '/v1/embeddings') {
      const inputs: string[] = body.input;
      const data = inputs.map((_text, index) => ({ object: 'embedding', index, embedding: Array.from({ length: this.dims }, (_, i) => (i === index % this.dims ? 3 : 0)) }));
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ object: 'list', data: data.reverse(), model: body.model }));
      return;
    }
    res.writeHead(404).end();
  }
}

const sources: SourceChunk[] = [
  { index: 1, title: 'Refund policy', document_id: 'doc_r', content: 'Refunds are issued within five business days after the return arrives.' },
];

async function collect(it: AsyncIterable<string>): Promise<string> {
  let out = '';
  for await (const p of it) out += p;
  return out;
}

describe('OpenAI-compatible providers against a loopback server', () => {
  const fake = new FakeOpenAi();
  beforeAll(() => fake.start());
  afterAll(() => fake.stop());
  beforeEach(() => {
    fake.requests = [];
    fake.failures = [];
    fake.delayMs = 0;
    fake.replies = [];
  });

  it('streams a chat completion with the key, model and numbered sources', async () => {
    const lm = new OpenAiLanguageModel({ baseUrl: fake.url, model: 'tiny-chat', apiKey: 'sk-test-loopback', timeoutMs: 5_000, retries: 0 });
    const text = await collect(lm.stream({ question: 'How long do refunds take?', sources, maxTokens: 100 }));
    expect(text).toBe(fake.completion);
    const req = fake.requests[0]!;
    expect(req.auth).toBe('Bearer sk-test-loopback');
    expect(req.body).toMatchObject({ model: 'tiny-chat', stream: true, max_tokens: 100, temperature: 0 });
    expect(req.body.messages[1].content).toContain('[1] Refund policy');
  });

  it('writes the answer with the asker\'s instructions after the grounding rules and the conversation before the sources', async () => {
    const lm = new OpenAiLanguageModel({ baseUrl: fake.url, model: 'tiny-chat', timeoutMs: 5_000, retries: 0 });
    const history = [
      { role: 'user' as const, content: 'Who handles refunds?' },
      { role: 'assistant' as const, content: 'x'.repeat(10_000) },
      ...Array.from({ length: 12 }, (_, i) => ({ role: i % 2 === 0 ? ('user' as const) : ('assistant' as const), content: `turn ${i}` })),
    ];
    await collect(lm.stream({ question: 'And how long do they take?', sources, maxTokens: 100, instructions: 'Talk like a pirate.', history }));
    const messages = fake.requests[0]!.body.messages as Array<{ role: string; content: string }>;
    expect(messages[0]!.role).toBe('system');
    expect(messages[0]!.content).toMatch(/^You answer questions using only the numbered sources[\s\S]*Talk like a pirate\.$/);
    // The last ten messages of the conversation, in order, then the sources and the question.
    expect(messages.slice(1, -1).map((m) => m.content)).toEqual(history.slice(-10).map((m) => m.content));
    expect(messages.at(-1)).toMatchObject({ role: 'user', content: expect.stringMatching(/^Sources:\n\[1\] Refund policy[\s\S]*Question: And how long do they take\?$/) });
    // A long earlier message is cut.
    await collect(lm.stream({ question: 'q', sources, maxTokens: 100, history: history.slice(0, 2) }));
    const cut = fake.requests[1]!.body.messages as Array<{ role: string; content: string }>;
    expect(cut.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'user']);
    expect(cut[2]!.content).toHaveLength(4_000);
    expect(cut[0]!.content).not.toMatch(/own instructions/);
  });

  it('sends a request\'s own model and temperature instead of the configured ones', async () => {
    const lm = new OpenAiLanguageModel({ baseUrl: fake.url, model: 'tiny-chat', timeoutMs: 5_000, retries: 0, temperature: 0.1 });
    await collect(lm.stream({ question: 'How long do refunds take?', sources, maxTokens: 50, overrides: { model: 'big-chat', temperature: 0.7 } }));
    expect(fake.requests[0]!.body).toMatchObject({ model: 'big-chat', temperature: 0.7 });
    await collect(lm.stream({ question: 'How long do refunds take?', sources, maxTokens: 50, overrides: { temperature: 0 } }));
    expect(fake.requests[1]!.body).toMatchObject({ model: 'tiny-chat', temperature: 0 });
    await collect(lm.stream({ question: 'How long do refunds take?', sources, maxTokens: 50 }));
    expect(fake.requests[2]!.body).toMatchObject({ model: 'tiny-chat', temperature: 0.1 });
  });

  it('retries 503 and 429, then succeeds', async () => {
    fake.failures = [503, 429];
    const lm = new OpenAiLanguageModel({ baseUrl: fake.url, model: 'm', timeoutMs: 5_000, retries: 2, backoffMs: 1 });
    expect(await collect(lm.stream({ question: 'q', sources, maxTokens: 10 }))).toBe(fake.completion);
    expect(fake.requests).toHaveLength(3);
  });

  it('does not retry a 400 and reports the provider message', async () => {
    fake.failures = [400];
    const lm = new OpenAiLanguageModel({ baseUrl: fake.url, model: 'm', timeoutMs: 5_000, retries: 3, backoffMs: 1 });
    await expect(collect(lm.stream({ question: 'q', sources, maxTokens: 10 }))).rejects.toThrow(/400.*scripted 400/);
    expect(fake.requests).toHaveLength(1);
  });

  it('gives up after its timeout and retries', async () => {
    fake.delayMs = 300;
    const lm = new OpenAiLanguageModel({ baseUrl: fake.url, model: 'm', timeoutMs: 50, retries: 1, backoffMs: 1 });
    await expect(collect(lm.stream({ question: 'q', sources, maxTokens: 10 }))).rejects.toBeInstanceOf(AiProviderError);
    expect(fake.requests).toHaveLength(2);
  });

  it('embeds in batches, restores input order and normalises', async () => {
    const e = new OpenAiEmbedder({ baseUrl: fake.url, model: 'tiny-embed', dims: 8, timeoutMs: 5_000, retries: 0, batchSize: 2 });
    const vectors = await e.embed(['a', 'b', 'c']);
    expect(fake.requests).toHaveLength(2);
    expect(vectors).toHaveLength(3);
    expect(vectors[0]![0]).toBeCloseTo(1);
    expect(vectors[1]![1]).toBeCloseTo(1);
    expect(vectors[2]![0]).toBeCloseTo(1);
    expect(fake.requests[0]!.body).toMatchObject({ model: 'tiny-embed', input: ['a', 'b'] });
  });

  it('refuses embeddings of the wrong size', async () => {
    const e = new OpenAiEmbedder({ baseUrl: fake.url, model: 'm', dims: 16, timeoutMs: 5_000, retries: 0 });
    await expect(e.embed(['a'])).rejects.toThrow(/not 16 finite numbers/);
  });
});

const searchTool: ToolDefinition = {
  type: 'function',
  function: {
    name: 'search_documents',
    description: 'Search the knowledge base',
    parameters: { type: 'object', properties: { query: { type: 'string' }, limit: { type: 'integer', minimum: 1 } }, required: ['query', 'limit'], additionalProperties: false },
    strict: true,
  },
};
const weatherTool: ToolDefinition = {
  type: 'function',
  function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
};
const ticketFormat: JsonSchemaFormat = {
  type: 'json_schema',
  json_schema: {
    name: 'ticket',
    strict: true,
    schema: {
      type: 'object',
      properties: { title: { type: 'string' }, priority: { enum: ['low', 'high'] }, hours: { type: 'number' } },
      required: ['title', 'priority', 'hours'],
      additionalProperties: false,
    },
  },
};

async function drain(events: AsyncIterable<ChatStreamEvent>): Promise<ChatStreamEvent[]> {
  const out: ChatStreamEvent[] = [];
  for await (const e of events) out.push(e);
  return out;
}

describe('tool calling and structured output in the OpenAI wire format', () => {
  const fake = new FakeOpenAi();
  const lm = () => new OpenAiLanguageModel({ baseUrl: fake.url, model: 'tools-model', timeoutMs: 5_000, retries: 0 });
  beforeAll(() => fake.start());
  afterAll(() => fake.stop());
  beforeEach(() => {
    fake.requests = [];
    fake.replies = [];
  });

  it('sends tools, tool_choice and the tool round trip, and reads the assistant tool calls', async () => {
    fake.replies = [{ tool_calls: [{ id: 'call_a', name: 'search_documents', arguments: '{"query":"refund time","limit":3}' }] }];
    const request: ChatRequest = {
      messages: [
        { role: 'system', content: 'Use the tools.' },
        { role: 'user', content: 'How long do refunds take?' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_0', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }] },
        { role: 'tool', tool_call_id: 'call_0', content: '{"temperature":3}' },
      ],
      tools: [searchTool, weatherTool],
      tool_choice: { type: 'function', function: { name: 'search_documents' } },
      maxTokens: 50,
    };
    const completion = await lm().chat(request);
    expect(completion.finish_reason).toBe('tool_calls');
    expect(completion.message.tool_calls).toEqual([{ id: 'call_a', type: 'function', function: { name: 'search_documents', arguments: '{"query":"refund time","limit":3}' } }]);
    const body = fake.requests[0]!.body;
    expect(body).toMatchObject({ model: 'tools-model', stream: false, max_tokens: 50, tools: [searchTool, weatherTool], tool_choice: { type: 'function', function: { name: 'search_documents' } } });
    expect(body.messages[2]).toEqual(request.messages[2]);
    expect(body.messages[3]).toEqual({ role: 'tool', tool_call_id: 'call_0', content: '{"temperature":3}' });
    expect(parseToolArguments(completion.message.tool_calls![0]!, request.tools!)).toEqual({ query: 'refund time', limit: 3 });
  });

  it('accumulates streamed tool-call deltas by index into whole calls', async () => {
    fake.replies = [
      {
        tool_calls: [
          { id: 'call_1', name: 'search_documents', arguments: '{"query":"refunds for damaged goods","limit":5}' },
          { id: 'call_2', name: 'get_weather', arguments: '{"city":"Rotterdam"}' },
        ],
      },
    ];
    const events = await drain(lm().chatStream({ messages: [{ role: 'user', content: 'refunds and weather' }], tools: [searchTool, weatherTool], tool_choice: 'auto' }));
    const pieces = events.filter((e): e is Extract<ChatStreamEvent, { type: 'tool_call' }> => e.type === 'tool_call');
    // The arguments really arrived in pieces, interleaved between the two calls.
    expect(pieces.filter((p) => p.index === 0).length).toBeGreaterThan(3);
    expect(pieces.slice(2, 4).map((p) => p.index)).toEqual([0, 1]);
    expect(pieces.filter((p) => p.index === 1).map((p) => p.arguments).join('')).toBe('{"city":"Rotterdam"}');
    const done = events.at(-1);
    expect(done?.type).toBe('done');
    const completion = (done as Extract<ChatStreamEvent, { type: 'done' }>).completion;
    expect(completion.finish_reason).toBe('tool_calls');
    expect(completion.message.tool_calls).toEqual([
      { id: 'call_1', type: 'function', function: { name: 'search_documents', arguments: '{"query":"refunds for damaged goods","limit":5}' } },
      { id: 'call_2', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Rotterdam"}' } },
    ]);
    expect(fake.requests[0]!.body).toMatchObject({ stream: true, tool_choice: 'auto' });
  });

  it('validates a json_schema answer, retries once with the problem, and returns the parsed value', async () => {
    fake.replies = [{ content: '{"title":"Broken login","priority":"urgent","hours":"two"}' }, { content: '{"title":"Broken login","priority":"high","hours":2}' }];
    const completion = await lm().chat({ messages: [{ role: 'user', content: 'File a ticket: login broken' }], response_format: ticketFormat });
    expect(completion.parsed).toEqual({ title: 'Broken login', priority: 'high', hours: 2 });
    expect(fake.requests).toHaveLength(2);
    expect(fake.requests[0]!.body.response_format).toEqual(ticketFormat);
    const retry = fake.requests[1]!.body.messages;
    expect(retry).toHaveLength(3);
    expect(retry[1]).toEqual({ role: 'assistant', content: '{"title":"Broken login","priority":"urgent","hours":"two"}' });
    expect(retry[2].content).toMatch(/does not match the JSON schema "ticket".*priority.*hours/);
  });

  it('gives a typed error when the answer breaks the schema twice, after exactly one retry', async () => {
    fake.replies = [{ content: '{"title":"x","priority":"urgent","hours":1}' }, { content: 'Sure! Here is your ticket.' }];
    const error = await lm()
      .chat({ messages: [{ role: 'user', content: 'File a ticket' }], response_format: ticketFormat })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AiOutputError);
    expect(error).toMatchObject({ reason: 'invalid_json', attempts: 2 });
    expect(fake.requests).toHaveLength(2);
  });

  it('refuses a call of a tool that was not offered or with arguments that break its parameters', async () => {
    fake.replies = [
      { tool_calls: [{ id: 'c1', name: 'delete_everything', arguments: '{}' }] },
      { tool_calls: [{ id: 'c2', name: 'search_documents', arguments: '{"query":"x","limit":0}' }] },
    ];
    const error = (await lm()
      .chat({ messages: [{ role: 'user', content: 'search x' }], tools: [searchTool] })
      .catch((e: unknown) => e)) as AiOutputError;
    expect(error).toBeInstanceOf(AiOutputError);
    expect(error.reason).toBe('invalid_arguments');
    expect(error.issues.join(' ')).toMatch(/limit/);
    // The retry told the model, in a tool message answering its call, why the call was not made.
    const feedback = fake.requests[1]!.body.messages;
    expect(feedback[1]).toMatchObject({ role: 'assistant', tool_calls: [{ id: 'c1', function: { name: 'delete_everything' } }] });
    expect(feedback[2]).toMatchObject({ role: 'tool', tool_call_id: 'c1' });
    expect(feedback[2].content).toMatch(/not one of the offered tools/);
  });

  it('accepts any arguments for a tool the caller reads itself, and still checks the other tools\' arguments', async () => {
    const request: ChatRequest = { messages: [{ role: 'user', content: 'search x' }], tools: [searchTool, weatherTool], uncheckedArguments: ['search_documents'] };
    for (const args of ['{"query":"x","limit":0}', '{not json']) {
      fake.requests = [];
      fake.replies = [{ tool_calls: [{ id: 'c1', name: 'search_documents', arguments: args }] }];
      const completion = await lm().chat(request);
      expect(completion.message.tool_calls?.[0]?.function.arguments).toBe(args);
      // Accepted as it came: no retry, and the option is not sent to the provider.
      expect(fake.requests).toHaveLength(1);
      expect(fake.requests[0]!.body).not.toHaveProperty('uncheckedArguments');
    }
    fake.replies = [{ tool_calls: [{ id: 'c2', name: 'get_weather', arguments: '{"town":1}' }] }, { tool_calls: [{ id: 'c3', name: 'get_weather', arguments: '{"town":1}' }] }];
    const error = await lm().chat(request).catch((e: unknown) => e);
    expect(error).toMatchObject({ reason: 'invalid_arguments', attempts: 2 });
    // A tool that was not offered is refused whatever the option names.
    fake.replies = [{ tool_calls: [{ id: 'c4', name: 'delete_everything', arguments: '{}' }] }, { tool_calls: [{ id: 'c5', name: 'delete_everything', arguments: '{}' }] }];
    expect(await lm().chat({ ...request, uncheckedArguments: ['delete_everything'] }).catch((e: unknown) => e)).toMatchObject({ reason: 'unknown_tool' });
  });

  it('streams a retry event when the first streamed answer breaks the schema', async () => {
    fake.replies = [{ content: '{"title":"x"}' }, { content: '{"title":"x","priority":"low","hours":1.5}' }];
    const events = await drain(lm().chatStream({ messages: [{ role: 'user', content: 'ticket' }], response_format: ticketFormat }));
    const types = events.map((e) => e.type);
    expect(types.filter((t) => t === 'retry')).toHaveLength(1);
    expect(types.indexOf('retry')).toBeLessThan(types.lastIndexOf('text'));
    expect(events.at(-1)).toMatchObject({ type: 'done', completion: { parsed: { title: 'x', priority: 'low', hours: 1.5 } } });
  });

  it('reads tool calls from servers that leave out the index or repeat the name with every piece', async () => {
    fake.replies = [
      {
        deltas: [
          { tool_calls: [{ id: 'w1', type: 'function', function: { name: 'get_weather', arguments: '{"city":' } }] },
          { tool_calls: [{ id: 'w1', type: 'function', function: { name: 'get_weather', arguments: '"Oslo"}' } }] },
          { tool_calls: [{ id: 's1', type: 'function', function: { name: 'search_documents', arguments: '{"query":"x",' } }] },
          { tool_calls: [{ function: { arguments: '"limit":1}' } }] },
        ],
      },
    ];
    const events = await drain(lm().chatStream({ messages: [{ role: 'user', content: 'x' }], tools: [searchTool, weatherTool] }));
    const done = events.at(-1) as Extract<ChatStreamEvent, { type: 'done' }>;
    expect(done.completion.message.tool_calls?.map((c) => [c.id, c.function.name, c.function.arguments])).toEqual([
      ['w1', 'get_weather', '{"city":"Oslo"}'],
      ['s1', 'search_documents', '{"query":"x","limit":1}'],
    ]);
  });

  it('reports a refusal as a typed error', async () => {
    fake.replies = [{ refusal: 'I cannot help with that.' }];
    await expect(lm().chat({ messages: [{ role: 'user', content: 'x' }], response_format: ticketFormat })).rejects.toMatchObject({ name: 'AiOutputError', reason: 'refusal' });
  });
});

/**
 * A model server whose answer is far larger than any `max_tokens` allows: `size` bytes of "Zorblax ", as one valid
 * chat completion (`json`), or as small stream events (`sse`), written as fast as the client reads them. It counts
 * the bytes it wrote before the client closed the connection.
 */
class HugeAnswer extends LoopbackOpenAi {
  written = 0;
  requests: Array<{ messages: Array<{ role: string; content: string | null }> }> = [];
  /** The next answers, one per request: a huge one, or a short one with this text. */
  answers: Array<{ kind: 'json' | 'sse'; size: number; length?: boolean } | { kind: 'short'; content: string }> = [];

  protected async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let raw = '';
    for await (const c of req) raw += c;
    this.requests.push(JSON.parse(raw));
    const answer = this.answers.shift() ?? { kind: 'short', content: 'ok' };
    if (answer.kind === 'short') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ choices: [{ message: { role: 'assistant', content: answer.content }, finish_reason: 'stop' }] }));
      return;
    }
    const word = 'Zorblax '.repeat(8 * 1024);
    const [head, piece, tail] =
      answer.kind === 'json'
        ? ['{"object":"chat.completion","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"', word, '"}}]}']
        : ['', `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: word } }] })}\n\n`, 'data: [DONE]\n\n'];
    const pieces = Math.ceil(answer.size / piece.length);
    const headers: Record<string, string> = { 'content-type': answer.kind === 'json' ? 'application/json' : 'text/event-stream' };
    if (answer.length) headers['content-length'] = String(head.length + pieces * piece.length + tail.length);
    res.writeHead(200, headers);
    let closed = false;
    res.on('close', () => (closed = true));
    const write = (text: string) => {
      this.written += text.length;
      return res.write(text);
    };
    write(head);
    for (let i = 0; i < pieces && !closed; i++) {
      if (!write(piece)) await new Promise((r) => (res.once('drain', r), res.once('close', r)));
    }
    if (!closed) res.end(tail);
  }
}

describe('answers larger than a model may write', () => {
  const huge = new HugeAnswer();
  const lm = () => new OpenAiLanguageModel({ baseUrl: huge.url, model: 'm', timeoutMs: 30_000, retries: 0 });
  const HUGE = 96 * 1024 * 1024;
  beforeAll(() => huge.start());
  afterAll(() => huge.stop());
  beforeEach(() => {
    huge.written = 0;
    huge.requests = [];
  });

  it('refuses a whole answer over 4 MiB once that much has arrived, without reading the rest', async () => {
    huge.answers = [{ kind: 'json', size: HUGE }];
    const heap = process.memoryUsage().heapUsed;
    const began = Date.now();
    const error = await lm()
      .chat({ messages: [{ role: 'user', content: 'Tell me about Zorblax' }], maxTokens: 100 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AiProviderError);
    expect((error as Error).message).toBe('AI provider answered more than 4 MiB; the answer is refused');
    expect(Date.now() - began).toBeLessThan(5_000);
    // The client hung up after about the limit (what the sockets buffer besides): the rest was never sent or held.
    await new Promise((r) => setTimeout(r, 100));
    expect(huge.written).toBeLessThan(24 * 1024 * 1024);
    expect(process.memoryUsage().heapUsed - heap).toBeLessThan(64 * 1024 * 1024);
  });

  it('refuses embeddings longer than their inputs and dimensions can take, without reading the rest', async () => {
    huge.answers = [{ kind: 'json', size: HUGE }];
    const embedder = new OpenAiEmbedder({ baseUrl: huge.url, model: 'e', dims: 8, timeoutMs: 30_000, retries: 0 });
    // 2 inputs × 8 numbers: about 64 KiB is the most such an answer is read.
    await expect(embedder.embed(['one', 'two'])).rejects.toThrow(/^AI provider answered more than \d+ bytes; the answer is refused$/);
    await new Promise((r) => setTimeout(r, 100));
    expect(huge.written).toBeLessThan(24 * 1024 * 1024);
  });

  it('refuses a whole answer whose declared length is over the limit before reading it', async () => {
    huge.answers = [{ kind: 'json', size: HUGE, length: true }];
    await expect(lm().chat({ messages: [{ role: 'user', content: 'x' }] })).rejects.toThrow('AI provider answered more than 4 MiB; the answer is refused');
    await new Promise((r) => setTimeout(r, 100));
    expect(huge.written).toBeLessThan(24 * 1024 * 1024);
  });

  it('refuses a stream over 4 MiB in all, however small its events', async () => {
    huge.answers = [{ kind: 'sse', size: HUGE }];
    const began = Date.now();
    await expect(drain(lm().chatStream({ messages: [{ role: 'user', content: 'x' }] }))).rejects.toThrow('AI provider streamed more than 4 MiB; the answer is refused');
    expect(Date.now() - began).toBeLessThan(5_000);
    await new Promise((r) => setTimeout(r, 100));
    expect(huge.written).toBeLessThan(24 * 1024 * 1024);
  });

  it('sends back at most a short prefix of a refused answer with the retry feedback', async () => {
    // A 3 MiB answer (under the limit) that is not the JSON asked for, then a good one.
    huge.answers = [{ kind: 'json', size: 3 * 1024 * 1024 }, { kind: 'short', content: '{"title":"t","priority":"low","hours":1}' }];
    const completion = await lm().chat({ messages: [{ role: 'user', content: 'ticket' }], response_format: ticketFormat });
    expect(completion.parsed).toEqual({ title: 't', priority: 'low', hours: 1 });
    const echoed = huge.requests[1]!.messages[1]!;
    expect(echoed.role).toBe('assistant');
    expect(echoed.content!.length).toBeLessThan(2_100);
    expect(echoed.content).toMatch(/^Zorblax Zorblax [\s\S]*… \[cut: \d+ more characters\]$/);
    expect(JSON.stringify(huge.requests[1]).length).toBeLessThan(5_000);
  });

  it('calls onAttempt before every request a chat sends: the retry after a refused answer too', async () => {
    huge.answers = [{ kind: 'short', content: 'not json' }, { kind: 'short', content: '{"title":"t","priority":"low","hours":1}' }];
    const seen: number[] = [];
    await lm().chat({ messages: [{ role: 'user', content: 'ticket' }], response_format: ticketFormat, onAttempt: (m) => seen.push(m.length) });
    expect(seen).toEqual([1, 3]);
    // A throw ends the chat before the request is sent.
    const before = huge.requests.length;
    await expect(
      lm().chat({
        messages: [{ role: 'user', content: 'x' }],
        onAttempt: () => {
          throw new Error('over budget');
        },
      }),
    ).rejects.toThrow('over budget');
    expect(huge.requests).toHaveLength(before);
  });
});
