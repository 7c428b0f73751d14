// How far a file's compressed parts expand, counted before a reader inflates them. PDF.js and mammoth (through JSZip)
// inflate into ArrayBuffers, which a worker's heap ceiling does not bound: a 1.5 MB DOCX or PDF can expand to
// gigabytes and take the process's memory with it. The count streams each part through zlib and keeps nothing, so
// it costs CPU (in the worker, off the service's thread) and no memory.
import { createInflate, createInflateRaw } from 'node:zlib';

/** Thrown by a reader whose file expands past MAX_INFLATED_BYTES; the thread answers `{ ok: false, error: 'too_large' }`. */
export class TooLarge extends Error {}

/** The most a document may expand to: the text of a 25 MiB document fits many times over. */
export const MAX_INFLATED_BYTES = 256 * 1024 * 1024;

/** Bytes `data` inflates to (raw deflate or zlib-wrapped), counted without keeping them; past `limit` it stops. */
export function inflatedSize(data, { raw, limit }) {
  return new Promise((resolve) => {
    const z = raw ? createInflateRaw() : createInflate();
    let total = 0;
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      resolve(total);
    };
    z.on('data', (chunk) => {
      total += chunk.length;
      if (total > limit) {
        finish();
        z.destroy();
      }
    });
    // A damaged stream counts what it gave before the damage (the reader will fail on it, or read that much).
    z.on('error', finish);
    z.on('end', finish);
    z.on('close', finish);
    z.end(data);
  });
}

/**
 * What a ZIP (a DOCX) expands to: every entry of its central directory, stored ones by their size, deflated ones
 * inflated and counted. Null when it is not a readable ZIP (the reader then says so); past `limit` it stops.
 */
export async function zipInflatedSize(buf, limit = MAX_INFLATED_BYTES) {
  let eocd = -1;
  for (let i = buf.length - 22; i >= Math.max(0, buf.length - 65_557); i -= 1) {
    if (buf.readUInt32LE(i) === 0x06054b50) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) return null;
  const entries = buf.readUInt16LE(eocd + 10);
  let p = buf.readUInt32LE(eocd + 16);
  let total = 0;
  for (let n = 0; n < entries; n += 1) {
    if (p + 46 > buf.length || buf.readUInt32LE(p) !== 0x02014b50) return null;
    const method = buf.readUInt16LE(p + 10);
    const compressed = buf.readUInt32LE(p + 20);
    const declared = buf.readUInt32LE(p + 24);
    const local = buf.readUInt32LE(p + 42);
    p += 46 + buf.readUInt16LE(p + 28) + buf.readUInt16LE(p + 30) + buf.readUInt16LE(p + 32);
    // ZIP64 sizes: no DOCX needs them.
    if (compressed === 0xffffffff || declared === 0xffffffff) return Infinity;
    if (local + 30 > buf.length || buf.readUInt32LE(local) !== 0x04034b50) return null;
    const start = local + 30 + buf.readUInt16LE(local + 26) + buf.readUInt16LE(local + 28);
    const data = buf.subarray(start, Math.min(buf.length, start + compressed));
    if (method === 8) total += await inflatedSize(data, { raw: true, limit: limit - total });
    else total += method === 0 ? data.length : declared;
    if (total > limit) return total;
  }
  return total;
}

const OBJECT_HEADER = /\d+\s+\d+\s+obj\b/g;

/**
 * What a PDF's Flate-compressed streams other than images expand to (content streams, object streams, fonts: what
 * PDF.js inflates to read text; images are decoded only for OCR, with a pixel bound of their own). Each `stream`
 * keyword's data up to its `endstream`, the object's dictionary read back to its `n g obj` header. Past `limit` it
 * stops.
 */
export async function pdfInflatedSize(buf, limit = MAX_INFLATED_BYTES) {
  let total = 0;
  let from = 0;
  for (;;) {
    const kw = buf.indexOf('stream', from, 'latin1');
    if (kw < 0) break;
    from = kw + 6;
    // `endstream` holds `stream` too; and the keyword ends its line.
    if (kw >= 3 && buf.toString('latin1', kw - 3, kw) === 'end') continue;
    let start = kw + 6;
    if (buf[start] === 0x0d) start += 1;
    if (buf[start] !== 0x0a) continue;
    start += 1;
    const end = buf.indexOf('endstream', start, 'latin1');
    if (end < 0) break;
    const before = buf.toString('latin1', Math.max(0, kw - 4096), kw);
    let header = 0;
    for (const m of before.matchAll(OBJECT_HEADER)) header = m.index;
    const dict = before.slice(header);
    if (/\/FlateDecode\b/.test(dict) && !/\/Subtype\s*\/Image\b/.test(dict)) {
      total += await inflatedSize(buf.subarray(start, end), { raw: false, limit: limit - total });
      if (total > limit) return total;
    }
    from = end + 9;
  }
  return total;
}
