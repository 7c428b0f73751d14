import { z } from 'zod';
import { defineTool } from './tools/define';

/**
 * Tools for the tool server's tests (unit and integration alike), needing no upstream: `big` answers as many KiB as
 * asked; `gate` answers once the test calls `release()`.
 */
export function sizedAnswerTools(): { tools: ReturnType<typeof defineTool>[]; release: () => void } {
  let release: () => void = () => undefined;
  const tools = [
    defineTool({
      name: 'big',
      description: 'An answer of `kib` KiB.',
      input: z.object({ kib: z.number().int().min(1).max(4096) }),
      access: 'read',
      module: 'memory',
      call: async ({ kib }) => ({ success: true, data: { filler: 'x'.repeat(kib * 1024) } }),
    }),
    defineTool({
      name: 'gate',
      description: 'Answers once released.',
      input: z.object({}),
      access: 'read',
      module: 'memory',
      call: () => new Promise((resolve) => (release = () => resolve({ success: true, data: 'released' }))),
    }),
  ];
  return { tools, release: () => release() };
}

/** The JSON-RPC messages of an answer, JSON or a server-sent stream (a priming event's message is null). */
export function mcpMessagesOf(text: string): Array<{ id?: string; message: any }> {
  if (text.startsWith('{')) return [{ message: JSON.parse(text) }];
  return text
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) => {
      const id = /^id: (.*)$/m.exec(block)?.[1];
      const data = /^data: ?(.*)$/m.exec(block)?.[1] ?? '';
      return { ...(id ? { id } : {}), message: data ? JSON.parse(data) : null };
    });
}

/**
 * The text of a resumed stream (a GET with `Last-Event-ID`) up to the end of the first event carrying a tool's answer,
 * then the stream is let go; the status and body of any other answer.
 */
export async function resumedAnswer(url: string, headers: Record<string, string>, lastEventId: string): Promise<{ status: number; text: string }> {
  const ac = new AbortController();
  const res = await fetch(url, { method: 'GET', headers: { ...headers, accept: 'text/event-stream', 'last-event-id': lastEventId }, signal: ac.signal });
  if (res.status !== 200) return { status: res.status, text: await res.text() };
  const reader = res.body!.getReader();
  let text = '';
  while (!text.includes('"structuredContent"') || !text.endsWith('\n\n')) {
    const { done, value } = await reader.read();
    if (done) break;
    text += Buffer.from(value).toString('utf8');
  }
  ac.abort();
  return { status: 200, text };
}
