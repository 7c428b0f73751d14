import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createMetricsRegistry } from '@lore/runtime';
import { hasOtherMarkerForm, markersIn, OpenAiLanguageModel } from '@lore/ai';
import { createGraphMetrics, DEFAULT_MEMORY_CONFIG, type MemoryDeps } from './context';
import { answerStream, type RetrievedSource } from './search';

/**
 * A loopback chat-completions server in the OpenAI wire format whose model cites in every bracketed form a
 * model may produce. It streams the completion a few characters per chunk, so markers arrive split.
 */
async function startModel(completion: () => string): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString('utf8')));
    req.on('end', () => {
      const body = JSON.parse(raw || '{}') as { stream?: boolean };
      const text = completion();
      if (!body.stream) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ choices: [{ index: 0, message: { role: 'assistant', content: text } }] }));
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (let i = 0; i < text.length; i += 3) {
        res.write(`data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: text.slice(i, i + 3) } }] })}\n\n`);
      }
      res.write(`data: ${JSON.stringify({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}\n\n`);
      res.end('data: [DONE]\n\n');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, server };
}

const source = (index: number, title: string, content: string): RetrievedSource => ({
  index,
  title,
  document_id: `doc_${index}`,
  content,
  chunk_id: String(index),
  vault_id: 'v_unassigned',
  heading: null,
  snippet: '',
  ranks: { full_text: index },
  chunk_ind: 0,
  score: 1 / (60 + index),
  source: 'ingest',
  updated_at: new Date(0),
  source_type: null,
  link: null,
  primary_owners: null,
  secondary_owners: null,
  metadata: {},
});

const sources = [
  source(1, 'Refund policy', 'Refunds are issued within five business days after the return arrives.'),
  source(2, 'Pricing', 'The Pro plan costs 49 dollars per month and includes 10 seats.'),
  source(3, 'Support', 'Support is available by chat from 9 to 17 on weekdays.'),
];

describe('citation markers in any form from an OpenAI-compatible model', () => {
  let model: { url: string; server: Server };
  let completion = '';
  beforeAll(async () => {
    model = await startModel(() => completion);
  });
  afterAll(async () => {
    model.server.closeAllConnections();
    await new Promise((r) => model.server.close(r));
  });

  async function answer(text: string) {
    completion = text;
    const deps = {
      languageModel: new OpenAiLanguageModel({ baseUrl: model.url, model: 'loopback', timeoutMs: 5_000, retries: 0 }),
      metrics: createGraphMetrics(createMetricsRegistry('t', { defaultMetrics: false })),
      config: DEFAULT_MEMORY_CONFIG,
    } as unknown as MemoryDeps;
    let streamed = '';
    let done: { answer: string; citations: Array<{ index: number; title: string; document_id: string }> } | undefined;
    for await (const piece of answerStream(deps, 'refunds, pricing and support?', sources)) {
      if (piece.type === 'token') streamed += piece.text;
      else done = piece.result;
    }
    if (!done) throw new Error('no done piece');
    // The streamed tokens are the JSON answer: what one route says the other says too.
    expect(streamed).toBe(done.answer);
    // Every marker left is a single [n] that maps to a citation, and every citation to a marker.
    expect(hasOtherMarkerForm(done.answer)).toBe(false);
    expect([...new Set(markersIn(done.answer))].sort()).toEqual(done.citations.map((c) => c.index));
    return done;
  }

  it('splits lists and ranges, checks each, and drops what the sources do not support', async () => {
    const done = await answer(
      'Refunds are issued within five business days [1, 2]. The Pro plan costs 49 dollars per month [1-3]. Support is available by chat on weekdays [ 3 ].',
    );
    expect(done.answer).toBe('Refunds are issued within five business days [1]. The Pro plan costs 49 dollars per month [2]. Support is available by chat on weekdays [3].');
  });

  it('never lets a marker with too many digits or another bracketed form out', async () => {
    const done = await answer(
      'Refunds are issued within five business days [1234]. The Pro plan costs 49 dollars per month [source 2]. Support is available by chat on weekdays [#3][3a]. The moon is made of cheese [1; 2].',
    );
    expect(done.answer).not.toMatch(/\[(?!\d+\])/);
    expect(done.answer).toContain('The moon is made of cheese.');
    expect(done.answer).not.toMatch(/1234|source 2|#3|3a/);
    // Repair puts back the marker of the source that supports each true sentence.
    expect(markersIn(done.answer)).toEqual([1, 2, 3]);
  });

  it('keeps a marker list that follows the sentence end with that sentence in the stream', async () => {
    const done = await answer('Refunds are issued within five business days. [1, 3] The Pro plan costs 49 dollars per month. [2-2]');
    expect(done.answer).toBe('Refunds are issued within five business days [1]. The Pro plan costs 49 dollars per month [2].');
  });

  it("never lets a model's invented marker out of the service", async () => {
    const done = await answer('Refunds are issued within five business days [1]. The moon is made of cheese [7].');
    expect(done.answer).toBe('Refunds are issued within five business days [1]. The moon is made of cheese.');
    expect(done.citations).toEqual([{ index: 1, title: 'Refund policy', document_id: 'doc_1' }]);
  });
});
