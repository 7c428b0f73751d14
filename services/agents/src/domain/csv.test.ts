import { charCount, clip, decodeCsv, decodeWindows1252, detectDelimiter, looksBinary, readCsv, DEFAULT_CSV_LIMITS, MAX_HEADER_CHARS, MAX_LISTED_PROBLEMS } from './csv';
import { describeColumn, directoryDocument, directoryMapping, fieldKeyOf, humanize } from './csv-columns';

/** No lone surrogate (jsonb refuses one). */
const wellFormed = (v: string) => !/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(v);
const read = (text: string | Buffer, limits = DEFAULT_CSV_LIMITS) => readCsv(typeof text === 'string' ? Buffer.from(text) : text, limits);

describe('decodeCsv', () => {
  it('takes the encoding from a byte-order mark, else UTF-8 when valid, else windows-1252', () => {
    expect(decodeCsv(Buffer.from([0xef, 0xbb, 0xbf, 0x61]))).toEqual({ text: 'a', encoding: 'utf-8', bom: true });
    expect(decodeCsv(Buffer.from([0xff, 0xfe, 0x61, 0x00]))).toEqual({ text: 'a', encoding: 'utf-16le', bom: true });
    expect(decodeCsv(Buffer.from([0xfe, 0xff, 0x00, 0x61]))).toEqual({ text: 'a', encoding: 'utf-16be', bom: true });
    expect(decodeCsv(Buffer.from('Köln'))).toEqual({ text: 'Köln', encoding: 'utf-8', bom: false });
    expect(decodeCsv(Buffer.from([0x4b, 0xf6, 0x6c, 0x6e, 0x80]))).toEqual({ text: 'Köln€', encoding: 'windows-1252', bom: false });
  });

  it('never answers a lone surrogate (jsonb refuses one): UTF-16 halves become U+FFFD, UTF-8-encoded halves are not UTF-8', () => {
    // UTF-16LE: a high surrogate before 'A', a low one before 'B'.
    const le = decodeCsv(Buffer.from([0xff, 0xfe, 0x3d, 0xd8, 0x41, 0x00, 0x00, 0xdc, 0x42, 0x00]));
    expect(le.text).toBe('\ufffdA\ufffdB');
    expect(decodeCsv(Buffer.from([0xfe, 0xff, 0xd8, 0x3d])).text).toBe('\ufffd');
    // A surrogate encoded as UTF-8 (ED A0 BD) is no valid UTF-8: read as windows-1252.
    expect(decodeCsv(Buffer.from([0x61, 0xed, 0xa0, 0xbd]))).toMatchObject({ text: 'aí\u00a0½', encoding: 'windows-1252' });
    for (const { text } of [le, decodeCsv(Buffer.from([0x61, 0xed, 0xa0, 0xbd]))]) expect(wellFormed(text)).toBe(true);
  });

  it('maps windows-1252 bytes 0x80–0x9F to their characters', () => {
    expect(decodeWindows1252(Buffer.from([0x80, 0x93, 0x94, 0x96, 0x99, 0x9f, 0x81]))).toBe('€“”–™Ÿ\u0081');
  });
});

describe('detectDelimiter', () => {
  it('finds comma, semicolon and tab, ignoring delimiters inside quotes', () => {
    expect(detectDelimiter('a,b,c\n1,2,3\n')).toBe(',');
    expect(detectDelimiter('a;b;c\n"1,5";2;3\n')).toBe(';');
    expect(detectDelimiter('a\tb\n1,5\t2\n')).toBe('\t');
    expect(detectDelimiter('"x,y";b\n"1,2";3\n')).toBe(';');
    expect(detectDelimiter('single\nvalue\n')).toBe(',');
  });
});

describe('looksBinary', () => {
  it('tells binary data from text', () => {
    expect(looksBinary('a,b\n1,2\n')).toBe(false);
    expect(looksBinary('a\u0000b')).toBe(true);
    expect(looksBinary('\u0001\u0002\u0003\u0004\u0005 text')).toBe(true);
  });
});

