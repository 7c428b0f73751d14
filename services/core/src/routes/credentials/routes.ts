import type { CredentialInput } from '../../application/credentials';
import type { Principal } from '../../application/principal';
import type { CredentialRow } from '../../store/credentials';
import { ADMIN_READ, ADMIN_WRITE, MANAGE_PREFIX, adminReads, adminWrites } from '../manage';
import { CORE_SECURITY, SPEC_INPUT, detail, route, type CoreGuard } from '../route';
import { createCredentialBody, credentialListView, credentialParams, credentialView, presentCredential, tenantQuery } from './schema';

export interface CredentialRouteDeps {
  guard: CoreGuard;
  credentials: {
    create(p: Principal, input: CredentialInput): Promise<CredentialRow>;
    list(p: Principal): Promise<CredentialRow[]>;
    get(p: Principal, id: number): Promise<CredentialRow>;
    remove(p: Principal, id: number): Promise<void>;
  };
}

const NOT_FOUND = { 404: detail('no such credential in the tenant') };

/**
 * Credentials (our design; spec 2 shows only the object): the secrets connectors read with, sealed at rest and
 * redacted on every read. Administrators only.
 */
export function credentialRoutes(deps: CredentialRouteDeps) {
  const tags = ['connectors'];
  const one = `${MANAGE_PREFIX}/credential/:credential_id`;
  return [
    route({
      method: 'post', path: `${MANAGE_PREFIX}/credential`, operationId: 'createCredential', summary: 'Create a credential', tags,
      description: '`credential_json` is checked for its source, sealed with the platform key ring, and never read back: the answer shows it redacted.',
      security: CORE_SECURITY, guards: adminWrites(deps.guard), query: tenantQuery, body: createCredentialBody, ...SPEC_INPUT,
      ok: { status: 201, description: 'the credential, redacted', schema: credentialView },
      responses: { ...ADMIN_WRITE, 409: detail('the tenant has 500 credentials, the most it may have') },
      handler: async (ctx, { body }) => presentCredential(await deps.credentials.create(ctx.state.principal, body)),
    }),
    route({
      method: 'get', path: `${MANAGE_PREFIX}/credential`, operationId: 'listCredentials', summary: 'List credentials', tags,
      security: CORE_SECURITY, guards: adminReads(deps.guard), query: tenantQuery, ...SPEC_INPUT,
      ok: { status: 200, description: 'the tenant\'s credentials, oldest first (at most 500, the most it may have), redacted', schema: credentialListView },
      responses: ADMIN_READ,
      handler: async (ctx) => (await deps.credentials.list(ctx.state.principal)).map(presentCredential),
    }),
    route({
      method: 'get', path: one, operationId: 'getCredential', summary: 'Get a credential', tags,
      security: CORE_SECURITY, guards: adminReads(deps.guard), params: credentialParams, query: tenantQuery, ...SPEC_INPUT,
      ok: { status: 200, description: 'the credential, redacted', schema: credentialView },
      responses: { ...ADMIN_READ, ...NOT_FOUND },
      handler: async (ctx, { params }) => presentCredential(await deps.credentials.get(ctx.state.principal, params.credential_id)),
    }),
    route({
      method: 'delete', path: one, operationId: 'deleteCredential', summary: 'Delete a credential', tags,
      description: 'A credential a cc pair reads with cannot be deleted (400): delete the pair first (`POST /api/manage/admin/deletion-attempt`).',
      security: CORE_SECURITY, guards: adminWrites(deps.guard), params: credentialParams, query: tenantQuery, ...SPEC_INPUT,
      ok: { status: 204, description: 'deleted' },
      responses: { ...ADMIN_WRITE, ...NOT_FOUND, 400: detail('a cc pair reads with it') },
      handler: async (ctx, { params }) => {
        await deps.credentials.remove(ctx.state.principal, params.credential_id);
        ctx.status = 204;
      },
    }),
  ];
}
