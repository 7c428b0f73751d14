import { detectDelimiter, readTable } from './tabular';

const limits = { maxRows: 3, maxColumns: 4, maxFieldChars: 20 };
const read = (text: string | Uint8Array) => readTable(typeof text === 'string' ? Buffer.from(text) : text, limits);

describe('readTable', () => {
  it('reads a header and trimmed rows, with the delimiter the header uses', () => {
    expect(read('Name, Company\n Ada ,Initech\n\nGrace,Umbrella\n')).toEqual({ ok: true, header: ['Name', 'Company'], rows: [['Ada', 'Initech'], ['Grace', 'Umbrella']] });
    expect(read('Name;Company\nAda;"Initech; Berlin"\n')).toEqual({ ok: true, header: ['Name', 'Company'], rows: [['Ada', 'Initech; Berlin']] });
    expect(read('Name\tCompany\nAda\tInitech\n')).toMatchObject({ ok: true, rows: [['Ada', 'Initech']] });
    expect(detectDelimiter('"a,b"|c|d')).toBe('|');
  });

  it.each([
    ['', /empty/],
    ['  \n\n', /empty/],
    ['Name,Company\n', /header and no rows/],
    ['Name,Company\n"Ada,Initech\n', /never closed/],
    ['Name,Company\nAda,Initech,Berlin\n', /different number of fields/],
    ['Name,Name\nA,B\n', /twice/],
    ['Name,\nA,B\n', /names no column 2/],
    ['a,b,c,d,e\n1,2,3,4,5\n', /5 columns; at most 4/],
    ['a\n1\n2\n3\n4\n', /more than 3 rows/],
    ['a\n123456789012345678901\n', /longer than 20 characters/],
  ])('refuses %j with a reason', (text, reason) => {
    const r = read(text);
    expect(r.ok).toBe(false);
    expect(r.ok ? '' : r.reason).toMatch(reason);
  });

  it('reads a row of as many fields as a row may have, each as long as a field may be', () => {
    const full = Array.from({ length: 4 }, (_, i) => String(i).repeat(20));
    expect(read(`a,b,c,d\n${full.join(',')}\n`)).toEqual({ ok: true, header: ['a', 'b', 'c', 'd'], rows: [full] });
    // A quoted field that runs on past what a whole row may hold is refused, naming the bound.
    expect(read(`a,b\n"${'x'.repeat(200)}\n,y\n`)).toEqual({ ok: false, reason: expect.stringMatching(/longer than 84 characters .*unclosed quote/) });
  });

  it('refuses bytes that are not UTF-8 text, and binary data', () => {
    expect(read(new Uint8Array([0x4e, 0x61, 0xff, 0x0a]))).toEqual({ ok: false, reason: expect.stringMatching(/not UTF-8/) });
    expect(read('a,b\n\u0001\u0002,x\n')).toEqual({ ok: false, reason: expect.stringMatching(/binary/) });
    // A NUL far into the file too: PostgreSQL text cannot hold it.
    const late = readTable(Buffer.from(`a\n${'x\n'.repeat(5_000)}y\u0000z\n`), { ...limits, maxRows: 10_000 });
    expect(late).toEqual({ ok: false, reason: expect.stringMatching(/binary/) });
  });
});
