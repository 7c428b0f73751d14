import { groundAnswer, type SourceChunk } from './citations';
import { groundedAnswerStream, type GroundedPiece } from './grounded-stream';
import type { AnswerRequest, LanguageModel } from './ports';

const SOURCES: SourceChunk[] = [
  { index: 1, title: 'Refund policy', document_id: 'doc_a', content: 'Refunds are issued within five business days after the return arrives.' },
  { index: 2, title: 'Pricing', document_id: 'doc_b', content: 'The Pro plan costs 49 dollars per month and includes 10 seats.' },
  { index: 3, title: 'Support', document_id: 'doc_c', content: 'Support is available by chat from 9 to 17 on weekdays.' },
];

/** A language model that streams a fixed text word by word (the port's shape; no external model exists here). */
function scripted(text: string): LanguageModel {
  return {
    kind: 'openai',
    model: 'scripted',
    async *stream() {
      for (const piece of text.match(/\S+\s*/g) ?? []) yield piece;
    },
    chat: () => Promise.reject(new Error('not used')),
    chatStream: () => {
      throw new Error('not used');
    },
  };
}

/** The sources, each counting how often its content is read. */
function counted(sources: SourceChunk[]): { sources: SourceChunk[]; reads: () => number[] } {
  const reads = sources.map(() => 0);
  const wrapped = sources.map((s, i) => {
    const c = { ...s };
    Object.defineProperty(c, 'content', {
      get: () => {
        reads[i]! += 1;
        return s.content;
      },
    });
    return c;
  });
  return { sources: wrapped, reads: () => [...reads] };
}

async function collect(text: string, sources: SourceChunk[]): Promise<GroundedPiece[]> {
  const out: GroundedPiece[] = [];
  const fallback = { noSources: 'none', unanswered: 'unanswered' };
  for await (const p of groundedAnswerStream(scripted(text), { question: 'q', sources, maxTokens: 500, fallback })) out.push(p);
  return out;
}

describe('groundedAnswerStream', () => {
  const ANSWER =
    'Refunds are issued within five business days [1]. The Pro plan costs 49 dollars per month [2]. Support is available by chat on weekdays [3]. The company was founded on the moon [2].';

  it('sends, sentence by sentence, exactly the answer the one checker gives for the whole text', async () => {
    const pieces = await collect(ANSWER, SOURCES);
    const done = pieces[pieces.length - 1]!;
    if (done.type !== 'done') throw new Error('the last piece is not done');
    const tokens = pieces.flatMap((p) => (p.type === 'token' ? [p.text] : []));
    expect(tokens.join('')).toBe(done.answer);
    const whole = groundAnswer(ANSWER, SOURCES);
    expect(done.answer).toBe(whole.answer);
    expect(done.citations).toEqual(whole.citations);
    expect(done.removedMarkers).toBe(1);
    expect(done.citations.map((c) => c.index)).toEqual([1, 2, 3]);
  });

  it('reads the sources once for the whole answer, not once per sentence checked', async () => {
    const { sources, reads } = counted(SOURCES);
    const pieces = await collect(ANSWER, sources);
    // Four sentences were checked one by one (a token piece for each word of three of them).
    expect(pieces.filter((p) => p.type === 'token').length).toBeGreaterThan(12);
    // Indexing reads each source's content twice (its terms, its numbers); four indexings would read it eight times.
    expect(reads()).toEqual([2, 2, 2]);
  });

  it('hands the model the asker\'s instructions and the conversation with the sources', async () => {
    const seen: AnswerRequest[] = [];
    const lm: LanguageModel = { ...scripted('Refunds are issued within five business days [1].'), stream: (r) => (seen.push(r), scripted('Refunds are issued within five business days [1].').stream(r)) };
    const history = [{ role: 'user' as const, content: 'Who handles refunds?' }, { role: 'assistant' as const, content: 'The shop does.' }];
    const fallback = { noSources: 'none', unanswered: 'unanswered' };
    for await (const piece of groundedAnswerStream(lm, { question: 'How long?', sources: SOURCES, maxTokens: 50, fallback, instructions: 'Be brief.', history })) void piece;
    expect(seen[0]).toMatchObject({ question: 'How long?', instructions: 'Be brief.', history });
  });
});
