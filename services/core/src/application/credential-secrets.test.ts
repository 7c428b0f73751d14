import { SEALED_PREFIX, SealedValueError, SecretBox, generateEncryptionKey, parseEncryptionKeys } from '@lore/runtime';
import { openCredentialJson, sealCredentialJson } from './credential-secrets';

const box = new SecretBox(parseEncryptionKeys(generateEncryptionKey('unit')));
const json = { google_tokens: { client_id: 'c', client_secret: 'shh-client-secret', refresh_token: 'shh-refresh' }, google_primary_admin: 'admin@acme.example' };

describe('credential secrets at rest', () => {
  it('seals every value, keeps the keys, and opens to what was given', () => {
    const sealed = sealCredentialJson(box, 'tenant-a', 7, json);
    expect(Object.keys(sealed)).toEqual(Object.keys(json));
    for (const v of Object.values(sealed)) expect(v.startsWith(SEALED_PREFIX)).toBe(true);
    expect(JSON.stringify(sealed)).not.toContain('shh-');
    expect(JSON.stringify(sealed)).not.toContain('admin@acme.example');
    expect(openCredentialJson(box, 'tenant-a', 7, sealed)).toEqual(json);
  });

  it('does not open on another credential, tenant or key', () => {
    const sealed = sealCredentialJson(box, 'tenant-a', 7, json);
    expect(() => openCredentialJson(box, 'tenant-a', 8, sealed)).toThrow(SealedValueError);
    expect(() => openCredentialJson(box, 'tenant-b', 7, sealed)).toThrow(SealedValueError);
    const swapped = { google_tokens: sealed.google_primary_admin!, google_primary_admin: sealed.google_tokens! };
    expect(() => openCredentialJson(box, 'tenant-a', 7, swapped)).toThrow(SealedValueError);
  });
});
