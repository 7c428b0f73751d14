import { BROWSER_MODEL_IDS, DEEP_SEARCH_MODEL_LABELS, LEGACY_MODEL_LABELS, PROXY_COUNTRY_CODES, isProxyCountryCode } from './session-options';

describe('session options', () => {
  it('has the spec\'s country codes: lowercase pairs, no duplicates, as listed per first letter', () => {
    expect(PROXY_COUNTRY_CODES).toHaveLength(247);
    expect(new Set(PROXY_COUNTRY_CODES).size).toBe(PROXY_COUNTRY_CODES.length);
    for (const code of ['ad', 'de', 'us', 'uk', 'zw', 'om', 'qa', 'xk', 'ss']) expect(isProxyCountryCode(code)).toBe(true);
    for (const code of ['aa', 'ab', 'dd', 'gb', 'DE', 'd', 'deu', '', 'eu', 'zz']) expect(isProxyCountryCode(code)).toBe(false);
  });

  it('has the legacy labels for web research and those plus the browser ids for deep search', () => {
    expect(LEGACY_MODEL_LABELS).toHaveLength(7);
    expect(BROWSER_MODEL_IDS).toEqual(['gemini-3-flash', 'claude-sonnet-4.6', 'claude-opus-4.6', 'gpt-5.4-mini']);
    expect(DEEP_SEARCH_MODEL_LABELS).toHaveLength(11);
  });
});
