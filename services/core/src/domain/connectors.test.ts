import { CREDENTIAL_MASK, accessProblem, distinctIds, ownerSubject, redactCredentialJson, statusChange } from './connectors';

describe('connector rules', () => {
  it('redacts a credential to its keys, every value the fixed mask', () => {
    expect(CREDENTIAL_MASK).toBe('********');
    expect(redactCredentialJson({ google_tokens: { refresh_token: 'r' }, google_primary_admin: 'a@b.example', n: 3 })).toEqual({
      google_tokens: '********',
      google_primary_admin: '********',
      n: '********',
    });
    expect(redactCredentialJson({})).toEqual({});
  });

  it('allows groups on private access only', () => {
    expect(accessProblem('private', [1, 2])).toBeNull();
    expect(accessProblem('private', [])).toBeNull();
    expect(accessProblem('public', [])).toBeNull();
    expect(accessProblem('public', [1])).toMatch(/private/);
  });

  it('pauses and resumes, leaves an unchanged status alone, and refuses a pair being deleted', () => {
    expect(statusChange('ACTIVE', 'PAUSED')).toBe('change');
    expect(statusChange('PAUSED', 'ACTIVE')).toBe('change');
    expect(statusChange('ACTIVE', 'ACTIVE')).toBe('unchanged');
    expect(statusChange('DELETING', 'ACTIVE')).toBe('deleting');
    expect(statusChange('DELETING', 'PAUSED')).toBe('deleting');
  });

  it('takes the subject out of an owner string', () => {
    expect(ownerSubject('session:6f1c0a5e-user')).toBe('6f1c0a5e-user');
    expect(ownerSubject('ck_live:key_123')).toBe('key_123');
    expect(ownerSubject('oauth:client:with:colons')).toBe('client:with:colons');
    expect(ownerSubject('bare')).toBe('bare');
  });

  it('orders ids and keeps each once', () => {
    expect(distinctIds([3, 1, 3, 2])).toEqual([1, 2, 3]);
  });
});
