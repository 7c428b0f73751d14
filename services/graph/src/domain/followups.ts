import { cutUnits } from '@lore/ai';
import { contentTerms, type SourceChunk } from '@lore/ai';

/**
 * Follow-up questions built from what the sources talk about and the question did not: the most frequent
 * unasked names and headings. Deterministic, at most `limit`.
 */
export function suggestFollowups(question: string, sources: SourceChunk[], entityNames: string[], limit = 3): string[] {
  const asked = new Set(contentTerms(question));
  const out: string[] = [];
  const seen = new Set<string>();
  const add = (q: string, key: string) => {
    if (out.length >= limit || seen.has(key)) return;
    seen.add(key);
    out.push(q);
  };
  for (const name of entityNames) {
    const terms = contentTerms(name);
    if (terms.length === 0 || terms.every((t) => asked.has(t))) continue;
    add(`What else does the memory say about ${name}?`, terms.join(' '));
  }
  for (const s of sources) {
    const terms = contentTerms(s.title);
    if (terms.length === 0 || terms.every((t) => asked.has(t))) continue;
    add(`What are the key points of "${s.title}"?`, terms.join(' '));
  }
  if (out.length < limit && sources.length > 0) {
    const focus = question.replace(/[?.!]+$/, '').trim();
    if (focus) add(`Which sources disagree about ${focus.length > 80 ? `${cutUnits(focus, 77)}…` : focus}?`, 'disagree');
  }
  return out;
}
