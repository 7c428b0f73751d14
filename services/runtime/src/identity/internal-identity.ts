import { SignJWT, jwtVerify, errors as joseErrors } from 'jose';
import { IdentityClaimsSchema, type Identity } from '@lore/contracts';
import { AppError } from '../errors/app-error';

/** The header carrying the gateway's signed identity to internal services. Clients can never set it. */
export const IDENTITY_HEADER = 'x-lore-identity';

/**
 * The header on which an internal service that calls the API back for a client (the MCP tool server) carries that
 * client's address, signed (`IdentitySigner.signClientAddress`): the gateway checks a key's IP allowlist against it
 * instead of the service's own address, and only when its signature verifies (docs/gateway.md, "IP allowlists").
 */
export const CLIENT_ADDRESS_HEADER = 'x-lore-client-address';

/** Trust headers a client might try to send; the gateway strips every one of them before forwarding. */
export const TRUST_HEADERS = [
  IDENTITY_HEADER,
  CLIENT_ADDRESS_HEADER,
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
/** A carried client address is its own kind of token: its audience keeps it from passing as an identity, and back. */
const CLIENT_ADDRESS_ISSUER = 'lore-internal';
const CLIENT_ADDRESS_AUDIENCE = 'lore-gateway-client-address';

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

  /**
   * A client's address, as the gateway saw it, for a call an internal service makes back to the gateway on that
   * client's behalf with the client's own key: bound to the key (its SHA-256, hex), so it speaks for no other key.
   */
  signClientAddress(address: string, keyHash: string): Promise<string> {
    return new SignJWT({ adr: address, kh: keyHash })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setIssuer(CLIENT_ADDRESS_ISSUER)
      .setAudience(CLIENT_ADDRESS_AUDIENCE)
      .setIssuedAt()
      .setExpirationTime(`${this.ttlSeconds}s`)
      .sign(this.key);
  }

  /**
   * The address a token of `signClientAddress` carries, when it verifies and was made for the key of `keyHash`; else
   * null (a token a client wrote, an expired one, one for another key): the caller then goes by what it sees itself.
   */
  async verifyClientAddress(token: string | undefined, keyHash: string): Promise<string | null> {
    if (!token) return null;
    try {
      const { payload } = await jwtVerify(token, this.key, { issuer: CLIENT_ADDRESS_ISSUER, audience: CLIENT_ADDRESS_AUDIENCE, algorithms: ['HS256'] });
      return typeof payload.adr === 'string' && payload.adr !== '' && payload.kh === keyHash ? payload.adr : null;
    } catch {
      return null;
    }
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
