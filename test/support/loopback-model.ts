import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A chat model on a loopback port that speaks the OpenAI wire format (`POST /v1/chat/completions`, streamed
 * `data:` events, `[DONE]`), for suites that run the graph with its OpenAI-compatible LanguageModel.
 *
 * By default it answers with the first sentence of source [1] and the marker [1]. A test may script the
 * completion (`script`), and make the model fail mid-answer (`failAfter`: the text it streams before the
 * connection drops). The completion is streamed a few characters per event, so markers arrive split.
 */
export class LoopbackModel {
  server!: Server;
  url = '';
  script: string | null = null;
  failAfter: string | null = null;
  requests = 0;

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      let raw = '';
      req.on('data', (c: Buffer) => (raw += c.toString('utf8')));
      req.on('end', () => {
        this.requests += 1;
        if (req.url !== '/v1/chat/completions') {
          res.writeHead(404).end();
          return;
        }
        const body = JSON.parse(raw || '{}') as { messages?: Array<{ role: string; content: string }> };
        const prompt = body.messages?.find((m) => m.role === 'user')?.content ?? '';
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const send = (text: string) => {
          for (let i = 0; i < text.length; i += 4) {
            res.write(`data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: text.slice(i, i + 4) } }] })}\n\n`);
          }
        };
        if (this.failAfter !== null) {
          send(this.failAfter);
          // Let the written events reach the client, then drop the connection mid-answer.
          setTimeout(() => res.socket?.destroy(), 50);
          return;
        }
        send(this.script ?? LoopbackModel.quoteFirstSource(prompt));
        res.write(`data: ${JSON.stringify({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}\n\n`);
        res.end('data: [DONE]\n\n');
      });
    });
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', () => r()));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1`;
    return this;
  }

  /** The first sentence of source [1] in the prompt, cited: what a faithful model would say. */
  static quoteFirstSource(prompt: string): string {
    const m = /^\[1\] [^\n]*\n([^\n]+)/m.exec(prompt);
    if (!m) return 'The sources do not answer this question.';
    const sentence = /^.*?[.!?](?=\s|$)/.exec(m[1]!.trim())?.[0] ?? m[1]!.trim();
    return `${sentence.replace(/[.!?]$/, '')} [1].`;
  }

  stop(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((r) => this.server.close(() => r()));
  }
}