describe('readCsv', () => {
  it('reads a header and rows, trimming values and keeping quoted delimiters and quotes', () => {
    const r = read('Name , City\r\n"Acme, Inc", Berlin \r\n\r\n"say ""hi""",Rome\r\n');
    expect(r).toEqual({ ok: true, file: { encoding: 'utf-8', bom: false, delimiter: ',', header: ['Name', 'City'], rows: [['Acme, Inc', 'Berlin'], ['say "hi"', 'Rome']] } });
  });

  it('lists every ragged row by its number (the header is row 1), and caps the list', () => {
    const r = read('a,b\n1,2\n3\n4,5,6\n');
    expect(r).toEqual({
      ok: false,
      encoding: 'utf-8',
      delimiter: ',',
      errors: [
        { row: 3, column: '', message: 'the row has 1 field; the header has 2', value: '3' },
        { row: 4, column: '', message: 'the row has 3 fields; the header has 2', value: '4,5,6' },
      ],
    });
    const many = read(`a,b\n${Array.from({ length: 150 }, () => 'x').join('\n')}\n`);
    expect(many.ok).toBe(false);
    if (!many.ok) {
      expect(many.errors).toHaveLength(MAX_LISTED_PROBLEMS + 1);
      expect(many.errors[MAX_LISTED_PROBLEMS]).toEqual({ row: 0, column: '', message: 'and 50 more problems', value: '' });
    }
  });

  it('refuses an unclosed quote, a stray quote, an empty file, a header alone and binary data', () => {
    const message = (t: string | Buffer) => {
      const r = read(t);
      return r.ok ? null : r.errors.map((e) => `${e.row}:${e.message}`);
    };
    expect(message('a,b\n1,"2\n3,4\n')).toEqual([expect.stringMatching(/^2:a quoted field is not closed/)]);
    expect(message('a,b\n1,"2"x\n')).toEqual([expect.stringMatching(/^2:a character follows a closing quote/)]);
    expect(message('')).toEqual(['0:the file is empty']);
    expect(message(Buffer.from([0xef, 0xbb, 0xbf]))).toEqual(['0:the file is empty']);
    expect(message('a,b\n')).toEqual(['0:the file has a header and no rows']);
    expect(message(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0x00, 0x01, 0x02]))).toEqual(['0:the file is not CSV text (it holds binary data)']);
  });

  it('applies the byte, column and row limits', () => {
    const limits = { maxBytes: 20, maxColumns: 2, maxRows: 2 };
    expect(read('a,b\n1,2\n3,4\n5,6\n7,8\n9,0\n', limits)).toMatchObject({ ok: false, errors: [{ message: 'the file is larger than 20 bytes' }] });
    expect(read('a,b,c\n1,2,3\n', limits)).toMatchObject({ ok: false, errors: [{ row: 1, message: 'the file has 3 columns; at most 2 are allowed' }] });
    expect(read('a,b\n1,2\n3,4\n5,6\n', { ...limits, maxBytes: 100 })).toMatchObject({ ok: false, errors: [{ row: 0, message: 'the file has more than 2 rows' }] });
    expect(read('a,b\n1,2\n3,4\n', { ...limits, maxBytes: 100 }).ok).toBe(true);
    expect(read('a,b\n1,2\n3,4\n', { ...limits, maxBytes: 100, maxRows: 1 })).toMatchObject({ ok: false, errors: [{ row: 0, message: 'the file has more than 1 row' }] });
  });

  it('refuses a column name longer than 200 characters (every restored cell repeats it)', () => {
    const long = 'h'.repeat(MAX_HEADER_CHARS + 1);
    expect(read(`a,${long}\n1,2\n`)).toMatchObject({ ok: false, errors: [{ row: 1, column: `${'h'.repeat(200)}…`, message: "the column's name is longer than 200 characters", value: '201' }] });
    expect(read(`a,${'h'.repeat(MAX_HEADER_CHARS)}\n1,2\n`).ok).toBe(true);
  });

  it('counts a column name in characters: 200 emoji pass, 201 are refused, the name cut between characters', () => {
    expect(read(`a,${'😀'.repeat(200)}\n1,2\n`).ok).toBe(true);
    const r = read(`a,${'😀'.repeat(201)}\n1,2\n`);
    expect(r).toEqual({ ok: false, encoding: 'utf-8', delimiter: ',', errors: [{ row: 1, column: `${'😀'.repeat(200)}…`, message: "the column's name is longer than 200 characters", value: '201' }] });
    // An emoji straddling the 200th UTF-16 unit is kept whole, never halved into a lone surrogate.
    const straddling = read(`${'a'.repeat(199)}😀x,b\n1,2\n`);
    expect(straddling).toMatchObject({ ok: false, errors: [{ row: 1, column: `${'a'.repeat(199)}😀…`, value: '201' }] });
    if (!straddling.ok) expect(wellFormed(straddling.errors[0]!.column)).toBe(true);
  });

  it('cuts a ragged row\'s value between characters, so the problem can be stored', () => {
    const r = read(`a,b\n${'x'.repeat(199)}😀yy\n`);
    expect(r).toMatchObject({ ok: false, errors: [{ row: 2, message: 'the row has 1 field; the header has 2', value: `${'x'.repeat(199)}😀…` }] });
    if (!r.ok) expect(wellFormed(r.errors[0]!.value)).toBe(true);
  });

  it('lists every field holding a NUL, past the binary check\'s first 64 KiB too, so such a file is never imported partway', () => {
    const before = Array.from({ length: 5000 }, (_, i) => `Co${i},c${i}.com`).join('\n');
    expect(before.length).toBeGreaterThan(64 * 1024);
    const r = read(`name,domain\n${before}\nBad\u0000Co,bad.com\nok,x\u0000\nfine,fine.com\n`);
    expect(r).toEqual({
      ok: false,
      encoding: 'utf-8',
      delimiter: ',',
      errors: [
        { row: 5002, column: 'name', message: 'the field holds a NUL character (binary data?), which cannot be stored', value: 'Bad\u2400Co' },
        { row: 5003, column: 'domain', message: 'the field holds a NUL character (binary data?), which cannot be stored', value: 'x\u2400' },
      ],
    });
    // In the header too (blank lines, skipped, put it past the sample); no problem's text holds the NUL itself.
    const head = read(`${'\n'.repeat(70_000)}n,x\u0000y\n1,2\n3,\u0000\n`);
    expect(head).toMatchObject({
      ok: false,
      errors: [
        { row: 1, column: 'x\u2400y', message: expect.stringMatching(/NUL/), value: 'x\u2400y' },
        { row: 3, column: 'x\u2400y', message: expect.stringMatching(/NUL/), value: '\u2400' },
      ],
    });
    if (!head.ok) expect(JSON.stringify(head.errors)).not.toContain('\\u0000');
  });
});

