/**
 * Data-loss prevention at the perimeter: sensitive values are found and replaced by `[REDACTED:<kind>]` before
 * anything is stored, embedded, indexed, logged or published. The scanner keeps counts per kind and never the
 * values themselves, so the result can travel into events and logs.
 *
 * Detectors read a normalised view of the text (NFKC, invisible characters removed, dashes unified), so a value
 * written with full-width digits, a zero-width space or a soft hyphen inside is still recognised; each finding
 * is mapped back to the original characters it came from, and the mask replaces exactly those. Overlapping
 * findings are resolved by detector priority (the more specific detector wins: a private key block beats the
 * e-mail address inside its comment line). Numeric detectors validate checksums (Luhn, IBAN mod 97,
 * national-id check digits) so order numbers and dates survive.
 */

export const DLP_KINDS = [
  'private_key',
  'jwt',
  'url_password',
  'api_key',
  'secret_assignment',
  'email',
  'iban',
  'card_number',
  'national_id',
  'phone',
] as const;

export type DlpKind = (typeof DLP_KINDS)[number];

export interface DlpResult {
  text: string;
  /** Number of masked values. */
  matches: number;
  /** Masked values per kind (only kinds that matched). */
  kinds: Partial<Record<DlpKind, number>>;
}

interface Finding {
  start: number;
  end: number;
  kind: DlpKind;
  priority: number;
}

/**
 * Counts the steps of the scanner's own loops (normalising, card candidates, line checks, the overlap walk), so a
 * test can bound the work per character without timing anything. Regular expressions are not counted: each one
 * is written so that a failed attempt at one position costs a bounded number of steps.
 */
export interface DlpWork {
  steps: number;
}

interface Span {
  start: number;
  end: number;
}

interface Detector {
  kind: DlpKind;
  find(text: string, work: DlpWork): Span[];
}

export function maskToken(kind: DlpKind): string {
  return `[REDACTED:${kind}]`;
}

/** The text the detectors read, and where each of its characters came from. */
export interface ScanView {
  text: string;
  /** The original offsets of the view's characters `[start, end)` (end > start). */
  original(start: number, end: number): Span;
}

/**
 * Characters that render as nothing (zero-width space and joiners, word joiner, byte-order mark, soft hyphen,
 * bidirectional controls, variation selectors…): written inside a value, they hide it from a pattern without
 * changing what a reader sees.
 */
const INVISIBLE = /\p{Default_Ignorable_Code_Point}/gu;
/** Dash punctuation and the minus sign read as `-`, so a card grouped with en dashes is still grouped. */
const DASH = /[\p{Pd}\u2212]/gu;
const MARK_AT = /\p{M}/uy;

function markAt(text: string, index: number): boolean {
  if (index >= text.length || text.charCodeAt(index) < 0x300) return false;
  MARK_AT.lastIndex = index;
  return MARK_AT.test(text);
}

function codeUnitsAt(text: string, index: number): number {
  const c = text.charCodeAt(index);
  if (c >= 0xd800 && c <= 0xdbff && index + 1 < text.length) {
    const d = text.charCodeAt(index + 1);
    if (d >= 0xdc00 && d <= 0xdfff) return 2;
  }
  return 1;
}

/**
 * Builds the normalised view. The text is cut into segments — one code point and the combining marks that follow
 * it — and each segment is normalised on its own (NFKC, then invisible characters dropped, dashes unified), so
 * every view character maps to exactly one segment: one original character may become several (`ﬁ` → `fi`,
 * `½` → `1⁄2`), several may become one (`e` + U+0301 → `é`), an invisible one becomes none. A finding that covers
 * any character of a segment masks the whole segment, so no part of an original character stays in clear.
 *
 * The map is kept as pieces: a stretch of ASCII copied one to one, or one normalised segment. Plain ASCII text
 * is its own view with no map at all; otherwise the cost is one step per character and a piece per non-ASCII
 * segment, and mapping a finding back is a binary search over the pieces.
 */
