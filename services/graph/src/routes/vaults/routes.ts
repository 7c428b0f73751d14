import type { z } from 'zod';
import type { MemoryScope } from '../../application/context';
import type { VaultRow } from '../../store/vaults';
import { KEY, MEMORY_PREFIX, READ_ONLY, err, route, type MemoryGuard } from '../route';
import { CreateVaultSchema, UpdateVaultSchema, VaultDeletedSchema, VaultListSchema, VaultSchema, presentVault } from './schema';

export interface VaultRouteDeps {
  guard: MemoryGuard;
  vaults: {
    list: (scope: MemoryScope) => Promise<VaultRow[]>;
    get: (scope: MemoryScope, vaultId: string) => Promise<VaultRow>;
    create: (scope: MemoryScope, input: z.output<typeof CreateVaultSchema>) => Promise<VaultRow>;
    change: (scope: MemoryScope, vaultId: string, patch: z.output<typeof UpdateVaultSchema>) => Promise<VaultRow>;
    remove: (scope: MemoryScope, vaultId: string) => Promise<{ moved_documents: number }>;
  };
}

/** Vault definitions of the caller's memory; `v_unassigned` is listed first and cannot be removed. */
export function vaultRoutes(deps: VaultRouteDeps) {
  const tags = ['vaults'];
  const vaultPath = `${MEMORY_PREFIX}/vaults/:vault_id`;
  return [
    route({
      method: 'get', path: `${MEMORY_PREFIX}/vaults`, operationId: 'listVaults', summary: 'List vaults', tags,
      security: KEY, guards: [deps.guard('read')],
      ok: { status: 200, description: 'every vault of the memory, `v_unassigned` first', schema: VaultListSchema },
      handler: async (ctx) => {
        const vaults = await deps.vaults.list(ctx.state.scope);
        return { vaults: vaults.map(presentVault), count: vaults.length };
      },
    }),
    route({
      method: 'post', path: `${MEMORY_PREFIX}/vaults`, operationId: 'createVault', summary: 'Create a vault', tags,
      security: KEY, guards: [deps.guard('write')],
      body: CreateVaultSchema,
      ok: { status: 201, description: 'the vault', schema: VaultSchema },
      responses: { ...READ_ONLY, 409: err('a vault with this id exists') },
      handler: async (ctx, { body }) => presentVault(await deps.vaults.create(ctx.state.scope, body)),
    }),
    route({
      method: 'get', path: vaultPath, operationId: 'getVault', summary: 'A vault', tags,
      security: KEY, guards: [deps.guard('read')],
      ok: { status: 200, description: 'the vault', schema: VaultSchema },
      handler: async (ctx, { params }) => presentVault(await deps.vaults.get(ctx.state.scope, params.vault_id ?? '')),
    }),
    route({
      method: 'patch', path: vaultPath, operationId: 'updateVault', summary: 'Change a vault', tags,
      security: KEY, guards: [deps.guard('write')],
      body: UpdateVaultSchema,
      ok: { status: 200, description: 'the vault', schema: VaultSchema },
      responses: READ_ONLY,
      handler: async (ctx, { params, body }) => presentVault(await deps.vaults.change(ctx.state.scope, params.vault_id ?? '', body)),
    }),
    route({
      method: 'delete', path: vaultPath, operationId: 'deleteVault', summary: 'Delete a vault (its documents return to v_unassigned)', tags,
      security: KEY, guards: [deps.guard('write')],
      ok: { status: 200, description: 'how many documents went back to `v_unassigned` and the review queue', schema: VaultDeletedSchema },
      responses: { ...READ_ONLY, 409: err('`v_unassigned` cannot be deleted') },
      handler: async (ctx, { params }) => {
        const r = await deps.vaults.remove(ctx.state.scope, params.vault_id ?? '');
        return { moved_documents: r.moved_documents };
      },
    }),
  ];
}
