import { AppError } from '@lore/runtime';
import { assessHealth, type HealthAssessment } from '../domain/health';
import { UNASSIGNED_VAULT } from '../domain/routing';
import { deleteDocument, fileDocument, getDocument, listDocuments, type DocumentView, type ListFilter } from '../store/documents';
import { getContradiction, healthInputs, listContradictions, resolveContradiction, type ContradictionView } from '../store/governance';
import { deleteVault, getVault, insertVault, listVaults, lockVault, updateVault, type VaultRow } from '../store/vaults';
import { openMemory, rememberMemory, visibleGroups, type MemoryDeps, type MemoryScope } from './context';
import { emitEvent } from './events';

/** Runs `fn` in the tenant's transaction with the memory's lazily created state in place (404 once it was erased). */
async function inMemory<T>(deps: MemoryDeps, scope: MemoryScope, fn: (sql: import('@lore/runtime').Sql) => Promise<T>): Promise<T> {
  const result = await deps.db.withTenant(scope.tenantId, async (sql) => {
    await openMemory(deps, sql, scope);
    return fn(sql);
  });
  rememberMemory(deps, scope);
  return result;
}

export function vaultIdFromName(name: string): string {
  const slug = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .slice(0, 48);
  return `v_${slug || 'vault'}`;
}

export async function vaultsOf(deps: MemoryDeps, scope: MemoryScope): Promise<VaultRow[]> {
  return inMemory(deps, scope, (sql) => listVaults(sql, scope.tenantId, scope.memoryId));
}

export async function vaultOf(deps: MemoryDeps, scope: MemoryScope, vaultId: string): Promise<VaultRow> {
  const v = await inMemory(deps, scope, (sql) => getVault(sql, scope.tenantId, scope.memoryId, vaultId));
  if (!v) throw AppError.notFound('vault');
  return v;
}

export async function createVault(
  deps: MemoryDeps,
  scope: MemoryScope,
  input: { vault_id?: string; name: string; description: string; examples: string[] },
): Promise<VaultRow> {
  const vaultId = input.vault_id ?? vaultIdFromName(input.name);
  // Every memory has it: named or derived from the name, the id is taken (409), as any existing vault's is.
  if (vaultId === UNASSIGNED_VAULT) throw new AppError('CONFLICT', `vault ${vaultId} already exists`);
  return inMemory(deps, scope, async (sql) => {
    const ok = await insertVault(sql, scope.tenantId, scope.memoryId, { vault_id: vaultId, name: input.name, description: input.description, examples: input.examples });
    if (!ok) throw new AppError('CONFLICT', `vault ${vaultId} already exists`);
    return (await getVault(sql, scope.tenantId, scope.memoryId, vaultId)) as VaultRow;
  });
}

export async function changeVault(
  deps: MemoryDeps,
  scope: MemoryScope,
  vaultId: string,
  patch: { name?: string; description?: string; examples?: string[] },
): Promise<VaultRow> {
  return inMemory(deps, scope, async (sql) => {
    if (!(await updateVault(sql, scope.tenantId, scope.memoryId, vaultId, patch))) throw AppError.notFound('vault');
    return (await getVault(sql, scope.tenantId, scope.memoryId, vaultId)) as VaultRow;
  });
}

export async function removeVault(deps: MemoryDeps, scope: MemoryScope, vaultId: string): Promise<{ moved_documents: number }> {
  if (vaultId === UNASSIGNED_VAULT) throw new AppError('CONFLICT', 'v_unassigned always exists and cannot be deleted');
  const moved = await inMemory(deps, scope, (sql) => deleteVault(sql, scope.tenantId, scope.memoryId, vaultId));
  if (moved === null) throw AppError.notFound('vault');
  return { moved_documents: moved };
}

// What the caller sees (`visibleGroups`): an administrator every document; anyone else the public ones and those a
// connector shared with one of their groups. Any other document is, for them, as absent as another tenant's (404,
// never listed).

export async function documentOf(deps: MemoryDeps, scope: MemoryScope, docId: string): Promise<DocumentView> {
  const d = await deps.db.withTenant(scope.tenantId, (sql) => getDocument(sql, scope.tenantId, scope.memoryId, docId, visibleGroups(scope)));
  if (!d) throw AppError.notFound('document');
  return d;
}

