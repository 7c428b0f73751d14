import { PassThrough } from 'node:stream';
import { multipartParser, MultipartRefusedError } from './multipart';

const BOUNDARY = 'lore-boundary';
const headers = { 'content-type': `multipart/form-data; boundary=${BOUNDARY}` };
const part = (name: string, filename: string, content: string) =>
  `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"; filename="${filename}"\r\nContent-Type: text/csv\r\n\r\n${content}`;

/** Feeds `body` to a parser whose `file` parts `onFile` handles; resolves with the parser's error, or null at its close. */
function parse(body: string, onFile: (name: string, stream: NodeJS.ReadableStream, filename: string) => void): Promise<Error | null> {
  return new Promise((resolve) => {
    const parser = multipartParser(headers, { files: 2, fileSize: 1024 }, 'send multipart');
    parser.on('file', (name, stream, info) => onFile(name, stream, info.filename ?? ''));
    parser.on('error', (err: Error) => resolve(err));
    parser.on('close', () => resolve(null));
    const source = new PassThrough();
    source.pipe(parser);
    source.end(body);
  });
}

describe('multipartParser', () => {
  it('answers a body cut inside a drained part with the parser error alone, not an unhandled stream error', async () => {
    // The closing boundary never comes: busboy fails the open part's stream and the parser. Without the guard the
    // part's error has no listener, and Node ends the process (jest reports it as an uncaught error).
    const drained: string[] = [];
    const err = await parse(`${part('other', 'a.csv', 'name,company\r\nA,B\r\n')}`, (name, stream) => {
      drained.push(name);
      stream.resume();
    });
    expect(drained).toEqual(['other']);
    expect(err?.message).toBe('Unexpected end of form');
  });

  it('lets a reader of a cut part see its error, and the parser say why', async () => {
    const seen: string[] = [];
    const err = await parse(part('file', 'a.csv', 'name\r\nA\r\n'), (_name, stream) => {
      stream.on('data', () => undefined);
      stream.on('error', (e: Error) => seen.push(e.message));
    });
    expect(err?.message).toBe('Unexpected end of form');
    expect(seen).toEqual(['Unexpected end of form']);
  });

  it('refuses, before reading, a coded body and one that is not multipart (415) and one without a boundary (400)', () => {
    const refusal = (h: Record<string, string>) => {
      try {
        multipartParser(h, {}, 'send multipart');
        return null;
      } catch (err) {
        return err instanceof MultipartRefusedError ? [err.code, err.message] : err;
      }
    };
    expect(refusal({ ...headers, 'content-encoding': 'gzip' })).toEqual(['UNSUPPORTED_MEDIA_TYPE', 'request bodies are not decoded: send the body without Content-Encoding (got gzip)']);
    expect(refusal({ ...headers, 'content-encoding': 'identity' })).toBeNull();
    expect(refusal({ 'content-type': 'application/json' })).toEqual(['UNSUPPORTED_MEDIA_TYPE', 'send multipart']);
    expect(refusal({ 'content-type': 'multipart/form-datax; boundary=a' })).toEqual(['UNSUPPORTED_MEDIA_TYPE', 'send multipart']);
    expect(refusal({ 'content-type': 'multipart/form-data' })).toEqual(['BAD_REQUEST', 'the multipart body is malformed']);
    expect(refusal({ 'content-type': 'Multipart/Form-Data; boundary=' })).toEqual(['BAD_REQUEST', 'the multipart body is malformed']);
  });

  it('reads file names as UTF-8, as browsers and curl send them', async () => {
    const names: string[] = [];
    const err = await parse(`${part('file', 'Übersicht.csv', 'x')}\r\n--${BOUNDARY}--\r\n`, (_name, stream, filename) => {
      names.push(filename);
      stream.resume();
    });
    expect(err).toBeNull();
    expect(names).toEqual(['Übersicht.csv']);
  });
});
