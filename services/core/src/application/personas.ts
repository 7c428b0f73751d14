import { DEFAULT_PERSONA, DEFAULT_PERSONA_ID } from '../domain/personas';
import { unknownToolIds } from '../domain/tools';
import { coreError } from './errors';
import { countPersonasLocked, deletePersona, ensureDefaultPersona, getPersona, insertPersona, listPersonas, updatePersona, type PersonaFields, type PersonaRow } from '../store/personas';
import type { CoreDeps } from './context';
import type { Principal } from './principal';

export type PersonaInput = Partial<PersonaFields> & { name: string };

/**
 * The default persona exists before any chat request of the tenant reads personas. It is written in a transaction
 * of its own, and the tenant is remembered as seeded only once that committed: a request whose own transaction is
 * rolled back (a refused input) must not leave this process believing a persona exists that was never stored.
 */
export async function seedTenant(deps: CoreDeps, tenantId: string): Promise<void> {
  if (deps.seededTenants.has(tenantId)) return;
  await deps.db.withTenant(tenantId, (sql) => ensureDefaultPersona(sql, tenantId, DEFAULT_PERSONA_ID, { ...DEFAULT_PERSONA, tool_ids: [...DEFAULT_PERSONA.tool_ids] }));
  deps.seededTenants.add(tenantId);
}

function fieldsOf(input: PersonaInput, base?: PersonaRow): PersonaFields {
  const fields: PersonaFields = {
    name: input.name,
    description: input.description ?? base?.description ?? '',
    instructions: input.instructions ?? base?.instructions ?? '',
    tool_ids: input.tool_ids ?? base?.tool_ids ?? [],
    source_types: input.source_types !== undefined ? input.source_types : (base?.source_types ?? null),
    model: input.model !== undefined ? input.model : (base?.model ?? null),
    temperature: input.temperature !== undefined ? input.temperature : (base?.temperature ?? null),
  };
  const unknown = unknownToolIds(fields.tool_ids);
  if (unknown.length > 0) throw coreError('BAD_REQUEST', `unknown tool id(s): ${unknown.join(', ')}`);
  return fields;
}

export async function personaList(deps: CoreDeps, p: Principal): Promise<PersonaRow[]> {
  await seedTenant(deps, p.tenantId);
  return deps.db.withTenant(p.tenantId, (sql) => listPersonas(sql, p.tenantId));
}

export async function personaOf(deps: CoreDeps, p: Principal, id: number): Promise<PersonaRow> {
  await seedTenant(deps, p.tenantId);
  const row = await deps.db.withTenant(p.tenantId, (sql) => getPersona(sql, p.tenantId, id));
  if (!row) throw coreError('NOT_FOUND', 'persona not found');
  return row;
}

/**
 * Live personas a tenant may have (the default not counted): every list answers them all, and each may hold 20,000
 * characters of instructions, so the list is bounded by this and not by the tenant.
 */
export const MAX_PERSONAS_PER_TENANT = 200;

export function createPersona(deps: CoreDeps, p: Principal, input: PersonaInput): Promise<PersonaRow> {
  const fields = fieldsOf(input);
  return deps.db.withTenant(p.tenantId, async (sql) => {
    if ((await countPersonasLocked(sql, p.tenantId)) >= MAX_PERSONAS_PER_TENANT) {
      throw coreError('CONFLICT', `a tenant may have at most ${MAX_PERSONAS_PER_TENANT} personas: delete one it no longer uses first`);
    }
    return insertPersona(sql, p.tenantId, fields);
  });
}

/**
 * PATCH semantics: fields left out keep their value; `null` clears the nullable ones. The default persona is the same
 * in every tenant (its sessions say `is_global_persona`), so it is not changed: a tenant makes a persona of its own.
 */
export async function changePersona(deps: CoreDeps, p: Principal, id: number, patch: Partial<PersonaInput>): Promise<PersonaRow> {
  if (id === DEFAULT_PERSONA_ID) throw coreError('BAD_REQUEST', 'the default persona is the same in every tenant and cannot be changed; create a persona of your own');
  await seedTenant(deps, p.tenantId);
  const row = await deps.db.withTenant(p.tenantId, async (sql) => {
    const current = await getPersona(sql, p.tenantId, id, true);
    if (!current) return null;
    return updatePersona(sql, p.tenantId, id, fieldsOf({ ...patch, name: patch.name ?? current.name }, current));
  });
  if (!row) throw coreError('NOT_FOUND', 'persona not found');
  return row;
}

/** The default persona cannot be deleted: every tenant keeps one persona sessions can start with. */
export async function removePersona(deps: CoreDeps, p: Principal, id: number): Promise<void> {
  if (id === DEFAULT_PERSONA_ID) throw coreError('BAD_REQUEST', 'the default persona cannot be deleted');
  const removed = await deps.db.withTenant(p.tenantId, (sql) => deletePersona(sql, p.tenantId, id));
  if (!removed) throw coreError('NOT_FOUND', 'persona not found');
}
