import { cutUnits } from '@lore/ai';
import { contentTerms, type SourceChunk } from '@lore/ai';

/**
 * Follow-up questions built from what the sources talk about and the question did not: the most frequent
 * unasked names and headings. Deterministic, at most `limit`. None when the answer cited nothing (`cited` false: it
 * said the sources do not answer, so they suggest nothing either). A name is only offered when it is one: no word of
 * it a number ("00 CET" from "18:00 CET"), and a one-word name never written in lower case in the sources (a common
 * word that opened a sentence, "First", "Complete", is none).
 */
export function suggestFollowups(question: string, sources: SourceChunk[], entityNames: string[], limit = 3, cited = true): string[] {
  if (!cited) return [];
  const asked = new Set(contentTerms(question));
  let lowerWords: Set<string> | undefined;
  const isName = (name: string) => {
    const parts = name.trim().split(/\s+/);
    if (parts.some((p) => /^\P{L}*\d/u.test(p))) return false;
    if (parts.length > 1) return true;
    if ((parts[0] ?? '').length < 3) return false;
    lowerWords ??= new Set(sources.flatMap((s) => s.content.match(/(?<![\p{L}\p{N}])\p{Ll}[\p{L}\p{M}]*/gu) ?? []));
    return !lowerWords.has((parts[0] ?? '').toLowerCase());
  };
  const out: string[] = [];
  const seen = new Set<string>();
  const add = (q: string, key: string) => {
    if (out.length >= limit || seen.has(key)) return;
    seen.add(key);
    out.push(q);
  };
  for (const name of entityNames) {
    const terms = contentTerms(name);
    if (terms.length === 0 || terms.every((t) => asked.has(t)) || !isName(name)) continue;
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
