import { SignJWT, jwtVerify, errors as joseErrors } from 'jose';
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

export type CredentialKind = 'ck_live' | 'ck_test' | 'ck_eph' | 'mk' | 'oauth' | 'session';

/** Who is calling, as verified by the gateway. Internal services read nothing else about the caller. */
export interface Identity {
  tenant_id: string;
  /** The workspace the request runs in (the active one unless the credential pins another). */
  workspace_id: string;
  /** The memory the request targets: the key's memory for mk_ keys, else the workspace's primary memory. */
  memory_id: string;
  credential: CredentialKind;
  /** API key id, OAuth client id, or user id for sessions. */
  subject: string;
  role: string;
  project_id?: string | null;
  /** Key scope; empty means unrestricted. */
  scopes?: { modules?: string[]; memories?: string[]; access?: 'read' | 'write' | 'read_write' };
  request_id?: string;
}

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
      const idn = payload.idn as Identity | undefined;
      if (!idn || typeof idn.tenant_id !== 'string' || !idn.tenant_id) throw new Error('no identity claim');
      return idn;
    } catch (err) {
      if (err instanceof joseErrors.JOSEError || err instanceof Error) {
        throw AppError.unauthorized('invalid gateway identity');
      }
      throw err;
    }
  }
}
