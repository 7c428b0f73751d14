import { generateKeyPairSync, verify } from 'node:crypto';
import { JWT_BEARER_GRANT, isFresh, readTokenAnswer, serviceAccountAssertion, tokenRequestBody, tokenUrlOf, type GoogleCredential, type ServiceAccountKey } from './google-auth';

const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const key: ServiceAccountKey = {
  type: 'service_account',
  client_email: 'indexer@p.iam.gserviceaccount.com',
  private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
  private_key_id: 'kid-1',
  token_uri: 'https://oauth2.example/token',
};

function decode(part: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(part, 'base64url').toString()) as Record<string, unknown>;
}

describe('service account assertion', () => {
  test('is an RS256 JWS over the claims Google asks for, verifiable with the public key', () => {
    const jwt = serviceAccountAssertion(key, 'https://oauth2.example/token', 'admin@lore.example', 1_700_000_000);
    const [h, p, s] = jwt.split('.') as [string, string, string];
    expect(decode(h)).toEqual({ alg: 'RS256', typ: 'JWT', kid: 'kid-1' });
    expect(decode(p)).toEqual({
      iss: key.client_email,
      sub: 'admin@lore.example',
      aud: 'https://oauth2.example/token',
      scope: 'https://www.googleapis.com/auth/drive.readonly',
      iat: 1_700_000_000,
      exp: 1_700_003_600,
    });
    expect(verify('sha256', Buffer.from(`${h}.${p}`), publicKey, Buffer.from(s, 'base64url'))).toBe(true);
    expect(verify('sha256', Buffer.from(`${h}.${p}x`), publicKey, Buffer.from(s, 'base64url'))).toBe(false);
  });

  test('without a subject there is no sub; a key whose line breaks stayed escaped still signs', () => {
    const escaped = { ...key, private_key: key.private_key.replace(/\n/g, '\\n') };
    const jwt = serviceAccountAssertion(escaped, 'aud', null, 10);
    const [h, p, s] = jwt.split('.') as [string, string, string];
    expect(decode(p).sub).toBeUndefined();
    expect(verify('sha256', Buffer.from(`${h}.${p}`), publicKey, Buffer.from(s, 'base64url'))).toBe(true);
  });
});

describe('token requests and answers', () => {
  const sa: GoogleCredential = { google_service_account_key: key, google_primary_admin: 'admin@lore.example' };
  const oauth: GoogleCredential = { google_tokens: { client_id: 'cid', client_secret: 'cs', refresh_token: 'rt' }, google_primary_admin: 'admin@lore.example' };

  test('the credential names its token URL, else the fallback', () => {
    expect(tokenUrlOf(sa, 'https://fallback/token')).toBe('https://oauth2.example/token');
    expect(tokenUrlOf(oauth, 'https://fallback/token')).toBe('https://fallback/token');
  });

  test('bodies: the JWT bearer grant, the refresh grant', () => {
    const a = new URLSearchParams(tokenRequestBody(sa, 'aud', 'admin@lore.example', 5));
    expect(a.get('grant_type')).toBe(JWT_BEARER_GRANT);
    expect(a.get('assertion')?.split('.')).toHaveLength(3);
    expect(Object.fromEntries(new URLSearchParams(tokenRequestBody(oauth, 'aud', null, 5)))).toEqual({ grant_type: 'refresh_token', refresh_token: 'rt', client_id: 'cid', client_secret: 'cs' });
  });

  test('answers: a token with its margin, an OAuth error code, never free text', () => {
    expect(readTokenAnswer(200, '{"access_token":"at","expires_in":3600}', 1000)).toEqual({ ok: true, token: { token: 'at', expiresAt: 1000 + 3_600_000 - 60_000 } });
    expect(readTokenAnswer(200, '{"access_token":"at","expires_in":10}', 0)).toEqual({ ok: true, token: { token: 'at', expiresAt: 5000 } });
    expect(readTokenAnswer(200, '{"access_token":"at"}', 0)).toEqual({ ok: true, token: { token: 'at', expiresAt: null } });
    expect(readTokenAnswer(400, '{"error":"invalid_grant","error_description":"secret stuff"}', 0)).toEqual({ ok: false, error: 'invalid_grant' });
    expect(readTokenAnswer(400, '{"error":"has spaces and <html>"}', 0)).toEqual({ ok: false, error: 'status 400' });
    expect(readTokenAnswer(502, '<html>', 0)).toEqual({ ok: false, error: 'status 502' });
    expect(readTokenAnswer(200, '{}', 0)).toEqual({ ok: false, error: 'status 200' });
  });

  test('freshness', () => {
    expect(isFresh(undefined, 0)).toBe(false);
    expect(isFresh({ token: 't', expiresAt: null }, 10)).toBe(true);
    expect(isFresh({ token: 't', expiresAt: 100 }, 99)).toBe(true);
    expect(isFresh({ token: 't', expiresAt: 100 }, 100)).toBe(false);
  });
});