export async function documentsOf(deps: MemoryDeps, scope: MemoryScope, filter: ListFilter): Promise<DocumentView[]> {
  return deps.db.withTenant(scope.tenantId, (sql) => listDocuments(sql, scope.tenantId, scope.memoryId, { ...filter, groups: visibleGroups(scope) }));
}

export async function removeDocument(deps: MemoryDeps, scope: MemoryScope, docId: string): Promise<void> {
  const ok = await deps.db.withTenant(scope.tenantId, async (sql) => {
    const groups = visibleGroups(scope);
    if (groups !== null && !(await getDocument(sql, scope.tenantId, scope.memoryId, docId, groups))) return false;
    return deleteDocument(sql, scope.tenantId, scope.memoryId, docId);
  });
  if (!ok) throw AppError.notFound('document');
}

/** Review action: files a `v_unassigned` document into a vault. Filing into v_unassigned itself is refused. */
export async function fileIntoVault(deps: MemoryDeps, scope: MemoryScope, docId: string, vaultId: string): Promise<DocumentView> {
  if (vaultId === UNASSIGNED_VAULT) throw new AppError('UNPROCESSABLE', 'choose a vault other than v_unassigned');
  return inMemory(deps, scope, async (sql) => {
    const doc = await getDocument(sql, scope.tenantId, scope.memoryId, docId, visibleGroups(scope));
    if (!doc) throw AppError.notFound('document');
    // Locked until the commit: the vault's deletion committed before (404) or waits and then moves this document.
    if (!(await lockVault(sql, scope.tenantId, scope.memoryId, vaultId))) throw AppError.notFound('vault');
    await fileDocument(sql, scope.tenantId, scope.memoryId, docId, vaultId);
    return (await getDocument(sql, scope.tenantId, scope.memoryId, docId)) as DocumentView;
  });
}

export async function contradictionsOf(deps: MemoryDeps, scope: MemoryScope, status: 'open' | 'resolved' | undefined, limit: number): Promise<ContradictionView[]> {
  return deps.db.withTenant(scope.tenantId, (sql) => listContradictions(sql, scope.tenantId, scope.memoryId, status, limit, visibleGroups(scope)));
}

export type Resolution = 'keep_first' | 'keep_second' | 'both_valid' | 'dismissed';

/** Resolves a contradiction and records `memory.entity.contradiction_resolved` in the same transaction. */
export async function resolve(
  deps: MemoryDeps,
  scope: MemoryScope,
  id: string,
  resolution: Resolution,
  note: string | null,
): Promise<ContradictionView> {
  return deps.db.withTenant(scope.tenantId, async (sql) => {
    const c = await getContradiction(sql, scope.tenantId, scope.memoryId, id, visibleGroups(scope));
    if (!c) throw AppError.notFound('contradiction');
    const [first, second] = c.sources;
    const kept = resolution === 'keep_first' ? first.document_id : resolution === 'keep_second' ? second.document_id : null;
    if (!(await resolveContradiction(sql, scope.tenantId, scope.memoryId, id, resolution, kept, note))) {
      throw new AppError('CONFLICT', 'the contradiction is already resolved');
    }
    await emitEvent(sql, 'memory.entity.contradiction_resolved', scope, { contradiction_id: id, resolution, kept_document_id: kept });
    const { workspace_id: _w, ...view } = (await getContradiction(sql, scope.tenantId, scope.memoryId, id)) as ContradictionView & { workspace_id: string };
    return view;
  });
}

/** Computes the memory's health; with `publish` also records `memory.health.assessed`. */
export async function health(deps: MemoryDeps, scope: MemoryScope, publish: boolean): Promise<HealthAssessment & { assessed_at: string }> {
  return inMemory(deps, scope, async (sql) => {
    const h = assessHealth(await healthInputs(sql, scope.tenantId, scope.memoryId, deps.config.staleAfterMs));
    if (publish) {
      await emitEvent(sql, 'memory.health.assessed', scope, {
        score: h.score,
        status: h.status,
        diagnostics: h.diagnostics.map((d) => ({ code: d.code, severity: d.severity, value: d.value })),
      });
    }
    return { ...h, assessed_at: new Date().toISOString() };
  });
}
