import { cutUnits } from '@lore/ai';
import { URL_IN_TEXT } from '../../domain/web-research';
import type { WebPageRead } from '../list-building';
import type { SessionAgent, SessionContext, SessionRow } from './agent';

/**
 * The agentic crawler (docs/agents.md, "Agentic crawler"): from the prompt's seed URLs, or the first results of a
 * web search for the prompt when it names none, read pages breadth-first through the session's guarded fetcher
 * (SSRF guard, robots.txt, size and time limits, per-host politeness), following same-site links up to
 * `MAX_DEPTH`, at most `MAX_PAGES` pages. Every page that describes a company (its facts) or a person (a profile)
 * and matches the prompt becomes a row with its provenance. With seed URLs, the sites named are the match; without,
 * a page must contain the prompt's words.
 */
export const CRAWLER_LIMITS = { maxPages: 40, maxDepth: 2, seeds: 10, searchSeeds: 5, linksPerPage: 60 } as const;

const STOP_WORDS = new Set(
  'a an and any are as at be by crawl every find for from get give in into is it list me of on or out pages people person site sites the their them these this those to up use web website websites what which who with all about companies company'.split(' '),
);

/** The http(s) URLs a prompt names, in order, without duplicates or trailing punctuation. */
export function seedUrlsOf(prompt: string): string[] {
  const out: string[] = [];
  for (const m of prompt.match(URL_IN_TEXT) ?? []) {
    const raw = m.replace(/[.,;:!?]+$/, '');
    try {
      const u = new URL(raw);
      u.hash = '';
      if (!out.includes(u.toString())) out.push(u.toString());
    } catch {
      // Not a URL after all: the prompt's words still count.
    }
  }
  return out.slice(0, CRAWLER_LIMITS.seeds);
}

/** The prompt's words a matching page must contain (URLs and filler words left out), lower-cased. */
export function keywordsOf(prompt: string): string[] {
  const words = prompt.replace(URL_IN_TEXT, ' ').toLowerCase().match(/[\p{L}\p{N}][\p{L}\p{N}+-]*/gu) ?? [];
  return [...new Set(words.filter((w) => w.length > 1 && !STOP_WORDS.has(w)))];
}

const str = (v: unknown): string => (typeof v === 'string' ? v : typeof v === 'number' ? String(v) : '');
const locationText = (loc: unknown): string => {
  if (!loc || typeof loc !== 'object') return str(loc);
  const l = loc as Record<string, unknown>;
  return [str(l.city), str(l.region), str(l.country)].filter(Boolean).join(', ');
};

/** The row a page gives: a person's profile, or a company's page with its facts; null for any other page. */
export function rowOfPage(page: WebPageRead, fetchedAt: string): SessionRow | null {
  const snippet = cutUnits(page.text.replace(/\s+/g, ' ').trim(), 500);
  const provenance = { source_url: page.url, fetched_at: fetchedAt, snippet };
  if (page.person && str(page.person.name)) {
    const p = page.person;
    const fields = { name: str(p.name), title: str(p.title), company: str(p.company), location: locationText(p.location), url: page.url };
    return { entity_key: `person:${page.url}`, entity_type: 'person', fields, provenance };
  }
  const name = str(page.facts.name);
  if (!name) return null;
  const u = new URL(page.url);
  // A company is one row per site, whichever of its pages stated its facts first.
  const fields = { name, industry: str(page.facts.industry), location: locationText(page.facts.location), description: cutUnits(str(page.facts.description), 500), url: `${u.origin}/` };
  return { entity_key: `company:${u.host.toLowerCase()}`, entity_type: 'company', fields, provenance };
}

const matches = (page: WebPageRead, keywords: readonly string[]): boolean => {
  if (keywords.length === 0) return true;
  const text = `${page.title}\n${page.text}\n${JSON.stringify(page.facts)}\n${JSON.stringify(page.person ?? {})}`.toLowerCase();
  return keywords.some((k) => text.includes(k));
};

const normal = (url: string): string | null => {
  try {
    const u = new URL(url);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') return null;
    u.hash = '';
    return u.toString();
  } catch {
    return null;
  }
};

export const agenticCrawler: SessionAgent = {
  kind: 'agentic_crawler',
  async run(ctx: SessionContext) {
    let prompt = ctx.prompt;
    // A prompt with neither a URL nor a word to look for gives the crawler nothing to go on: it asks.
    if (seedUrlsOf(prompt).length === 0 && keywordsOf(prompt).length === 0) {
      prompt = `${prompt} ${await ctx.ask('Which site should the crawler start from (a URL), or what should it look for?')}`;
    }
    const seeds = seedUrlsOf(prompt);
    // With seed URLs, the user named the sites: every company or person on them counts.
    const keywords = seeds.length > 0 ? [] : keywordsOf(prompt);
    let start = seeds;
    if (start.length === 0) {
      await ctx.emit({ stage: 'searching', message: `searching the web for: ${cutUnits(prompt, 200)}` });
      const results = await ctx.fetcher.search(cutUnits(keywords.join(' '), 400));
      start = results.map((r) => normal(r.url)).filter((u): u is string => u !== null).slice(0, CRAWLER_LIMITS.searchSeeds);
      if (start.length === 0) {
        await ctx.emit({ stage: 'searching', message: 'the prompt names no URL and a web search found no page to start from' });
        return { summary: 'no page to start from: 0 rows' };
      }
    }
    const queue: Array<{ url: string; depth: number }> = start.map((url) => ({ url, depth: 0 }));
    const seen = new Set(start);
    let pages = 0;
    let rows = 0;
    while (queue.length > 0 && pages < CRAWLER_LIMITS.maxPages) {
      if (ctx.signal.aborted) break;
      const { url, depth } = queue.shift()!;
      const { page, reason } = await ctx.fetcher.fetchPage(url);
      pages++;
      if (!page) {
        await ctx.emit({ stage: 'fetching', message: `could not read ${url}: ${reason}`, data: { url, depth, read: false, reason } });
        continue;
      }
      const row = matches(page, keywords) ? rowOfPage(page, new Date().toISOString()) : null;
      const added = row ? await ctx.writeRows([row]) : 0;
      rows += added;
      await ctx.emit({ stage: 'fetching', message: `read ${page.url}${added > 0 ? `: ${row!.entity_type} ${String(row!.fields.name)}` : ''}`, data: { url: page.url, depth, read: true, rows } });
      if (depth >= CRAWLER_LIMITS.maxDepth) continue;
      for (const link of (page.links ?? []).slice(0, CRAWLER_LIMITS.linksPerPage)) {
        const next = normal(link.url);
        if (!next || seen.has(next)) continue;
        seen.add(next);
        queue.push({ url: next, depth: depth + 1 });
      }
    }
    // The session's rows: a run resumed after a crash skips those an earlier run wrote, so it cannot count them itself.
    return { summary: `${await ctx.rowsInList()} rows from ${pages} pages` };
  },
};
