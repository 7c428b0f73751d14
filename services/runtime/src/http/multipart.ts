import type { IncomingHttpHeaders } from 'node:http';
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
 * Throws as busboy does when the headers are not multipart/form-data with a boundary (the route's 415).
 */
export function multipartParser(headers: IncomingHttpHeaders, limits: MultipartLimits): MultipartParser {
  const parser = busboy({ headers, defParamCharset: 'utf8', limits });
  parser.on('file', (_name, stream) => {
    stream.on('error', () => undefined);
  });
  return parser;
}
