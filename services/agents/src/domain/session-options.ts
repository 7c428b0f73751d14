/**
 * The choices a deep search, web research or crawler session takes at start (spec 3): the `llm_model` labels and the
 * `proxy_country_code` set, written once here as data. Pure: no SQL, no HTTP.
 */

/** The legacy labels (deep search and web research). */
export const LEGACY_MODEL_LABELS = ['service-r1', 'gpt-5.4 mini', 'gemini 3 flash', 'claude sonnet 4.6', 'claude opus 4.6', 'claude opus 4.7', 'qwen3.5:cloud'] as const;
/** The browser-model ids (deep search only). */
export const BROWSER_MODEL_IDS = ['gemini-3-flash', 'claude-sonnet-4.6', 'claude-opus-4.6', 'gpt-5.4-mini'] as const;
export const DEEP_SEARCH_MODEL_LABELS = [...LEGACY_MODEL_LABELS, ...BROWSER_MODEL_IDS] as const;

/**
 * The allowed country codes, by first letter: each first letter with the second letters allowed after it, exactly as
 * spec 3 lists them.
 */
const COUNTRY_CODE_TABLE: Record<string, string> = {
  a: 'defgilmnoqrstuwz',
  b: 'abdefghijlmnoqrstvwyz',
  c: 'acdfghklmorsuvwxyz',
  d: 'ejkmoz',
  e: 'ceghrst',
  f: 'ijkmor',
  g: 'adefghilmnpqrstuwy',
  h: 'kmnrtu',
  i: 'delmnqrst',
  j: 'emop',
  k: 'eghimnprwyz',
  l: 'abcikrstuvy',
  m: 'acdefghklmnopqrstuvwxyz',
  n: 'acefgilopruz',
  o: 'm',
  p: 'aefghklmnrstwy',
  q: 'a',
  r: 'eosuw',
  s: 'abcdeghijklmnorstvxyz',
  t: 'cdfghjklmnortvwz',
  u: 'agksyz',
  v: 'aceginu',
  w: 'fs',
  x: 'k',
  y: 'et',
  z: 'amw',
};

/** Every allowed `proxy_country_code`, sorted. */
export const PROXY_COUNTRY_CODES: readonly string[] = Object.entries(COUNTRY_CODE_TABLE).flatMap(([first, seconds]) => [...seconds].map((s) => `${first}${s}`));
const CODES = new Set(PROXY_COUNTRY_CODES);
export const isProxyCountryCode = (code: string): boolean => CODES.has(code);
