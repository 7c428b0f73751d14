import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { SourceChunk } from './citations';
import { AiProviderError } from './openai-client';
import { OpenAiEmbedder } from './openai-embedder';
import { OpenAiLanguageModel } from './openai-language-model';

/** A loopback server that speaks the OpenAI wire format, scripted per test. */
class FakeOpenAi {
  server!: Server;
  url = '';
  requests: Array<{ path: string; auth: string | undefined; body: any }> = [];
  /** Status codes to answer before behaving normally (consumed one per request). */
  failures: number[] = [];
  delayMs = 0;
  completion = 'Refunds are issued within five business days [1]. The moon is made of cheese [7].';
  dims = 8;

  async start(): Promise<void> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', () => r()));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1`;
  }

  stop(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((r) => this.server.close(() => r()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
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
      if (!body.stream) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ choices: [{ index: 0, message: { role: 'assistant', content: this.completion } }] }));
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (const piece of this.completion.match(/\S+\s*/g) ?? []) {
        res.write(`data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: piece } }] })}\n\n`);
      }
      res.write(`data: ${JSON.stringify({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}\n\n`);
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
