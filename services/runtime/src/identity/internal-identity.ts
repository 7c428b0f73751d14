import { SignJWT, jwtVerify, errors as joseErrors } from 'jose';
import { IdentityClaimsSchema, type Identity } from '@lore/contracts';
import { AppError } from '../errors/app-error';

/** The header carrying the gateway's signed identity to internal services. Clients can never set it. */
export const IDENTITY_HEADER = 'x-lore-identity';

/** Trust headers a client might try to send; the gateway strips every one of them before forwarding. */
export const TRUST_HEADERS = [
  IDENTITY_HEADER,
  'x-tenant-id',
  'x-lore-tenant',
  'x-user-id',
  'x-user-role',
  'x-role',
  'x-workspace-id',
  'x-memory-id',
  'x-forwarded-user',
  'x-authenticated-user',
];

export type { CredentialKind, Identity } from '@lore/contracts';

const ISSUER = 'lore-gateway';
const AUDIENCE = 'lore-internal';

export class IdentitySigner {
  private readonly key: Uint8Array;
  constructor(secret: string, private readonly ttlSeconds = 60) {
    if (secret.length < 32) throw new Error('the internal identity secret must be at least 32 characters');
    this.key = new TextEncoder().encode(secret);
  }

  sign(identity: Identity): Promise<string> {
    return new SignJWT({ idn: identity })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setIssuedAt()
      .setExpirationTime(`${this.ttlSeconds}s`)
      .sign(this.key);
  }

  /** Verifies a token minted by the gateway; anything else is 401. */
  async verify(token: string | undefined): Promise<Identity> {
    if (!token) throw AppError.unauthorized('missing gateway identity');
    try {
      const { payload } = await jwtVerify(token, this.key, { issuer: ISSUER, audience: AUDIENCE, algorithms: ['HS256'] });
      // The claims are parsed, not trusted by shape: a token signed with the right secret but carrying claims this
      // version does not understand is refused like a forged one.
      const claims = IdentityClaimsSchema.safeParse(payload.idn);
      if (!claims.success) throw new Error('no valid identity claim');
      return claims.data;
    } catch (err) {
      if (err instanceof joseErrors.JOSEError || err instanceof Error) {
        throw AppError.unauthorized('invalid gateway identity');
      }
      throw err;
    }
  }
}
