import type { IncomingHttpHeaders } from 'node:http';
import type { SitemapEntry } from './sitemap';
import type { Validators } from './source';

/**
 * Change detection for polls, without I/O. A known document is asked for conditionally with the validators the
 * last run kept (If-None-Match, If-Modified-Since), so an unchanged page answers 304 without a body; a 200 whose
 * content hash equals the kept one is unchanged too (a server that sends no validators, or new ones for the same
 * text). In sitemap mode a lastmod not after what the page said last time saves even the conditional request.
 */

/** The conditional request headers for a known document; none for a new one. */
export function conditionalHeaders(previous: Validators | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  if (previous?.etag) headers['if-none-match'] = previous.etag;
  if (previous?.lastModified && Number.isFinite(Date.parse(previous.lastModified))) headers['if-modified-since'] = previous.lastModified;
  return headers;
}

/** What to keep from a 200: the response's ETag and Last-Modified (when they are usable) and the content hash. */
export function validatorsFrom(headers: IncomingHttpHeaders, hash: string): Validators {
  const out: Validators = { hash };
  const etag = typeof headers.etag === 'string' ? headers.etag.trim() : '';
  // A validator goes back in a request header: anything that could not be sent again is not kept.
  if (etag && etag.length <= 512 && !/[\r\n]/.test(etag)) out.etag = etag;
  const lastModified = typeof headers['last-modified'] === 'string' ? headers['last-modified'].trim() : '';
  if (lastModified && lastModified.length <= 64 && !/[\r\n]/.test(lastModified) && Number.isFinite(Date.parse(lastModified))) out.lastModified = lastModified;
  return out;
}

/**
 * True when a sitemap entry shows a known page has not changed, so it need not be asked for at all: the lastmod
 * (the last instant it can mean) is not after the page's own Last-Modified of the last run, compared on the site's
 * clock; for a page that sent no Last-Modified, not after `since`, the last run. A new page, or an entry without a
 * lastmod, is always asked for.
 */
export function sitemapSaysUnchanged(entry: SitemapEntry, previous: Validators | undefined, since: Date): boolean {
  if (previous === undefined || entry.lastmodLatest === null) return false;
  const kept = previous.lastModified === undefined ? Number.NaN : Date.parse(previous.lastModified);
  const reference = Number.isFinite(kept) ? kept : since.getTime();
  return entry.lastmodLatest.getTime() <= reference;
}

/** A fetched document against the last run: new (never indexed), unchanged (same hash) or changed. */
export function compareContent(previous: Validators | undefined, hash: string): 'new' | 'unchanged' | 'changed' {
  if (previous === undefined) return 'new';
  return previous.hash === hash ? 'unchanged' : 'changed';
}
