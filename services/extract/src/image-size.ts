/**
 * Width and height as an image's header declares them, read without decoding a pixel, for the image formats
 * `detectKind` accepts. The OCR engine allocates memory for every declared pixel before it reads one: a 400 KB PNG
 * that claims 20000×20000 pixels costs over 3 GB of the process's memory, enough for a container to be killed. So
 * the declared size is checked first. `null` when the header cannot be read (the OCR engine then refuses the
 * file itself).
 */
export interface ImageSize {
  width: number;
  height: number;
}

/** The most pixels an image (or a scanned PDF page) may have to be recognised: about 420 MB in the OCR engine. */
export const MAX_OCR_PIXELS = 40_000_000;

function png(b: Buffer): ImageSize | null {
  if (b.length < 24 || b.subarray(12, 16).toString('latin1') !== 'IHDR') return null;
  return { width: b.readUInt32BE(16), height: b.readUInt32BE(20) };
}

function jpeg(b: Buffer): ImageSize | null {
  let i = 2;
  while (i + 9 < b.length) {
    if (b[i] !== 0xff) return null;
    const marker = b[i + 1]!;
    if (marker === 0xff) {
      i += 1; // fill byte
      continue;
    }
    // Start-of-frame markers carry the size; C4 (Huffman tables), C8 (reserved) and CC (arithmetic coding) do not.
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
      return { width: b.readUInt16BE(i + 7), height: b.readUInt16BE(i + 5) };
    }
    if ((marker >= 0xd0 && marker <= 0xd9) || marker === 0x01) {
      i += 2; // markers without a length
      continue;
    }
    i += 2 + b.readUInt16BE(i + 2);
  }
  return null;
}

function webp(b: Buffer): ImageSize | null {
  if (b.length < 30) return null;
  const chunk = b.subarray(12, 16).toString('latin1');
  if (chunk === 'VP8 ') return { width: b.readUInt16LE(26) & 0x3fff, height: b.readUInt16LE(28) & 0x3fff };
  if (chunk === 'VP8L') {
    const bits = b.readUInt32LE(21);
    return { width: (bits & 0x3fff) + 1, height: ((bits >>> 14) & 0x3fff) + 1 };
  }
  if (chunk === 'VP8X') return { width: b.readUIntLE(24, 3) + 1, height: b.readUIntLE(27, 3) + 1 };
  return null;
}

function tiff(b: Buffer): ImageSize | null {
  const le = b[0] === 0x49;
  const u16 = (o: number) => (le ? b.readUInt16LE(o) : b.readUInt16BE(o));
  const u32 = (o: number) => (le ? b.readUInt32LE(o) : b.readUInt32BE(o));
  if (b.length < 8) return null;
  const ifd = u32(4);
  if (ifd + 2 > b.length) return null;
  const entries = Math.min(u16(ifd), 1000);
  let width: number | null = null;
  let height: number | null = null;
  for (let n = 0; n < entries; n += 1) {
    const e = ifd + 2 + n * 12;
    if (e + 12 > b.length) break;
    const tag = u16(e);
    if (tag !== 256 && tag !== 257) continue;
    const value = u16(e + 2) === 3 ? u16(e + 8) : u32(e + 8);
    if (tag === 256) width = value;
    else height = value;
  }
  return width !== null && height !== null ? { width, height } : null;
}

function netpbm(b: Buffer): ImageSize | null {
  const m = /^P[1-6]\s+(?:#[^\n]*\n\s*)*(\d{1,9})\s+(\d{1,9})/.exec(b.subarray(0, 512).toString('latin1'));
  return m ? { width: Number(m[1]), height: Number(m[2]) } : null;
}

export function imageSize(b: Buffer): ImageSize | null {
  try {
    const head = b.subarray(0, 12).toString('latin1');
    if (b[0] === 0x89 && head.startsWith('PNG', 1)) return png(b);
    if (b[0] === 0xff && b[1] === 0xd8) return jpeg(b);
    if (head.startsWith('GIF8') && b.length >= 10) return { width: b.readUInt16LE(6), height: b.readUInt16LE(8) };
    if (head.startsWith('BM') && b.length >= 26) return { width: Math.abs(b.readInt32LE(18)), height: Math.abs(b.readInt32LE(22)) };
    if (head.startsWith('RIFF') && head.slice(8, 12) === 'WEBP') return webp(b);
    if (head.startsWith('II*\u0000') || head.startsWith('MM\u0000*')) return tiff(b);
    if (/^P[1-6]\s/.test(head)) return netpbm(b);
    return null;
  } catch {
    // A header shorter than its own fields: the OCR engine will refuse it.
    return null;
  }
}
