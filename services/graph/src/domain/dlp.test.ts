import { isCardNumber, isFrenchNir, isIban, isPhone, isSpanishId, luhnValid, scanAndMask, scanView, type DlpWork } from './dlp';

function nir(body: string): string {
  return `${body}${String(97 - Number(BigInt(body) % 97n)).padStart(2, '0')}`;
}

/** Each seeded secret, the kind it must be reported as, and a sentence around it. */
const SEEDED: Array<{ kind: string; value: string; text: (v: string) => string }> = [
  { kind: 'card_number', value: '4111 1111 1111 1111', text: (v) => `Charge the card ${v} for the renewal.` },
  { kind: 'card_number', value: '5555-5555-5555-4444', text: (v) => `Backup card: ${v}.` },
  { kind: 'card_number', value: '378282246310005', text: (v) => `Amex ${v} expires soon.` },
  { kind: 'iban', value: 'GB82 WEST 1234 5698 7654 32', text: (v) => `Wire the money to ${v} today.` },
  { kind: 'iban', value: 'DE89370400440532013000', text: (v) => `IBAN ${v}` },
  { kind: 'national_id', value: '123-45-6789', text: (v) => `Her SSN is ${v}.` },
  { kind: 'national_id', value: 'AB 12 34 56 C', text: (v) => `NI number ${v} on file.` },
  { kind: 'national_id', value: '12345678Z', text: (v) => `DNI ${v}.` },
  { kind: 'national_id', value: nir('1841276451089'), text: (v) => `NIR ${v}` },
  { kind: 'email', value: 'jane.doe+billing@example.co.uk', text: (v) => `Contact ${v} for invoices.` },
  { kind: 'phone', value: '+1 415 555 0132', text: (v) => `Call ${v} after 5pm.` },
  { kind: 'phone', value: '(415) 555-0199', text: (v) => `Office ${v}.` },
  { kind: 'phone', value: '+44 20 7946 0958', text: (v) => `London desk ${v}.` },
  { kind: 'api_key', value: 'AKIAIOSFODNN7EXAMPLE', text: (v) => `aws key ${v} in the runbook` },
  { kind: 'api_key', value: 'sk-proj-abcDEF1234567890ghijKLMNOP', text: (v) => `OPENAI ${v}` },
  { kind: 'api_key', value: `ghp_${'a1B2c3D4e5'.repeat(4)}`, text: (v) => `token ghp: ${v}` },
  { kind: 'api_key', value: 'ck_live_9f8e7d6c5b4a39281706', text: (v) => `our key ${v} (do not share)` },
  { kind: 'api_key', value: 'xoxb-1234567890-abcdefghij', text: (v) => `slack ${v}` },
  {
    kind: 'jwt',
    value: 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U',
    text: (v) => `session=${v}`,
  },
  {
    kind: 'private_key',
    value: '-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7bq\nZZ9abc==\n-----END RSA PRIVATE KEY-----',
    text: (v) => `deploy key:\n${v}\nend`,
  },
  { kind: 'url_password', value: 'hunter2-Secret', text: (v) => `DATABASE_URL=postgres://admin:${v}@db.internal:5432/app` },
  { kind: 'secret_assignment', value: 'CorrectHorse42', text: (v) => `password=${v}` },
  { kind: 'secret_assignment', value: 'Tr0ub4dor&3', text: (v) => `The wifi password is ${v} for guests.` },
  // Environment-variable style names: the name starts after an underscore, where `\b` sees no boundary.
  { kind: 'secret_assignment', value: 'pg-Sup3rS3cret', text: (v) => `DB_PASSWORD=${v}` },
  { kind: 'secret_assignment', value: 'postgresPw2024', text: (v) => `export POSTGRES_PASSWORD="${v}"` },
  { kind: 'secret_assignment', value: 'r00tMysqlPass', text: (v) => `environment:\n  MYSQL_ROOT_PASSWORD: ${v}\n` },
  { kind: 'secret_assignment', value: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY', text: (v) => `AWS_SECRET_ACCESS_KEY=${v}` },
  { kind: 'secret_assignment', value: 'GhActionsTok3n9', text: (v) => `GITHUB_TOKEN=${v} npm publish` },
  { kind: 'secret_assignment', value: 'd3adb33fBase64Key', text: (v) => `DJANGO_SECRET_KEY='${v}'` },
  { kind: 'url_password', value: 'R3disOnlyPw', text: (v) => `REDIS_URL=redis://:${v}@cache.internal:6379/0` },
  { kind: 'iban', value: 'de89 3704 0044 0532 0130 00', text: (v) => `pay the rent to iban ${v} for the flat` },
  { kind: 'iban', value: 'gb82west12345698765432', text: (v) => `account ${v}.` },
  { kind: 'phone', value: '+49 30 12345678', text: (v) => `Berlin office ${v}, ask for Jan.` },
  { kind: 'phone', value: '030 12345678', text: (v) => `Tel. ${v}` },
  {
    kind: 'api_key',
    value: 'https://hooks.slack.com/services/T0ABCDEF1/B0GHIJKL2/abcdefghijklmnopqrstuvwx',
    text: (v) => `Alerts post to ${v} from the deploy job.`,
  },
];

describe('DLP masking', () => {
  it.each(SEEDED)('masks a $kind and reports it', ({ kind, value, text }) => {
    const input = text(value);
    const r = scanAndMask(input);
    expect(r.text).not.toContain(value);
    expect(r.text).toContain(`[REDACTED:${kind}]`);
    expect(r.kinds[kind as keyof typeof r.kinds]).toBeGreaterThanOrEqual(1);
    expect(r.matches).toBeGreaterThanOrEqual(1);
  });

  it('masks every seeded secret in one document and counts each once', () => {
    const doc = SEEDED.map((s) => s.text(s.value)).join('\n\n');
    const r = scanAndMask(doc);
    for (const s of SEEDED) expect(r.text).not.toContain(s.value);
    expect(r.matches).toBe(SEEDED.length);
  });

  it('leaves ordinary business text alone', () => {
    const text =
      'Invoice 2024-05-01 for order 12345678901 totals 1,250.00 EUR. Version 1.2.3 shipped on 03/04/2024. ' +
      'Call the team at the stand-up. Our token budget is 4000. The password is stored in the vault.';
    const r = scanAndMask(text);
    expect(r.matches).toBe(0);
    expect(r.text).toBe(text);
  });

  it('leaves names that only contain a secret word, and placeholders, alone', () => {
    const text =
      'MAX_TOKENS=4096 PASSWORD_FILE=/run/secrets/db DB_PASSWORD=changeme GITHUB_TOKEN=${{ secrets.TOKEN }} ' +
      'token_count: 12 password_policy=strict mypassword=abcdefgh1';
    const r = scanAndMask(text);
    expect(r.text).toBe(text);
    expect(r.matches).toBe(0);
  });

  it('masks exactly the IBAN in lowercase prose, not the words after it', () => {
    expect(scanAndMask('send it to gb82 west 1234 5698 7654 32 today please').text).toBe('send it to [REDACTED:iban] today please');
    expect(scanAndMask('de89370400440532013000x').matches).toBe(0);
  });

  it('masks every value of a document at the content limit, however many there are', () => {
    // 55,000 e-mail addresses in 495,000 characters (the content limit is 500,000): more than any fixed cap.
    const n = 55_000;
    const parts: string[] = [];
    for (let i = 0; i < n; i += 1) parts.push(`${String.fromCharCode(97 + (i % 26))}${i % 10}@ex.io`);
    const text = parts.join(' ').padEnd(495_000, ' ');
    expect(text.length).toBe(495_000);
    const started = Date.now();
    const r = scanAndMask(text);
    expect(r.matches).toBe(n);
    expect(r.kinds).toEqual({ email: n });
    expect(r.text).not.toMatch(/@ex\.io/);
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('masks before it cuts: a value across the cut is neither kept in part nor counted', () => {
    const text = `${'x'.repeat(95)} 4111 1111 1111 1111 and more text after it`;
    // Cutting first would keep "4111 1" in clear: no detector recognises half a card number.
    expect(scanAndMask(text.slice(0, 100)).text).toContain('4111');
    const r = scanAndMask(text, { maxChars: 100 });
    expect(r.text).toBe(`${'x'.repeat(95)} `);
    expect(r.matches).toBe(0);
    const kept = scanAndMask(`mail a@ex.io then ${'y'.repeat(200)} card 4111 1111 1111 1111`, { maxChars: 60 });
    expect(kept.text).toBe(`mail [REDACTED:email] then ${'y'.repeat(33)}`);
    expect(kept.text.length).toBe(60);
    expect(kept).toMatchObject({ matches: 1, kinds: { email: 1 } });
    expect(scanAndMask('short a@ex.io', { maxChars: 100 }).text).toBe('short [REDACTED:email]');
  });

  it('rejects numbers that fail their checksum', () => {
    expect(scanAndMask('card 4111 1111 1111 1112').matches).toBe(0);
    expect(scanAndMask('iban GB82 WEST 1234 5698 7654 33').matches).toBe(0);
    expect(scanAndMask('iban gb82 west 1234 5698 7654 33').matches).toBe(0);
    expect(scanAndMask('DNI 12345678A').matches).toBe(0);
  });

  it('keeps the host of a URL while masking its password', () => {
    const r = scanAndMask('redis://cache:s3cr3tPass@redis.internal:6379/0');
    expect(r.text).toBe('redis://cache:[REDACTED:url_password]@redis.internal:6379/0');
  });

  it('masks an unterminated private key to the end of the text', () => {
    const r = scanAndMask('key follows -----BEGIN PRIVATE KEY-----\nMIIBVQIBADANBgkqhkiG9w0BAQEFAASC');
    expect(r.text).toBe('key follows [REDACTED:private_key]');
  });
});

/** The characters that render as nothing and must not hide a value: zero-width space, non-joiner, joiner, word joiner, byte-order mark, soft hyphen. */
const INVISIBLES = ['\u200B', '\u200C', '\u200D', '\u2060', '\uFEFF', '\u00AD'];

describe('DLP on obfuscated values', () => {
  it.each(INVISIBLES.map((c) => [c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0'), c]))(
    'U+%s inside a token or an e-mail address hides nothing, and is masked with the value',
    (_code, c) => {
      const text = `mail ja${c}ne.doe@exam${c}ple.com, aws AKIA${c}IOSFODNN7EXAMPLE, openai sk-proj-abc${c}DEF1234567890ghijKLMNOP, card 4111${c}1111 1111 1111.`;
      const r = scanAndMask(text);
      expect(r.text).toBe('mail [REDACTED:email], aws [REDACTED:api_key], openai [REDACTED:api_key], card [REDACTED:card_number].');
      expect(r.kinds).toEqual({ email: 1, api_key: 2, card_number: 1 });
    },
  );

  it('keeps invisible characters and full-width text that sit outside any value', () => {
    const text = 'Ｈｅｌｌｏ\u200B, card ４１１１ １１１１ １１１１ １１１１\u200B ok\u00AD.';
    expect(scanAndMask(text).text).toBe('Ｈｅｌｌｏ\u200B, card [REDACTED:card_number]\u200B ok\u00AD.');
  });

  it('finds an address that Markdown emphasis or code wraps', () => {
    expect(scanAndMask('Plover md: *zoe*@example.com and __kai__@example.com wrote.').text).toBe('Plover md: *[REDACTED:email] and [REDACTED:email] wrote.');
    expect(scanAndMask('mail **zoe**@example.com, ~~old~~@example.com or `dev`@example.com').text).toBe(
      'mail **[REDACTED:email], ~~[REDACTED:email] or `[REDACTED:email]',
    );
    expect(scanAndMask("R&D's o'brien@example.com").text).toBe("R&D's [REDACTED:email]");
  });

  it('reads full-width digits, full-width at signs and other compatibility forms', () => {
    expect(scanAndMask('card ４１１１ １１１１ １１１１ １１１１ now').text).toBe('card [REDACTED:card_number] now');
    expect(scanAndMask('card ５２００－８２８２－８２８２－８２１０ now').text).toBe('card [REDACTED:card_number] now');
    expect(scanAndMask('write to jane.doe＠example.com today').text).toBe('write to [REDACTED:email] today');
    expect(scanAndMask('write to ｊａｎｅ＠ｅｘａｍｐｌｅ．ｃｏｍ today').text).toBe('write to [REDACTED:email] today');
    expect(scanAndMask('key ＡＫＩＡＩＯＳＦＯＤＮＮ７ＥＸＡＭＰＬＥ here').text).toBe('key [REDACTED:api_key] here');
    // Mathematical bold digits are two UTF-16 units each: the mask covers both halves of every one.
    expect(scanAndMask('card 𝟒𝟎𝟏𝟐 𝟖𝟖𝟖𝟖 𝟖𝟖𝟖𝟖 𝟏𝟖𝟖𝟏 now').text).toBe('card [REDACTED:card_number] now');
  });

  it('understands dots, dashes, spaced dashes and double spaces between card groups', () => {
    expect(scanAndMask('card 4111.1111.1111.1111 now').text).toBe('card [REDACTED:card_number] now');
    expect(scanAndMask('card 4111 - 1111 - 1111 - 1111 now').text).toBe('card [REDACTED:card_number] now');
    expect(scanAndMask('amex 3782  822463  10005 now').text).toBe('amex [REDACTED:card_number] now');
    expect(scanAndMask('card 4111   1111   1111   1111 now').text).toBe('card [REDACTED:card_number] now');
    expect(scanAndMask('card 6011\u20131111\u20131111\u20131117 now').text).toBe('card [REDACTED:card_number] now');
    expect(scanAndMask('card 4242 . 4242 . 4242 . 4242.').text).toBe('card [REDACTED:card_number].');
    // A number in front of the card does not hide it.
    expect(scanAndMask('order 12 4111 1111 1111 1111').text).toBe('order 12 [REDACTED:card_number]');
    expect(scanAndMask('ref 0.4111.1111.1111.1111').text).toBe('ref 0.[REDACTED:card_number]');
  });

  it('joins a card number broken over one line, grouped or not, and masks the line break with it', () => {
    expect(scanAndMask('Card 4111 1111\n1111 1111 expires').text).toBe('Card [REDACTED:card_number] expires');
    expect(scanAndMask('Card 4111111111\n111111 expires').text).toBe('Card [REDACTED:card_number] expires');
    expect(scanAndMask('card 5555 5555 \r\n    5555 4444.').text).toBe('card [REDACTED:card_number].');
    expect(scanAndMask('card 4111.1111.\n1111.1111 ok').text).toBe('card [REDACTED:card_number] ok');
    expect(scanAndMask('4111 1111\n1111 1111').text).toBe('[REDACTED:card_number]');
    // The next line's number stays: only a valid card is joined.
    expect(scanAndMask('card 4111 1111 1111 1111\n2024 renewal').text).toBe('card [REDACTED:card_number]\n2024 renewal');
    expect(scanAndMask('card 4111 1111 1111 1111\r\n1111 next').text).toBe('card [REDACTED:card_number]\r\n1111 next');
  });

  it('joins an AWS key id or an IBAN broken over one line', () => {
    expect(scanAndMask('aws AKIAIOSFOD\nNN7EXAMPLE in the runbook').text).toBe('aws [REDACTED:api_key] in the runbook');
    expect(scanAndMask('aws AK\n  IAIOSFODNN7EXAMPLE in the runbook').text).toBe('aws [REDACTED:api_key] in the runbook');
    expect(scanAndMask('aws AKIAIOSFODNN7EXAMPLE\nNEXT line').text).toBe('aws [REDACTED:api_key]\nNEXT line');
    expect(scanAndMask('iban DE89 3704 0044\n0532 0130 00 ok').text).toBe('iban [REDACTED:iban] ok');
    expect(scanAndMask('iban GB82 WEST 1234\n5698 7654 33 ok').matches).toBe(0);
  });

  it('leaves a column of numbers alone even when two rows would join into a valid card', () => {
    // 4111111111111111 and 5200828282828210 pass Luhn and the issuer check.
    for (const text of ['41111111\n11111111', '  52008282\r\n  82828210\r\n', 'Totals:\n41111111\n11111111\nend']) {
      const r = scanAndMask(text);
      expect(r.text).toBe(text);
      expect(r.matches).toBe(0);
    }
    // A blank line is two breaks: never joined.
    expect(scanAndMask('card 4111 1111\n\n1111 1111').matches).toBe(0);
  });

  it('does not read prices, dotted thousands, decimals or mixed separators as cards', () => {
    // Each of these has digits that pass Luhn and the issuer check once the separators are dropped.
    for (const text of ['prices 44.50 33.20 41.10 52.00 each', 'total 4.111.111.111.111.004 units', 'ratio 5.123456789012304', 'ids 4111.1111 1111-1111']) {
      expect(isCardNumber(text.replace(/\D/g, ''))).toBe(true);
      expect(scanAndMask(text)).toEqual({ text, matches: 0, kinds: {} });
    }
  });

  it('masks the whole original character when a value covers part of what it became', () => {
    // U+2488 becomes "1." and U+246A becomes "11": the card ends inside the first and at the end of the second.
    expect(scanAndMask('card 4111 1111 1111 111\u2488 end').text).toBe('card [REDACTED:card_number] end');
    expect(scanAndMask('card 4111 1111 1111 11\u246A end').text).toBe('card [REDACTED:card_number] end');
    // Several characters become one: e + U+0301 compose to é inside an address.
    expect(scanAndMask('write to jose\u0301@example.com today').text).toBe('write to [REDACTED:email] today');
    expect(scanAndMask('write to josé@example.com today').text).toBe('write to [REDACTED:email] today');
  });

  it('masks an obfuscated value across the cut before cutting, in original characters', () => {
    const text = `${'x'.repeat(95)} ４１１１ １１１１\n１１１１ １１１１ and more text after it`;
    expect(scanAndMask(text, { maxChars: 100 })).toEqual({ text: `${'x'.repeat(95)} `, matches: 0, kinds: {} });
    const kept = scanAndMask(`mail a\u200B@ex.io then ${'y'.repeat(200)}`, { maxChars: 40 });
    expect(kept).toEqual({ text: `mail [REDACTED:email] then ${'y'.repeat(13)}`, matches: 1, kinds: { email: 1 } });
  });

  it('maps every normalised character back to the original characters it came from', () => {
    const v = scanView('a\uFB01e\u0301\u200Bb\uD835\uDFD2 xy');
    expect(v.text).toBe('afiéb4 xy');
    const each = [...v.text].map((_, j) => v.original(j, j + 1));
    expect(each.map((o) => [o.start, o.end])).toEqual([[0, 1], [1, 2], [1, 2], [2, 4], [5, 6], [6, 8], [8, 9], [9, 10], [10, 11]]);
    // A span maps from the start of its first segment to the end of its last (the invisible U+200B inside goes too).
    expect(v.original(2, 6)).toEqual({ start: 1, end: 8 });
    expect(v.original(2, 3)).toEqual({ start: 1, end: 2 });
    const plain = scanView('plain ASCII');
    expect(plain.text).toBe('plain ASCII');
    expect(plain.original(2, 5)).toEqual({ start: 2, end: 5 });
  });

  it('masks a document at the content limit full of obfuscated values with work linear in its length', () => {
    const unit =
      'card ４１１１ １１１１ １１１１ １１１１, key AKIAIOSFOD\nNN7EXAMPLE, mail ja\u200Bne＠exa\u00ADmple.com, card 4111.1111.\n1111.1111;\n';
    const documentOf = (length: number): { text: string; values: number } => {
      const copies = Math.floor(length / unit.length);
      return { text: unit.repeat(copies).padEnd(length, '1 '), values: copies * 4 };
    };
    const measure = (length: number): { steps: number; length: number } => {
      const { text, values } = documentOf(length);
      const work: DlpWork = { steps: 0 };
      const r = scanAndMask(text, { work });
      expect(r.matches).toBe(values);
      expect(r.kinds).toEqual({ card_number: values / 2, api_key: values / 4, email: values / 4 });
      expect(r.text).not.toMatch(/[１＠\u200B\u00AD]|AKIA|4111/);
      return { steps: work.steps, length };
    };
    const half = measure(250_000);
    const full = measure(500_000);
    // A bounded number of steps per character, and twice the text costs twice the work (quadratic would be 4×).
    expect(full.steps / full.length).toBeLessThan(12);
    expect(full.steps / half.steps).toBeGreaterThan(1.8);
    expect(full.steps / half.steps).toBeLessThan(2.2);
  });

  it('keeps the work per character bounded on runs built to make candidates expensive', () => {
    for (const unit of ['4 ', '4.1.', '41111111\n', '4111 1111\n', '\u200B', 'e\u0301', 'AKIA\n']) {
      const text = unit.repeat(Math.ceil(500_000 / unit.length)).slice(0, 500_000);
      const work: DlpWork = { steps: 0 };
      scanAndMask(text, { work });
      expect(work.steps / text.length).toBeLessThan(24);
    }
  });
});

describe('checksums', () => {
  it('validates Luhn', () => {
    expect(luhnValid('79927398713')).toBe(true);
    expect(luhnValid('79927398710')).toBe(false);
  });
  it('accepts only plausible card numbers', () => {
    expect(isCardNumber('4012888888881881')).toBe(true);
    expect(isCardNumber('0000000000000000')).toBe(false);
    expect(isCardNumber('1234567812345670')).toBe(false);
  });
  it('validates IBAN length and mod 97', () => {
    expect(isIban('FR14 2004 1010 0505 0001 3M02 606')).toBe(true);
    expect(isIban('FR14 2004 1010 0505 0001 3M02 60')).toBe(false);
  });
  it('validates Spanish and French ids', () => {
    expect(isSpanishId('X1234567L')).toBe(true);
    expect(isSpanishId('X1234567A')).toBe(false);
    expect(isFrenchNir(nir('2690549588157'))).toBe(true);
    expect(isFrenchNir('269054958815700')).toBe(false);
  });
  it('tells phones from dates and amounts', () => {
    expect(isPhone('+33 1 42 68 53 00')).toBe(true);
    expect(isPhone('020 7946 0958')).toBe(true);
    expect(isPhone('2024-05-01')).toBe(false);
    expect(isPhone('10.000.000')).toBe(false);
    expect(isPhone('+49 30 12345678')).toBe(true);
    expect(isPhone('1234 56789012')).toBe(false);
  });
});
