import Router from '@koa/router';
import { validate } from '@lore/runtime';
import { changeVault, createVault, removeVault, vaultOf, vaultsOf } from '../../application/governance';
import { bodyOf, requireWrite, type GraphState, type RouteDeps } from '../context';
import { CreateVaultSchema, UpdateVaultSchema } from './schema';

/** Vault definitions of the caller's memory; `v_unassigned` is listed first and cannot be removed. */
export function vaultRoutes(deps: RouteDeps): Router<GraphState> {
  const router = new Router<GraphState>();
  router.get('/vaults', async (ctx) => {
    const vaults = await vaultsOf(deps.memory, ctx.state.scope);
    ctx.body = { vaults, count: vaults.length };
  });
  router.post('/vaults', requireWrite(), async (ctx) => {
    const body = validate(CreateVaultSchema, bodyOf(ctx));
    ctx.status = 201;
    ctx.body = await createVault(deps.memory, ctx.state.scope, body);
  });
  router.get('/vaults/:vault_id', async (ctx) => {
    ctx.body = await vaultOf(deps.memory, ctx.state.scope, ctx.params.vault_id ?? '');
  });
  router.patch('/vaults/:vault_id', requireWrite(), async (ctx) => {
    const body = validate(UpdateVaultSchema, bodyOf(ctx));
    ctx.body = await changeVault(deps.memory, ctx.state.scope, ctx.params.vault_id ?? '', body);
  });
  router.delete('/vaults/:vault_id', requireWrite(), async (ctx) => {
    ctx.body = await removeVault(deps.memory, ctx.state.scope, ctx.params.vault_id ?? '');
  });
  return router;
}
