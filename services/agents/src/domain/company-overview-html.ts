import { cutUnits } from '@lore/ai';

/**
 * The HTML rendering of a company overview (`POST /api/company/companyOverview/html`): a small, self-contained
 * fragment. Every value is escaped as text (`& < > " '`), a link is written only for an http(s) website, and
 * nothing of the input becomes markup, so a `<script>` in any value comes out as inert text.
 */

export type CompanyData = Record<string, unknown>;

const MAX_TEXT = 10_000;
const MAX_ITEMS = 100;
const MAX_EXTRA = 50;
const KNOWN = new Set(['company_name', 'website', 'description', 'industry', 'headquarters', 'founded', 'products', 'key_people']);

export function escapeHtml(value: string): string {
  return value.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');
}

/** A scalar as text (strings clipped, numbers and booleans written out); anything else is not shown. */
function text(v: unknown): string | null {
  if (typeof v === 'string') return v.length > MAX_TEXT ? `${cutUnits(v, MAX_TEXT)}…` : v;
  if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  if (typeof v === 'boolean') return v ? 'yes' : 'no';
  return null;
}

const nonEmpty = (v: unknown): string | null => {
  const t = text(v);
  return t === null || t.trim() === '' ? null : t;
};

function httpUrl(v: unknown): string | null {
  const t = nonEmpty(v);
  if (t === null) return null;
  try {
    const u = new URL(t.trim());
    return u.protocol === 'http:' || u.protocol === 'https:' ? u.href : null;
  } catch {
    return null;
  }
}

const label = (key: string) => key.replace(/[_-]+/g, ' ').replace(/^\w/, (c) => c.toUpperCase());

export function renderCompanyOverviewHtml(data: CompanyData): string {
  const out: string[] = ['<article class="company-overview">'];
  out.push(`<h1>${escapeHtml(nonEmpty(data.company_name) ?? 'Company overview')}</h1>`);
  const website = httpUrl(data.website);
  if (website) out.push(`<p class="website"><a href="${escapeHtml(website)}" rel="noopener noreferrer nofollow">${escapeHtml(website)}</a></p>`);
  else if (nonEmpty(data.website)) out.push(`<p class="website">${escapeHtml(nonEmpty(data.website)!)}</p>`);
  const description = nonEmpty(data.description);
  if (description) out.push(`<p class="description">${escapeHtml(description)}</p>`);

  const facts: Array<[string, string]> = [];
  for (const key of ['industry', 'headquarters', 'founded'] as const) {
    const v = nonEmpty(data[key]);
    if (v) facts.push([label(key), v]);
  }
  for (const [key, value] of Object.entries(data).slice(0, MAX_EXTRA)) {
    if (KNOWN.has(key)) continue;
    const v = nonEmpty(value);
    if (v) facts.push([label(key), v]);
  }
  if (facts.length > 0) out.push(`<dl class="facts">${facts.map(([k, v]) => `<dt>${escapeHtml(k)}</dt><dd>${escapeHtml(v)}</dd>`).join('')}</dl>`);

  const products = (Array.isArray(data.products) ? data.products : []).slice(0, MAX_ITEMS).map(nonEmpty).filter((p): p is string => p !== null);
  if (products.length > 0) out.push(`<h2>Products</h2><ul class="products">${products.map((p) => `<li>${escapeHtml(p)}</li>`).join('')}</ul>`);

  const people = (Array.isArray(data.key_people) ? data.key_people : []).slice(0, MAX_ITEMS).flatMap((p) => {
    if (typeof p !== 'object' || p === null) return [];
    const r = p as Record<string, unknown>;
    const name = nonEmpty(r.name);
    if (!name) return [];
    const title = nonEmpty(r.title);
    return [`<li><span class="name">${escapeHtml(name)}</span>${title ? ` — <span class="title">${escapeHtml(title)}</span>` : ''}</li>`];
  });
  if (people.length > 0) out.push(`<h2>Key people</h2><ul class="key-people">${people.join('')}</ul>`);
  out.push('</article>');
  return out.join('\n');
}
