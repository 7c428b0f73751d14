import type { Logger } from '@lore/runtime';
import { extractCompanyFacts, mergePeople, type CompanyPageFacts, type KeyPerson } from '../domain/company-page';
import { renderCompanyOverviewHtml, type CompanyData } from '../domain/company-overview-html';
import { PageReadError, type PageReader } from '../sources/web-pages';
import { agentsError } from './errors';

/** Spec 3's company overview: the facts of one company's site (docs/agents.md, "Company overview"). */
export interface CompanyOverview {
  company_name: string;
  website: string;
  description: string;
  industry: string;
  headquarters: string;
  founded: string;
  products: string[];
  key_people: KeyPerson[];
}

export interface CompanyOverviewDeps {
  pages: PageReader;
  logger: Logger;
  /** The whole overview, both pages: past it the answer is 502. Default 25 s. */
  timeoutMs?: number;
}

/** `acme.example` → `https://acme.example/`; a URL with a scheme as given. Null when it is no URL at all. */
export function companyUrlOf(raw: string): URL | null {
  const s = raw.trim();
  try {
    const url = new URL(/^[a-z][a-z0-9+.-]*:/i.test(s) ? s : `https://${s}`);
    return url.hostname === '' ? null : url;
  } catch {
    return null;
  }
}

function failure(err: unknown): never {
  if (err instanceof PageReadError) {
    // The caller named an address Lore does not contact: their request is wrong. Anything else is the site's doing.
    throw agentsError(err.kind === 'refused' ? 'BAD_REQUEST' : 'BAD_GATEWAY', err.message);
  }
  throw err;
}

/**
 * Reads the company's page, then one same-site team or about page for its people (and for facts the first page
 * left empty). The second page is a bonus: when it cannot be read (robots.txt, an error) the overview is made of
 * the first alone.
 */
export async function companyOverview(deps: CompanyOverviewDeps, input: { companyUrl: string; companyName?: string }, signal?: AbortSignal): Promise<CompanyOverview> {
  const url = companyUrlOf(input.companyUrl);
  if (!url) throw agentsError('BAD_REQUEST', 'companyUrl is not a URL');
  const deadline = AbortSignal.timeout(deps.timeoutMs ?? 25_000);
  signal = signal ? AbortSignal.any([signal, deadline]) : deadline;
  const home = await deps.pages.read(url.href, signal).catch(failure);
  const facts = extractCompanyFacts(home.html, home.url);
  let more: CompanyPageFacts | null = null;
  if (facts.peopleLink) {
    try {
      const page = await deps.pages.read(facts.peopleLink, signal);
      more = extractCompanyFacts(page.html, page.url);
    } catch (err) {
      if (!(err instanceof PageReadError)) throw err;
      deps.logger.info({ url: facts.peopleLink, kind: err.kind }, 'company overview: the people page was not read');
    }
  }
  const pick = (k: 'description' | 'industry' | 'headquarters' | 'founded') => facts[k] ?? more?.[k] ?? '';
  const site = new URL(home.url);
  return {
    company_name: facts.name ?? (input.companyName?.trim() || site.hostname),
    website: `${site.origin}/`,
    description: pick('description'),
    industry: pick('industry'),
    headquarters: pick('headquarters'),
    founded: pick('founded'),
    products: facts.products.length > 0 ? facts.products : (more?.products ?? []),
    key_people: mergePeople(facts.people, more?.people ?? []),
  };
}

export function companyOverviewHtml(data: CompanyData): { html: string; success: true } {
  return { html: renderCompanyOverviewHtml(data), success: true };
}