export function scanView(text: string, work: DlpWork = { steps: 0 }): ScanView {
  if (!/[^\u0000-\u007f]/.test(text)) return { text, original: (start, end) => ({ start, end }) };
  // Piece k starts at view offset viewStart[k] and came from the original from originStart[k]: one to one when
  // originEnd[k] is -1, else every character of it came from [originStart[k], originEnd[k]).
  const viewStart: number[] = [];
  const originStart: number[] = [];
  const originEnd: number[] = [];
  const parts: string[] = [];
  const cache = new Map<string, string>();
  let n = 0;
  let plainStart = 0;
  let i = 0;
  while (i < text.length) {
    if (text.charCodeAt(i) < 0x80 && !markAt(text, i + 1)) {
      i += 1;
      continue;
    }
    if (plainStart < i) {
      viewStart.push(n);
      originStart.push(plainStart);
      originEnd.push(-1);
      parts.push(text.slice(plainStart, i));
      n += i - plainStart;
    }
    let end = i + codeUnitsAt(text, i);
    while (markAt(text, end)) end += codeUnitsAt(text, end);
    const segment = text.slice(i, end);
    let normal = cache.get(segment);
    if (normal === undefined) {
      normal = segment.normalize('NFKC');
      if (/[^\u0000-\u007f]/.test(normal)) normal = normal.replace(INVISIBLE, '').replace(DASH, '-');
      cache.set(segment, normal);
    }
    if (normal.length > 0) {
      viewStart.push(n);
      originStart.push(i);
      originEnd.push(end);
      parts.push(normal);
      n += normal.length;
    }
    work.steps += end - i;
    i = end;
    plainStart = end;
  }
  if (plainStart < text.length) {
    viewStart.push(n);
    originStart.push(plainStart);
    originEnd.push(-1);
    parts.push(text.slice(plainStart));
  }
  work.steps += text.length;
  const pieceOf = (at: number): number => {
    let lo = 0;
    let hi = viewStart.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if ((viewStart[mid] as number) <= at) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  };
  return {
    text: parts.join(''),
    original(start, end) {
      const first = pieceOf(start);
      const last = pieceOf(end - 1);
      const firstEnd = originEnd[first] as number;
      const lastEnd = originEnd[last] as number;
      return {
        start: firstEnd === -1 ? (originStart[first] as number) + start - (viewStart[first] as number) : (originStart[first] as number),
        end: lastEnd === -1 ? (originStart[last] as number) + end - (viewStart[last] as number) : lastEnd,
      };
    },
  };
}

/**
 * There is deliberately no cap on the number of findings: a value found is a value masked, however many there
 * are. Work and memory stay linear in the text's length (the matches of one detector never overlap, and the
 * overlap check below walks each finding's characters once), and the content limit bounds that length.
 */
function regexDetector(kind: DlpKind, pattern: RegExp, options: { group?: number; accept?: (match: string) => boolean } = {}): Detector {
  // `d` gives the offsets of capture groups, so a detector can mask only the secret part of its match.
  const flags = `${pattern.flags.replace(/[gd]/g, '')}gd`;
  return {
    kind,
    find(text) {
      const out: Span[] = [];
      const re = new RegExp(pattern.source, flags);
      let m: RegExpExecArray | null;
      while ((m = re.exec(text)) !== null) {
        if (m[0].length === 0) {
          re.lastIndex += 1;
          continue;
        }
        const span = options.group === undefined ? m.indices?.[0] : m.indices?.[options.group];
        if (!span) continue;
        const value = text.slice(span[0], span[1]);
        if (value.length === 0) continue;
        if (options.accept && !options.accept(value)) continue;
        out.push({ start: span[0], end: span[1] });
      }
      return out;
    },
  };
}

export function luhnValid(digits: string): boolean {
  let sum = 0;
  let double = false;
  for (let i = digits.length - 1; i >= 0; i -= 1) {
    let d = digits.charCodeAt(i) - 48;
    if (d < 0 || d > 9) return false;
    if (double) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
    double = !double;
  }
  return sum % 10 === 0;
}

/** Card numbers: 13–19 digits of a known issuer range that pass Luhn; all-same digits are test noise. */
export function isCardNumber(raw: string): boolean {
  const digits = raw.replace(/[ -]/g, '');
  if (digits.length < 13 || digits.length > 19) return false;
  if (/^(\d)\1+$/.test(digits)) return false;
  if (!/^(?:4|5[1-5]|2[2-7]|3[47]|3[0689]|6(?:011|5|4[4-9]|2)|35|5[06-9]|6)/.test(digits)) return false;
  return luhnValid(digits);
}

