import { z } from 'zod';
import { ConfigError, envBool, envInt, envSecret, parseConfig } from './config';

const schema = z.object({
  PORT: envInt(8080, 1, 65535),
  VERBOSE: envBool(false),
  SIGNING_KEY: envSecret(16),
  DATABASE_URL: z.string().url(),
});

describe('parseConfig', () => {
  it('parses with defaults applied', () => {
    const c = parseConfig(schema, { SIGNING_KEY: 'k'.repeat(16), DATABASE_URL: 'postgres://h/db' });
    expect(c).toEqual({ PORT: 8080, VERBOSE: false, SIGNING_KEY: 'k'.repeat(16), DATABASE_URL: 'postgres://h/db' });
  });

  it('reports every problem at once, secrets without defaults included', () => {
    let err: unknown;
    try {
      parseConfig(schema, { PORT: '70000', VERBOSE: 'maybe', DATABASE_URL: 'not a url' });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    const problems = (err as ConfigError).problems;
    expect(problems).toHaveLength(4);
    expect(problems.join('\n')).toMatch(/PORT: must be an integer between 1 and 65535/);
    expect(problems.join('\n')).toMatch(/VERBOSE:/);
    expect(problems.join('\n')).toMatch(/SIGNING_KEY: is required \(secrets have no default\)/);
    expect(problems.join('\n')).toMatch(/DATABASE_URL:/);
  });

  it('never reads "false" as true and rejects short secrets', () => {
    const base = { SIGNING_KEY: 'k'.repeat(16), DATABASE_URL: 'postgres://h/db' };
    expect(parseConfig(schema, { ...base, VERBOSE: 'false' }).VERBOSE).toBe(false);
    expect(parseConfig(schema, { ...base, VERBOSE: '1' }).VERBOSE).toBe(true);
    expect(() => parseConfig(schema, { ...base, SIGNING_KEY: 'short' })).toThrow(/at least 16 characters/);
  });

  it('reads an integer setting in decimal digits only', () => {
    const base = { SIGNING_KEY: 'k'.repeat(16), DATABASE_URL: 'postgres://h/db' };
    expect(parseConfig(schema, { ...base, PORT: '8081' }).PORT).toBe(8081);
    expect(parseConfig(schema, { ...base, PORT: ' 8082 ' }).PORT).toBe(8082);
    expect(parseConfig(schema, { ...base, PORT: '' }).PORT).toBe(8080);
    for (const odd of ['0x1f90', '8e3', '8080.0', '+8080', '0b11', '8_080']) {
      expect(() => parseConfig(schema, { ...base, PORT: odd })).toThrow(new RegExp(`PORT: must be an integer between 1 and 65535, got "${odd.replace('+', '\\+').replace('.', '\\.')}"`));
    }
  });

  it('does not print secret values in its message', () => {
    try {
      parseConfig(schema, { SIGNING_KEY: 'tooshort-secret', DATABASE_URL: 'x' });
      throw new Error('expected a ConfigError');
    } catch (e) {
      expect((e as Error).message).not.toContain('tooshort-secret');
    }
  });
});
