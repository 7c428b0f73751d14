import { PassThrough } from 'node:stream';
import { PNG } from 'pngjs';
import * as PImage from 'pureimage';
import { extractDocument, UnsupportedFileError, type ExtractOptions } from './index';
import { imageSize } from './image-size';
import { TesseractOcr } from './ocr';

function pngOf(width: number, height: number): Buffer {
  const png = new PNG({ width, height });
  png.data.fill(255);
  return PNG.sync.write(png);
}

async function jpegOf(width: number, height: number): Promise<Buffer> {
  const img = PImage.make(width, height);
  const chunks: Buffer[] = [];
  const out = new PassThrough();
  out.on('data', (c: Buffer) => chunks.push(c));
  await PImage.encodeJPEGToStream(img, out, 80);
  return Buffer.concat(chunks);
}

describe('declared image sizes', () => {
  it('reads PNG and JPEG files made by real encoders', async () => {
    expect(imageSize(pngOf(37, 21))).toEqual({ width: 37, height: 21 });
    expect(imageSize(await jpegOf(45, 13))).toEqual({ width: 45, height: 13 });
  });

  it('reads the GIF, BMP, WebP, TIFF and PBM headers as their formats define them', () => {
    const gif = Buffer.concat([Buffer.from('GIF89a'), Buffer.from([0x10, 0x27, 0x20, 0x4e])]);
    expect(imageSize(gif)).toEqual({ width: 10000, height: 20000 });
    const bmp = Buffer.alloc(26);
    bmp.write('BM', 0, 'latin1');
    bmp.writeInt32LE(640, 18);
    bmp.writeInt32LE(-480, 22); // top-down bitmaps store a negative height
    expect(imageSize(bmp)).toEqual({ width: 640, height: 480 });
    const vp8x = Buffer.alloc(30);
    vp8x.write('RIFF', 0, 'latin1');
    vp8x.write('WEBPVP8X', 8, 'latin1');
    vp8x.writeUIntLE(8191, 24, 3);
    vp8x.writeUIntLE(4095, 27, 3);
    expect(imageSize(vp8x)).toEqual({ width: 8192, height: 4096 });
    const tiff = Buffer.alloc(8 + 2 + 2 * 12);
    tiff.write('II*\u0000', 0, 'latin1');
    tiff.writeUInt32LE(8, 4);
    tiff.writeUInt16LE(2, 8);
    tiff.writeUInt16LE(256, 10); // ImageWidth, SHORT
    tiff.writeUInt16LE(3, 12);
    tiff.writeUInt32LE(1, 14);
    tiff.writeUInt16LE(1200, 18);
    tiff.writeUInt16LE(257, 22); // ImageLength, LONG
    tiff.writeUInt16LE(4, 24);
    tiff.writeUInt32LE(1, 26);
    tiff.writeUInt32LE(90000, 30);
    expect(imageSize(tiff)).toEqual({ width: 1200, height: 90000 });
    expect(imageSize(Buffer.from('P4\n# scanner\n2480 3508\n'))).toEqual({ width: 2480, height: 3508 });
  });

  it('gives up on headers that are cut or unknown instead of throwing', () => {
    expect(imageSize(pngOf(5, 5).subarray(0, 20))).toBeNull();
    expect(imageSize(Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00]))).toBeNull();
    expect(imageSize(Buffer.from('RIFF\u0000\u0000\u0000\u0000WEBP'))).toBeNull();
    expect(imageSize(Buffer.from('MM\u0000*\u0000\u0000\u0000'))).toBeNull();
    expect(imageSize(Buffer.from('hello'))).toBeNull();
  });
});

describe('images too large to recognise', () => {
  const ocr = new TesseractOcr({ timeoutMs: 60_000 });
  afterAll(() => ocr.close());
  const options: ExtractOptions = { ocr, pdfTimeoutMs: 10_000, maxPdfPages: 10, ocrBelowChars: 20, maxOcrImages: 5 };

  it('are refused with their size before the OCR engine allocates a pixel; smaller ones are read', async () => {
    // 20000×20000 pixels, a few hundred bytes once compressed: the engine would take over 3 GB for it.
    const bomb = Buffer.concat([pngOf(1, 1).subarray(0, 16), Buffer.from([0, 0, 0x4e, 0x20, 0, 0, 0x4e, 0x20]), pngOf(1, 1).subarray(24)]);
    const err = await extractDocument('image', bomb, options).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnsupportedFileError);
    expect((err as Error).message).toBe('the image is too large to read: 20000×20000 pixels (at most 40 million)');
    await expect(extractDocument('image', pngOf(100, 100), options)).resolves.toMatchObject({ extractor: 'ocr', ocr: true });
  }, 60_000);
});