describe('clip and charCount', () => {
  it('count and cut in characters (code points), never through a surrogate pair', () => {
    expect(charCount('a😀b')).toBe(3);
    expect(clip('😀'.repeat(200))).toBe('😀'.repeat(200));
    expect(clip('😀'.repeat(201))).toBe(`${'😀'.repeat(200)}…`);
    expect(clip(`${'a'.repeat(199)}😀😀`)).toBe(`${'a'.repeat(199)}😀…`);
  });
});

describe('column descriptions', () => {
  it('suggests descriptions from the header, else from the sampled values', () => {
    expect(describeColumn('Website', ['https://acme.de'])).toEqual({ description: 'Company website (URL)', dataType: 'url' });
    expect(describeColumn('employees', ['12', '1,200'])).toEqual({ description: 'Number of employees', dataType: 'integer' });
    expect(describeColumn('company_name', ['Acme'])).toEqual({ description: 'Company name', dataType: 'text' });
    expect(describeColumn('LinkedIn URL', ['https://linkedin.com/in/x'])).toMatchObject({ description: 'LinkedIn or other profile URL' });
    expect(describeColumn('Contact Email', ['a@b.de'])).toEqual({ description: 'Email address', dataType: 'email' });
    expect(describeColumn('annualScore', ['1.5', '2'])).toEqual({ description: 'Annual score (number)', dataType: 'number' });
    expect(describeColumn('Signed', ['2024-01-02'])).toEqual({ description: 'Signed (date)', dataType: 'date' });
    expect(describeColumn('Notes', [])).toEqual({ description: 'Notes (text)', dataType: 'text' });
  });

  it('names fields the directory filters can reach', () => {
    expect(fieldKeyOf('Annual Revenue (USD)')).toBe('annual_revenue_usd');
    expect(fieldKeyOf('Straße')).toBe('stra_e');
    expect(fieldKeyOf('123')).toBeNull();
    expect(humanize('annual_revenue')).toBe('Annual revenue');
  });
});

describe('directory documents of rows', () => {
  it('makes a company of a name with a domain or website, and nothing of a row without one', () => {
    const m = directoryMapping(['Company', 'Website', 'Employees', 'City', 'Country', 'Tags', 'Stock Symbol']);
    expect(m.kind).toBe('company');
    expect(directoryDocument(m, ['Acme', 'acme.de', '1.200', 'Berlin', 'DE', 'b2b; robots', 'ACM'])).toEqual({
      name: 'Acme', website: 'acme.de', employees: 1200, location: { city: 'Berlin', country: 'DE' }, tags: ['b2b', 'robots'], stock_symbol: 'ACM',
    });
    expect(directoryDocument(m, ['Acme', '', '10', '', '', '', ''])).toBeNull();
  });

  it('makes a person of a name with a title, company or profile URL', () => {
    const m = directoryMapping(['First Name', 'Last Name', 'Title', 'Company', 'Company Domain']);
    expect(m.kind).toBe('person');
    expect(directoryDocument(m, ['Ada', 'Park', 'CTO', '', 'acme.de'])).toEqual({ name: 'Ada Park', title: 'CTO', company_domain: 'acme.de' });
    expect(directoryDocument(m, ['Ada', 'Park', '', '', ''])).toBeNull();
  });

  it('keeps columns named like an object\'s own properties (`constructor`, `__proto__`)', () => {
    const m = directoryMapping(['Company', 'Domain', 'constructor', '__proto__']);
    expect({ ...directoryDocument(m, ['Acme', 'acme.de', 'ctor', 'proto']) }).toEqual({ name: 'Acme', domain: 'acme.de', constructor: 'ctor', proto: 'proto' });
  });
});
