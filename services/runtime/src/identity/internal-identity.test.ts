import { SignJWT } from 'jose';
import { IdentitySigner, type Identity } from './internal-identity';

const SECRET = 'a-test-secret-that-is-long-enough-for-hs256';
const identity: Identity = {
  tenant_id: 'ten_1',
  workspace_id: 'ws_1',
  memory_id: 'mem_1',
  credential: 'ck_live',
  subject: 'key_1',
  role: 'member',
  project_id: null,
  scopes: { modules: ['memory'], access: 'read' },
  request_id: 'req_1',
};

/** A token signed with the right secret, issuer and audience, carrying whatever claims the test gives. */
function forge(idn: unknown): Promise<string> {
  return new SignJWT({ idn })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuer('lore-gateway')
    .setAudience('lore-internal')
    .setIssuedAt()
    .setExpirationTime('60s')
    .sign(new TextEncoder().encode(SECRET));
}

describe('IdentitySigner', () => {
  const signer = new IdentitySigner(SECRET);

  it('verifies the identity it signed, claim for claim', async () => {
    await expect(signer.verify(await signer.sign(identity))).resolves.toEqual(identity);
  });

  it('refuses a correctly signed token whose claims do not match the contract', async () => {
    for (const idn of [undefined, { ...identity, tenant_id: '' }, { ...identity, credential: 'root' }, { ...identity, scopes: { modules: ['everything'] } }]) {
      await expect(signer.verify(await forge(idn))).rejects.toMatchObject({ code: 'UNAUTHORIZED' });
    }
  });

  it('refuses a token signed with another secret', async () => {
    const other = new IdentitySigner(`${SECRET}-other`);
    await expect(signer.verify(await other.sign(identity))).rejects.toMatchObject({ code: 'UNAUTHORIZED' });
  });

  it('signs a client address for one key, which no identity check takes and no other key or secret reads', async () => {
    const token = await signer.signClientAddress('203.0.113.9', 'a'.repeat(64));
    await expect(signer.verifyClientAddress(token, 'a'.repeat(64))).resolves.toBe('203.0.113.9');
    await expect(signer.verifyClientAddress(token, 'b'.repeat(64))).resolves.toBeNull();
    await expect(new IdentitySigner(`${SECRET}-other`).verifyClientAddress(token, 'a'.repeat(64))).resolves.toBeNull();
    await expect(signer.verify(token)).rejects.toMatchObject({ code: 'UNAUTHORIZED' });
    // An identity is no client address either, nor is a plain address or nothing.
    for (const other of [await signer.sign(identity), '203.0.113.9', '', undefined]) await expect(signer.verifyClientAddress(other, 'a'.repeat(64))).resolves.toBeNull();
  });
});
