import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import busboy from 'busboy';

export type MultipartLimits = busboy.Limits;
export type MultipartParser = busboy.Busboy;

/**
 * The one way a Lore service starts reading a multipart/form-data body: busboy over the request's headers, with
 *
 * - file names read as UTF-8 (browsers and curl send them raw; busboy's default, Latin-1, garbles `Übersicht.csv`);
 * - every file part's stream guarded against its own error. A body that ends inside a file part (a client that
 *   sent half of it, a proxy that cut it) fails that part's stream as well as the parser. The parser's `error` is the
 *   route's to answer (400); the part's would be an `error` event nobody listens to, which ends the whole process
 *   (in embedded mode every service of every tenant). The guard is the first `file` listener, so it is in place for
 *   parts a route drains (`resume()`) as much as for those it reads; whoever reads a part still sees its error.
 *
 * A body it cannot read is refused before a byte is read, with a `MultipartRefusedError` the route answers in its
 * own family: 415 for a body with a content coding (Lore decodes none, as for every other body) or one that is not
 * multipart/form-data (`notMultipart`, the route's words for what to send), 400 for multipart/form-data without a
 * usable boundary.
 */
export function multipartParser(headers: IncomingHttpHeaders, limits: MultipartLimits, notMultipart: string): MultipartParser {
  const coding = String(headers['content-encoding'] ?? '').trim().toLowerCase();
  if (coding !== '' && coding !== 'identity') {
    throw new MultipartRefusedError('UNSUPPORTED_MEDIA_TYPE', `request bodies are not decoded: send the body without Content-Encoding (got ${coding.slice(0, 40)})`);
  }
  if (!/^multipart\/form-data\s*(;|$)/i.test(String(headers['content-type'] ?? '').trim())) throw new MultipartRefusedError('UNSUPPORTED_MEDIA_TYPE', notMultipart);
  let parser: MultipartParser;
  try {
    parser = busboy({ headers, defParamCharset: 'utf8', limits });
  } catch {
    throw new MultipartRefusedError('BAD_REQUEST', 'the multipart body is malformed');
  }
  parser.on('file', (_name, stream) => {
    stream.on('error', () => undefined);
  });
  return parser;
}

/**
 * Feeds a request's body to its parser. A client that leaves in the middle (its connection closes before the body's
 * end) ends the parser's input there: the body then ends inside a part, so the parser and that part's stream fail
 * ("Unexpected end of form"), and whoever reads them (a blob store writing the file) stops waiting. `pipe` alone never
 * ends its destination when its source is destroyed: before 2026-11-30 an upload abandoned halfway kept its route
 * waiting for good, with no answer, no access line and its write open.
 */
export function feedMultipart(req: IncomingMessage, parser: MultipartParser): void {
  req.pipe(parser);
  req.once('close', () => {
    if (!req.complete && !parser.writableEnded) parser.end();
  });
}

/** Why a body cannot be read as multipart/form-data; `code` is the AppError code the route answers with. */
export class MultipartRefusedError extends Error {
  constructor(
    readonly code: 'BAD_REQUEST' | 'UNSUPPORTED_MEDIA_TYPE',
    message: string,
  ) {
    super(message);
    this.name = 'MultipartRefusedError';
  }
}