/**
 * One line break between two parts of a value, with the indentation around it (a blank line is two breaks and
 * never joins).
 */
const LINE_BREAK_GAP = String.raw`[ \t]{0,16}(?:\r\n|[\n\r\u2028\u2029])[ \t]{0,16}`;
const LINE_END = /[\n\r\u2028\u2029]/;

/**
 * A run of digit groups, each separator one of: one to three spaces, a dot or dash with a space either side or
 * not, or a line break (after an optional dot or dash). Every separator holds a non-digit, so the run is found
 * in one pass without backtracking between groups.
 */
const CARD_RUN = new RegExp(String.raw`\d+(?:(?: {1,3}| ?[.-] ?|[.-]?${LINE_BREAK_GAP})\d+)*`, 'g');
/** Separator classes inside a candidate: a line break stands for any separator, or for none. */
const SEP_LINE_BREAK = '\n';
const SEP_BLOCKED = '';
/** One space or one dash: the classic groupings, which may mix and take groups of any length. */
const SEP_CLASSIC = ' ';

function isWordChar(c: number): boolean {
  return (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95;
}

function isLineEnd(c: number): boolean {
  return c === 10 || c === 13 || c === 0x2028 || c === 0x2029;
}

/**
 * A line break joins two digit groups unless both lines hold nothing but one bare number each: that is a column
 * of numbers (a table of two 8-digit amounts), not a value cut in two. Each line is read once per break next to
 * it, and a line has at most two, so the checks of a whole text stay linear.
 */
function joinsAcrossLine(text: string, breakStart: number, breakEnd: number, work: DlpWork): boolean {
  let lineStart = breakStart;
  while (lineStart > 0 && !isLineEnd(text.charCodeAt(lineStart - 1))) lineStart -= 1;
  let lineEnd = breakEnd;
  while (lineEnd < text.length && !isLineEnd(text.charCodeAt(lineEnd))) lineEnd += 1;
  work.steps += lineEnd - lineStart;
  const bare = (from: number, to: number): boolean => /^[ \t]*\d+[ \t]*$/.test(text.slice(from, to));
  return !(bare(lineStart, breakStart) && bare(breakEnd, lineEnd));
}

/** Luhn's doubled digit: 2d, less 9 when that has two digits. */
const LUHN_DOUBLE = [0, 2, 4, 6, 8, 1, 3, 5, 7, 9];

/**
 * Card numbers as people write and disguise them: 13–19 digits in groups separated by spaces, dashes or dots
 * (`4111.1111.1111.1111`, `3782 - 822463 - 10005`), or broken over a line. Within one candidate every separator
 * must be the same (one space and one dash count as the same classic separator), and with any other separator
 * each group has 3–6 digits, as card groups do — so prices (`45.50 33.20 …`), decimals and dotted thousands are
 * not read as cards. A candidate starts and ends at group boundaries; from each group the longest valid
 * candidate is taken, so a number in front of a card ("order 12 4111 1111 1111 1111") does not hide it. Each
 * start looks at no more than 19 digits, so the work is linear in the text.
 */
function cardDetector(): Detector {
  return {
    kind: 'card_number',
    find(text, work) {
      const out: Span[] = [];
      let steps = 0;
      const runs = new RegExp(CARD_RUN.source, 'g');
      let m: RegExpExecArray | null;
      while ((m = runs.exec(text)) !== null) {
        const run = m[0];
        if (run.length < 13) continue;
        const base = m.index;
        const starts: number[] = [];
        const ends: number[] = [];
        const seps: string[] = [];
        const groups = /\d+/g;
        let g: RegExpExecArray | null;
        while ((g = groups.exec(run)) !== null) {
          steps += 1;
          const start = base + g.index;
          const previousEnd = ends[ends.length - 1];
          if (previousEnd !== undefined) {
            const sep = text.slice(previousEnd, start);
            const lb = LINE_END.exec(sep);
            if (lb) {
              const breakStart = previousEnd + lb.index;
              const breakEnd = breakStart + (sep.startsWith('\r\n', lb.index) ? 2 : 1);
              seps.push(joinsAcrossLine(text, breakStart, breakEnd, work) ? SEP_LINE_BREAK : SEP_BLOCKED);
            } else {
              seps.push(sep === ' ' || sep === '-' ? SEP_CLASSIC : sep);
            }
          }
          starts.push(start);
          ends.push(start + g[0].length);
        }
        const count = starts.length;
        const runEnd = base + run.length;
        let i = 0;
        while (i < count) {
          // Every issuer range starts with 2–6: other starts are skipped before any candidate is built.
          const first = text.charCodeAt(starts[i] as number);
          if ((i === 0 && base > 0 && isWordChar(text.charCodeAt(base - 1))) || first < 50 || first > 54) {
            i += 1;
            continue;
          }
          let digits = 0;
          // Luhn sums of the digits so far, with the last digit kept (plain) or doubled: appending a digit swaps
          // the roles, so each extension costs its own digits only.
          let plain = 0;
          let doubled = 0;
          let sameDigits = true;
          let kind: string | null = null;
          let shortest = 20;
          let longest = 0;
          let best = -1;
          for (let k = i; k < count; k += 1) {
            steps += 1;
            if (k > i) {
              const sep = seps[k - 1] as string;
              if (sep === SEP_BLOCKED) break;
              if (sep !== SEP_LINE_BREAK) {
                if (kind === null) kind = sep;
                else if (kind !== sep) break;
              }
            }
            const start = starts[k] as number;
            const end = ends[k] as number;
            if (digits + end - start > 19) break;
            digits += end - start;
            steps += end - start;
            for (let p = start; p < end; p += 1) {
              const d = text.charCodeAt(p) - 48;
              const nextPlain = doubled + d;
              doubled = plain + (LUHN_DOUBLE[d] as number);
              plain = nextPlain;
              if (d !== first - 48) sameDigits = false;
            }
            if (end - start < shortest) shortest = end - start;
            if (end - start > longest) longest = end - start;
            if (digits < 13) continue;
            if (k === count - 1 && runEnd < text.length && isWordChar(text.charCodeAt(runEnd))) continue;
            if (kind !== null && kind !== SEP_CLASSIC && (shortest < 3 || longest > 6)) continue;
            // The digits are copied out only for a candidate that passes Luhn and is not one digit repeated.
            if (plain % 10 !== 0 || sameDigits) continue;
            let value = '';
            for (let q = i; q <= k; q += 1) value += text.slice(starts[q], ends[q]);
            if (isCardNumber(value)) best = k;
          }
          if (best >= 0) {
            out.push({ start: starts[i] as number, end: ends[best] as number });
            i = best + 1;
          } else {
            i += 1;
          }
        }
      }
      work.steps += steps;
      return out;
    },
  };
}

const IBAN_LENGTHS: Record<string, number> = {
  AD: 24, AE: 23, AL: 28, AT: 20, AZ: 28, BA: 20, BE: 16, BG: 22, BH: 22, BR: 29, CH: 21, CR: 22, CY: 28, CZ: 24,
  DE: 22, DK: 18, DO: 28, EE: 20, EG: 29, ES: 24, FI: 18, FO: 18, FR: 27, GB: 22, GE: 22, GI: 23, GL: 18, GR: 27,
  GT: 28, HR: 21, HU: 28, IE: 22, IL: 23, IS: 26, IT: 27, JO: 30, KW: 30, KZ: 20, LB: 28, LI: 21, LT: 20, LU: 20,
  LV: 21, MC: 27, MD: 24, ME: 22, MK: 19, MR: 27, MT: 31, MU: 30, NL: 18, NO: 15, PK: 24, PL: 28, PS: 29, PT: 25,
  QA: 29, RO: 24, RS: 22, SA: 24, SE: 24, SI: 19, SK: 24, SM: 27, TN: 24, TR: 26, UA: 29, VG: 24, XK: 20,
};

/**
 * IBAN candidates in any letter case, grouped by spaces or dashes or not at all: two letters and two digits,
 * then exactly as many letters and digits as the country's IBAN has (a greedy pattern would swallow the words
 * that follow a lowercase IBAN), then no further letter or digit. The checksum is checked afterwards. One line
 * break (with the indentation around it) may sit between two characters: the exact length and mod 97 keep a
 * wrapped IBAN from being confused with the words of the next line.
 */
function ibanDetector(): Detector {
  return {
    kind: 'iban',
    find(text) {
      const out: Span[] = [];
      const gap = new RegExp(`${LINE_BREAK_GAP}(?=[A-Za-z0-9])`, 'y');
      const re = /(?<![A-Za-z0-9])[A-Za-z]{2}\d{2}/g;
      let m: RegExpExecArray | null;
      while ((m = re.exec(text)) !== null) {
        const expected = IBAN_LENGTHS[m[0].slice(0, 2).toUpperCase()];
        if (expected === undefined) continue;
        let count = 4;
        let i = m.index + 4;
        while (count < expected && i < text.length) {
          const c = text.charCodeAt(i);
          const alnum = (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
          if (alnum) {
            count += 1;
            i += 1;
          } else if ((c === 32 || c === 45) && i + 1 < text.length && /[A-Za-z0-9]/.test(text.charAt(i + 1))) {
            i += 1;
          } else {
            gap.lastIndex = i;
            if (!gap.test(text)) break;
            i = gap.lastIndex;
          }
        }
        if (count !== expected || /[A-Za-z0-9]/.test(text.charAt(i))) continue;
        if (!isIban(text.slice(m.index, i))) continue;
        out.push({ start: m.index, end: i });
        re.lastIndex = i;
      }
      return out;
    },
  };
}

/** IBAN: known country length and the ISO 7064 mod-97 check (any letter case). */
export function isIban(raw: string): boolean {
  const iban = raw.replace(/[\s-]/g, '').toUpperCase();
  const country = iban.slice(0, 2);
  const expected = IBAN_LENGTHS[country];
  if (expected === undefined || iban.length !== expected) return false;
  const rearranged = iban.slice(4) + iban.slice(0, 4);
  let remainder = 0;
  for (const ch of rearranged) {
    const code = ch.charCodeAt(0);
    const value = code >= 65 && code <= 90 ? String(code - 55) : ch;
    for (const digit of value) {
      remainder = (remainder * 10 + (digit.charCodeAt(0) - 48)) % 97;
    }
  }
  return remainder === 1;
}

const DNI_LETTERS = 'TRWAGMYFPDXBNJZSQVHLCKE';

/** Spanish DNI (8 digits + check letter) and NIE (X/Y/Z + 7 digits + check letter). */
export function isSpanishId(raw: string): boolean {
  const v = raw.toUpperCase();
  const m = /^([XYZ]?)(\d{7,8})([A-Z])$/.exec(v);
  if (!m) return false;
  const prefix = m[1] ?? '';
  const digits = m[2] ?? '';
  if (prefix === '' && digits.length !== 8) return false;
  if (prefix !== '' && digits.length !== 7) return false;
  const n = Number(`${prefix === '' ? '' : String('XYZ'.indexOf(prefix))}${digits}`);
  return DNI_LETTERS[n % 23] === m[3];
}

/** French social security number (NIR): 13 digits + a 2-digit key equal to 97 − (number mod 97). */
export function isFrenchNir(raw: string): boolean {
  const v = raw.replace(/\s/g, '').toUpperCase();
  const m = /^([12]\d{4}(?:\d{2}|2A|2B)\d{6})(\d{2})$/.exec(v);
  if (!m) return false;
  const body = (m[1] ?? '').replace('2A', '19').replace('2B', '18');
  const key = Number(m[2]);
  return 97 - Number(BigInt(body) % 97n) === key;
}

/** Dutch BSN: 9 digits passing the "11-proof". */
export function isDutchBsn(raw: string): boolean {
  if (!/^\d{9}$/.test(raw)) return false;
  let sum = 0;
  for (let i = 0; i < 8; i += 1) sum += Number(raw[i]) * (9 - i);
  sum -= Number(raw[8]);
  return sum % 11 === 0 && sum !== 0;
}

/**
 * Phone numbers: 8–15 digits in a recognisable telephone layout (international prefix, area code in brackets,
 * North-American 3-3-4 grouping, or a national trunk "0" with spaced groups); groups may be long, as subscriber
 * numbers are in many countries (+49 30 12345678). Dates, dotted amounts and bare
 * digit runs are left alone: they are far more often order numbers than phones.
 */
export function isPhone(raw: string): boolean {
  const v = raw.trim();
  const digits = v.replace(/\D/g, '');
  if (digits.length < 8 || digits.length > 15) return false;
  if (/^(\d)\1+$/.test(digits)) return false;
  if (/^\d{4}[-./]\d{1,2}[-./]\d{1,2}$|^\d{1,2}[-./]\d{1,2}[-./]\d{2,4}$/.test(v)) return false;
  if (v.startsWith('+') || v.startsWith('(')) return true;
  if (/^\d{3}[-. ]\d{3}[-. ]\d{4}$/.test(v)) return true;
  // National trunk "0": spaced groups of 2–4 digits, or an area code and one long subscriber number (030 12345678).
  return /^0\d{1,4}(?:[ -]\d{2,4}){2,4}$/.test(v) || /^0\d{2,4}[ -]\d{5,8}$/.test(v);
}

const SECRET_NAMES =
  'password|passwd|pwd|passphrase|secret|client[_-]?secret|secret[_-]?key(?:[_-]?base)?|api[_-]?key|apikey|access[_-]?key(?:[_-]?id)?|secret[_-]?access[_-]?key|auth[_-]?token|access[_-]?token|refresh[_-]?token|private[_-]?key|signing[_-]?key|encryption[_-]?key|token';
/**
 * Where a secret name may start: not inside a word, but after an underscore, so the environment-variable style
 * (`DB_PASSWORD`, `MYSQL_ROOT_PASSWORD`, `AWS_SECRET_ACCESS_KEY`, `GITHUB_TOKEN`) counts (`\b` would not see a
 * boundary between `_` and a letter). `MAX_TOKENS=` or `PASSWORD_FILE=` stay alone: the name must be followed
 * by the assignment itself.
 */
const NAME_START = '(?<![A-Za-z0-9])';
const PLACEHOLDER = /^(?:\[REDACTED:|(?:null|none|undefined|true|false|required|optional|redacted|changeme|\*+|x+)$)/i;

/** A value after "password is ..." only counts when it looks machine-made: letters and digits or symbols. */
function looksSecret(v: string): boolean {
  if (PLACEHOLDER.test(v)) return false;
  const classes = [/[a-z]/, /[A-Z]/, /\d/, /[^A-Za-z0-9]/].filter((r) => r.test(v)).length;
  return /\d/.test(v) ? classes >= 2 : classes >= 3;
}

/**
 * An e-mail address: a local part of up to 64 characters, `@`, dotted labels and a top-level domain of letters. The
 * local part may hold the symbols an address may (RFC 5322's `atext`, less `/ { | }`), so Markdown around it does
 * not hide it: in `*zoe*@example.com` (rendered "zoe@example.com") the address `zoe*@example.com` is found and the
 * opening `*` stays.
 */
const EMAIL = String.raw`(?<![\p{L}\p{M}\p{N}_])[\p{L}\p{N}_][\p{L}\p{M}\p{N}._%+\-*~'\x60!#$&=?^]{0,63}@[\p{L}\p{M}\p{N}-]{1,63}(?:\.[\p{L}\p{M}\p{N}-]{1,63})*\.\p{L}[\p{L}\p{M}]{1,23}(?![\p{L}\p{M}\p{N}_])`;

/**
 * E-mail addresses with letters of any script, as internationalised addresses have them (and as NFKC composes
 * them: `jose` + U+0301). Unicode classes make a pattern tried at every position of the text several times
 * slower than the ASCII one it replaced, so the pattern is tried only near an `@`: from at most 65 characters
 * before it (a local part is at most 64, and cannot hold the previous `@`), which finds the same leftmost
 * matches as a scan of the whole text, at a cost bounded by the characters between two `@`.
 */
function emailDetector(): Detector {
  return {
    kind: 'email',
    find(text) {
      const out: Span[] = [];
      const near = new RegExp(String.raw`[^@]*?(${EMAIL})`, 'uyd');
      let previous = -1;
      let at = text.indexOf('@');
      while (at !== -1) {
        near.lastIndex = Math.max(previous + 1, at - 65, 0);
        const m = near.exec(text);
        const span = m?.indices?.[1];
        if (span) {
          out.push({ start: span[0], end: span[1] });
          previous = span[1] - 1;
          at = text.indexOf('@', span[1]);
        } else {
          previous = at;
          at = text.indexOf('@', at + 1);
        }
      }
      return out;
    },
  };
}

/**
 * AWS access key ids, also broken over a line anywhere (`AKIAIOSFOD` / `NN7EXAMPLE`): a prefix and exactly 16
 * upper-case letters or digits with word boundaries on both sides leave no room for the words of the next line.
 */
const AWS_KEY_ID = (() => {
  const gap = `(?:${LINE_BREAK_GAP})?`;
  const prefixes = ['AKIA', 'ASIA', 'AGPA', 'AIDA', 'AROA'].map((p) => [...p].join(gap)).join('|');
  return String.raw`\b(?:${prefixes})(?:${gap}[0-9A-Z]){16}\b`;
})();

const DETECTORS: Detector[] = [
  // PEM blocks, including an unterminated one (everything up to the end of the text is key material).
  regexDetector('private_key', /-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|$)/),
  regexDetector('jwt', /\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/),
  // scheme://user:password@host (the user may be empty: redis://:password@host): only the password is masked;
  // the host stays useful.
  regexDetector('url_password', /\b[a-z][a-z0-9+.-]{1,20}:\/\/[^\s:/@]{0,128}:([^\s@/]{1,256})@/i, { group: 1 }),
  regexDetector(
    'api_key',
    new RegExp(
      [
        String.raw`\bsk-(?:proj-|ant-|live-)?[A-Za-z0-9_-]{20,}`,
        String.raw`\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}`,
        AWS_KEY_ID,
        String.raw`\bgh[pousr]_[A-Za-z0-9]{30,}`,
        String.raw`\bgithub_pat_[A-Za-z0-9_]{22,}`,
        String.raw`\bglpat-[A-Za-z0-9_-]{20,}`,
        String.raw`\bxox[abposr]-[A-Za-z0-9-]{10,}`,
        String.raw`\bAIza[0-9A-Za-z_-]{35}`,
        String.raw`\bnpm_[A-Za-z0-9]{36}`,
        String.raw`\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}`,
        String.raw`\b(?:ck_live|ck_test|ck_eph|mk)_[A-Za-z0-9_-]{16,}`,
        String.raw`\bhf_[A-Za-z0-9]{30,}`,
        String.raw`(?<=\bBearer\s+)[A-Za-z0-9._~+/-]{20,}=*`,
        // Incoming-webhook URLs are credentials in themselves: whoever has one can post.
        String.raw`\bhttps?:\/\/hooks\.slack\.com\/(?:services|workflows|triggers)\/[A-Za-z0-9_\/-]{16,}`,
        String.raw`\bhttps?:\/\/(?:ptb\.|canary\.)?discord(?:app)?\.com\/api\/webhooks\/\d{5,}\/[A-Za-z0-9_-]{20,}`,
      ].join('|'),
    ),
  ),
  // key = value / "key": "value" for names that are secrets by definition.
  regexDetector('secret_assignment', new RegExp(String.raw`${NAME_START}(?:${SECRET_NAMES})["']?\s*(?:[:=]|=>)\s*["']?([^\s"',;]{6,256})`, 'i'), {
    group: 1,
    accept: (v) => !PLACEHOLDER.test(v),
  }),
  // Prose: "the password is Tr0ub4dor&3".
  regexDetector('secret_assignment', new RegExp(String.raw`${NAME_START}(?:${SECRET_NAMES})\s+(?:is|was)\s+["']?([^\s"',;]{6,256}?)["']?(?=[\s"',;]|[.!?](?:\s|$)|$)`, 'i'), {
    group: 1,
    accept: looksSecret,
  }),
  emailDetector(),
  ibanDetector(),
  cardDetector(),
  regexDetector(
    'national_id',
    new RegExp(
      [
        // US SSN, written with separators (bare 9-digit runs are too ambiguous).
        String.raw`\b(?!000|666|9\d\d)\d{3}[- ](?!00)\d{2}[- ](?!0000)\d{4}\b`,
        // UK National Insurance number.
        String.raw`\b[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z] ?\d{2} ?\d{2} ?\d{2} ?[A-D]\b`,
      ].join('|'),
    ),
    { accept: (v) => !/^(?:BG|GB|KN|NK|NT|TN|ZZ)/i.test(v.replace(/\s/g, '')) || /^\d/.test(v) },
  ),
  regexDetector('national_id', /\b[XYZ]?\d{7,8}[A-Z]\b/, { accept: isSpanishId }),
  regexDetector('national_id', /\b[12] ?\d{2} ?\d{2} ?(?:\d{2}|2A|2B) ?\d{3} ?\d{3} ?\d{2}\b/, { accept: isFrenchNir }),
  regexDetector('national_id', /(?<=\b(?:BSN|burgerservicenummer)\W{0,3})\d{9}\b/i, { accept: isDutchBsn }),
  regexDetector('phone', /(?<![\w+.-])(?:\+\d{1,3}[\s.-]?)?(?:\(\d{1,4}\)[\s.-]?)?\d{1,4}(?:[\s.-]\d{2,10}){1,4}(?![\w-])|(?<![\w+])\+\d{8,15}\b/, { accept: isPhone }),
];

/**
 * Text scanned past a cut, so a value that straddles the cut is still found whole and masked (a PEM block longer
 * than this is masked to the end of the window anyway: an unterminated block counts to the end).
 */
const CUT_MARGIN = 16_384;

/**
 * Scans and masks; the returned text is the only form of the content that may leave the request.
 *
 * With `maxChars`, the result is cut to at most that many characters (an extracted upload longer than the
 * content limit): the scan covers a margin past the cut, the cut never splits a mask, and only the values kept
 * are counted. Cutting first and masking after would leave the kept half of a value that straddles the cut
 * (the first digits of a card, the head of a token) in clear, as no detector recognises half a value.
 */
export function scanAndMask(text: string, options: { maxChars?: number; work?: DlpWork } = {}): DlpResult {
  const max = options.maxChars;
  const work = options.work ?? { steps: 0 };
  const source = max !== undefined && text.length > max ? text.slice(0, max + CUT_MARGIN) : text;
  // Detectors read the normalised view; their findings are mapped back to the original characters, which are
  // the ones masked (the invisible characters and line breaks inside a value included).
  const view = scanView(source, work);
  const findings: Finding[] = [];
  DETECTORS.forEach((detector, priority) => {
    for (const f of detector.find(view.text, work)) findings.push({ ...view.original(f.start, f.end), kind: detector.kind, priority });
  });
  // Highest priority first, then leftmost, then longest: accept a finding only if it overlaps nothing accepted.
  // `taken` marks the characters already masked; each detector's findings are disjoint (the map back to the
  // original keeps their order), so the checks walk at most (detectors × text length) characters in all,
  // whatever the number of findings.
  findings.sort((a, b) => a.priority - b.priority || a.start - b.start || b.end - a.end);
  const taken = new Uint8Array(source.length);
  const accepted: Finding[] = [];
  for (const f of findings) {
    let free = true;
    let i = f.start;
    for (; i < f.end; i += 1) {
      if (taken[i] === 1) {
        free = false;
        break;
      }
    }
    work.steps += i - f.start + 1;
    if (!free) continue;
    taken.fill(1, f.start, f.end);
    work.steps += f.end - f.start;
    accepted.push(f);
  }
  accepted.sort((a, b) => a.start - b.start);
  const limit = max ?? Number.POSITIVE_INFINITY;
  const kinds: Partial<Record<DlpKind, number>> = {};
  let matches = 0;
  let out = '';
  let cursor = 0;
  for (const f of accepted) {
    const plain = source.slice(cursor, f.start);
    const token = maskToken(f.kind);
    if (out.length + plain.length + token.length > limit) break;
    out += plain + token;
    cursor = f.end;
    kinds[f.kind] = (kinds[f.kind] ?? 0) + 1;
    matches += 1;
  }
  // The rest up to the next unkept finding is plain text (no value in it), so it may be cut anywhere.
  const nextFinding = accepted[matches]?.start ?? source.length;
  out += source.slice(cursor, nextFinding).slice(0, Math.max(0, limit - out.length));
  return { text: out, matches, kinds };
}
