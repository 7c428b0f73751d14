import type { PageLink } from './web-page';

/**
 * Which URLs a `web` connector reads: the base URL's origin, under the base URL's path. Pure; see "Connector
 * sources" in docs/core.md.
 */

export interface CrawlScope {
  origin: string;
  /** Paths starting with this are in scope (always ends with `/`). */
  pathPrefix: string;
  /** The base path itself when it names a directory without its slash (`/docs` for `/docs/`), else null. */
  exactPath: string | null;
}

/**
 * The scope of a base URL. A path ending in `/` is a directory; a last segment with a dot is a page, whose
 * directory is the scope (`/docs/intro.html` → `/docs/`); any other last segment is read as a directory
 * (`/docs` → `/docs` and `/docs/…`).
 */
export function crawlScope(baseUrl: string): CrawlScope {
  const url = new URL(baseUrl);
  const path = url.pathname;
  if (path.endsWith('/')) return { origin: url.origin, pathPrefix: path, exactPath: null };
  const last = path.slice(path.lastIndexOf('/') + 1);
  if (last.includes('.')) return { origin: url.origin, pathPrefix: path.slice(0, path.lastIndexOf('/') + 1), exactPath: null };
  return { origin: url.origin, pathPrefix: `${path}/`, exactPath: path };
}

export function inScope(url: string, scope: CrawlScope): boolean {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return false;
  }
  return u.origin === scope.origin && (u.pathname.startsWith(scope.pathPrefix) || u.pathname === scope.exactPath);
}

/**
 * Extensions that announce a file the web source does not read (images, media, archives, office files other than
 * DOCX, fonts, scripts): such links are not fetched at all. A page whose Content-Type turns out to be one of them
 * is skipped after the fetch. PDF, DOCX, CSV and JSON are read (`fileType`).
 */
const UNSUPPORTED_EXTENSIONS = new Set(
  (
    'png jpg jpeg gif webp avif svg ico bmp tif tiff heic mp3 mp4 m4a m4v avi mov mkv webm ogg oga ogv wav flac ' +
    'zip gz tgz bz2 xz tar rar 7z exe msi dmg iso bin apk deb rpm woff woff2 ttf otf eot css js mjs map ' +
    'doc xls xlsx ppt pptx odt ods odp rtf epub'
  ).split(' '),
);

export function hasUnsupportedExtension(url: string): boolean {
  let path: string;
  try {
    path = new URL(url).pathname;
  } catch {
    return false;
  }
  const last = path.slice(path.lastIndexOf('/') + 1);
  const dot = last.lastIndexOf('.');
  return dot > 0 && UNSUPPORTED_EXTENSIONS.has(last.slice(dot + 1).toLowerCase());
}

/** Media types read as documents: HTML, and plain text (Markdown served as text included). */
export function readableType(contentType: string | null): 'html' | 'text' | null {
  if (contentType === 'text/html' || contentType === 'application/xhtml+xml') return 'html';
  if (contentType === 'text/plain' || contentType === 'text/markdown' || contentType === 'text/x-markdown') return 'text';
  return null;
}

/** Files the web source reads with the shared file extractor (`file-text.ts`), as the file and Drive sources do. */
export type WebFileType = 'pdf' | 'docx' | 'csv' | 'json';

const FILE_TYPES: Readonly<Record<string, WebFileType>> = {
  'application/pdf': 'pdf',
  'application/x-pdf': 'pdf',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': 'docx',
  'text/csv': 'csv',
  'application/csv': 'csv',
  'application/json': 'json',
};

/**
 * The file a response is, by its media type: PDF, DOCX, CSV or JSON; a response without a type or typed
 * `application/octet-stream` counts when its URL's extension names one of them (servers often send PDFs so). Null
 * for everything else (HTML and plain text are `readableType`'s).
 */
export function fileType(contentType: string | null, url: string): WebFileType | null {
  if (contentType !== null && contentType !== 'application/octet-stream') return FILE_TYPES[contentType] ?? null;
  let path: string;
  try {
    path = new URL(url).pathname;
  } catch {
    return null;
  }
  const ext = /\.([a-z]+)$/i.exec(path)?.[1]?.toLowerCase();
  return ext === 'pdf' || ext === 'docx' || ext === 'csv' || ext === 'json' ? ext : null;
}

/** Files that cannot be cut (a cut PDF is no PDF): read whole, up to the extractor's file limit. */
export function readsWhole(type: WebFileType): boolean {
  return type !== 'csv';
}

/**
 * The links of a page a crawl follows, in page order, each once: not `rel="nofollow"`, in scope, not announcing an
 * unsupported file. A page whose robots directives say `nofollow` has none.
 */
export function linksToFollow(links: readonly PageLink[], scope: CrawlScope, pageNofollow: boolean): string[] {
  if (pageNofollow) return [];
  const out: string[] = [];
  const seen = new Set<string>();
  for (const link of links) {
    if (link.nofollow || seen.has(link.url)) continue;
    seen.add(link.url);
    if (inScope(link.url, scope) && !hasUnsupportedExtension(link.url)) out.push(link.url);
  }
  return out;
}
