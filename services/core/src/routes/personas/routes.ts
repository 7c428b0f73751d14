import type { z } from 'zod';
import type { Principal } from '../../application/principal';
import type { PersonaRow } from '../../store/personas';
import { CORE_PREFIX, CORE_SECURITY, SPEC_INPUT, detail, route, type CoreGuard } from '../route';
import { createPersonaBody, personaListView, personaParams, personaView, presentPersona, tenantQuery, updatePersonaBody } from './schema';

export interface PersonaRouteDeps {
  guard: CoreGuard;
  personas: {
    list(p: Principal): Promise<PersonaRow[]>;
    get(p: Principal, id: number): Promise<PersonaRow>;
    create(p: Principal, input: z.output<typeof createPersonaBody>): Promise<PersonaRow>;
    change(p: Principal, id: number, patch: z.output<typeof updatePersonaBody>): Promise<PersonaRow>;
    remove(p: Principal, id: number): Promise<void>;
  };
}

const ADMIN_ONLY = { 403: detail('tenant-wide administrators only (a tenant key bound to no workspace, project or memories, or an admin user), or a read-only key') };
const NOT_FOUND = { 404: detail('no such persona in the tenant') };

/** Personas: anyone of the tenant may list and read them; administrators create, change and delete them. */
export function personaRoutes(deps: PersonaRouteDeps) {
  const tags = ['personas'];
  const one = `${CORE_PREFIX}/persona/:persona_id`;
  return [
    route({
      method: 'get', path: `${CORE_PREFIX}/persona`, operationId: 'listPersonas', summary: 'List personas', tags,
      security: CORE_SECURITY, guards: [deps.guard('read')], query: tenantQuery, ...SPEC_INPUT,
      ok: { status: 200, description: 'the tenant\'s personas, the default (id 0) first', schema: personaListView },
      handler: async (ctx) => (await deps.personas.list(ctx.state.principal)).map(presentPersona),
    }),
    route({
      method: 'get', path: one, operationId: 'getPersona', summary: 'Get a persona', tags,
      security: CORE_SECURITY, guards: [deps.guard('read')], params: personaParams, query: tenantQuery, ...SPEC_INPUT,
      ok: { status: 200, description: 'the persona', schema: personaView },
      responses: NOT_FOUND,
      handler: async (ctx, { params }) => presentPersona(await deps.personas.get(ctx.state.principal, params.persona_id)),
    }),
    route({
      method: 'post', path: `${CORE_PREFIX}/persona`, operationId: 'createPersona', summary: 'Create a persona', tags,
      security: CORE_SECURITY, guards: [deps.guard('tenant-admin')], query: tenantQuery, body: createPersonaBody, ...SPEC_INPUT,
      ok: { status: 201, description: 'the persona', schema: personaView },
      responses: { ...ADMIN_ONLY, 400: detail('an unknown tool id'), 409: detail('the tenant has the most personas it may have (200)') },
      handler: async (ctx, { body }) => presentPersona(await deps.personas.create(ctx.state.principal, body)),
    }),
    route({
      method: 'patch', path: one, operationId: 'updatePersona', summary: 'Change a persona', tags,
      security: CORE_SECURITY, guards: [deps.guard('tenant-admin')], params: personaParams, query: tenantQuery, body: updatePersonaBody, ...SPEC_INPUT,
      ok: { status: 200, description: 'the persona as changed', schema: personaView },
      responses: { ...ADMIN_ONLY, ...NOT_FOUND, 400: detail('an unknown tool id, or the default persona (id 0), which is the same in every tenant and is not changed') },
      handler: async (ctx, { params, body }) => presentPersona(await deps.personas.change(ctx.state.principal, params.persona_id, body)),
    }),
    route({
      method: 'delete', path: one, operationId: 'deletePersona', summary: 'Delete a persona', tags,
      description: 'Sessions created with it keep it; new sessions cannot start with it. The default persona (id 0) cannot be deleted.',
      security: CORE_SECURITY, guards: [deps.guard('tenant-admin')], params: personaParams, query: tenantQuery, ...SPEC_INPUT,
      ok: { status: 204, description: 'deleted' },
      responses: { ...ADMIN_ONLY, ...NOT_FOUND, 400: detail('the default persona') },
      handler: async (ctx, { params }) => {
        await deps.personas.remove(ctx.state.principal, params.persona_id);
        ctx.status = 204;
      },
    }),
  ];
}
