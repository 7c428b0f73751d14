import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One scripted assistant turn: text, tool calls, or both. `arguments` may be given as an object (sent as JSON). */
export interface LoopbackTurn {
  content?: string;
  tool_calls?: Array<{ name: string; arguments: unknown; id?: string }>;
}

interface ChatBody {
  model?: string;
  temperature?: number;
  stream?: boolean;
  messages?: Array<{ role: string; content: string | null; tool_call_id?: string }>;
  tools?: Array<{ function: { name: string } }>;
  response_format?: { type: string; json_schema?: { name: string } };
}

/** A chat request as the model received it. */
export type LoopbackChatBody = ChatBody;

/**
 * The test world's one chat model on a loopback port, speaking the OpenAI wire format
 * (`POST /v1/chat/completions`, whole completions or streamed `data:` events ending with `[DONE]`), for suites
 * that run a service with its OpenAI-compatible LanguageModel.
 *
 * By default it answers with the first sentence of source [1] and the marker [1]. A test may script the
 * completion (`script`), make the model fail mid-answer (`failAfter`: the text it streams before the connection
 * drops), queue whole turns (`turns`, one per request, before the defaults) including tool calls, or compute a turn
 * from the request (`reply`, after the queued turns). Text is
 * streamed a few characters per event, so markers arrive split; a tool call is streamed as OpenAI does: its index,
 * id and name first, then its JSON arguments a few characters per event. Every request body is kept in `bodies`.
 */
export class LoopbackModel {
  server!: Server;
  url = '';
  script: string | null = null;
  failAfter: string | null = null;
  turns: LoopbackTurn[] = [];
  /** Computes a turn from the request when no queued turn is left (null: the default answer). */
  reply: ((body: ChatBody) => LoopbackTurn | null) | null = null;
  bodies: ChatBody[] = [];
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
        const body = JSON.parse(raw || '{}') as ChatBody;
        this.bodies.push(body);
        // The last user message that lists sources (an answer's come after the conversation before it), else the first.
        const asked = (body.messages ?? []).filter((m) => m.role === 'user');
        const prompt = (asked.findLast((m) => /^\[1\] /m.test(m.content ?? '')) ?? asked[0])?.content ?? '';
        const turn = this.turns.shift() ?? this.reply?.(body) ?? { content: this.script ?? LoopbackModel.quoteFirstSource(prompt) };
        const calls = (turn.tool_calls ?? []).map((c, i) => ({
          id: c.id ?? `call_loopback_${this.requests}_${i}`,
          type: 'function' as const,
          function: { name: c.name, arguments: typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments) },
        }));
        const finish = calls.length > 0 ? 'tool_calls' : 'stop';
        if (body.stream === false && this.failAfter === null) {
          const message = { role: 'assistant', content: turn.content ?? null, ...(calls.length > 0 ? { tool_calls: calls } : {}) };
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ object: 'chat.completion', choices: [{ index: 0, message, finish_reason: finish }] }));
          return;
        }
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const event = (delta: unknown, finishReason: string | null = null) =>
          res.write(`data: ${JSON.stringify({ object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finishReason }] })}\n\n`);
        const send = (text: string) => {
          for (let i = 0; i < text.length; i += 4) event({ content: text.slice(i, i + 4) });
        };
        if (this.failAfter !== null) {
          send(this.failAfter);
          // Let the written events reach the client, then drop the connection mid-answer.
          setTimeout(() => res.socket?.destroy(), 50);
          return;
        }
        if (turn.content) send(turn.content);
        calls.forEach((call, index) => {
          event({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.function.name, arguments: '' } }] });
          for (let i = 0; i < call.function.arguments.length; i += 5) event({ tool_calls: [{ index, function: { arguments: call.function.arguments.slice(i, i + 5) } }] });
        });
        event({}, finish);
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
