import { looksBinary } from './web';

describe('binary bodies under a text type', () => {
  it('knows file signatures and NULs, and leaves text alone (UTF-16 with its mark included)', () => {
    expect(looksBinary(Buffer.from('%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj', 'latin1'))).toBe(true);
    expect(looksBinary(Buffer.from([0x1f, 0x8b, 0x08, 0x00]))).toBe(true);
    expect(looksBinary(Buffer.from('PK\x03\x04rest', 'latin1'))).toBe(true);
    expect(looksBinary(Buffer.from('<html>\0</html>'))).toBe(true);
    expect(looksBinary(Buffer.from('<html><body>Grüße, 東京</body></html>'))).toBe(false);
    expect(looksBinary(Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('<p>hi</p>', 'utf16le')]))).toBe(false);
    expect(looksBinary(Buffer.alloc(0))).toBe(false);
  });
});
