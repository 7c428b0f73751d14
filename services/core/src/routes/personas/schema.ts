import { z } from 'zod';
import type { PersonaRow } from '../../store/personas';
import { intParam, iso, tenantIdParam, toolIdList } from '../schema-parts';

const sourceTypes = z.array(z.string().min(1).max(64)).max(64);

/** A persona (our design; spec 2 names persona ids only): what a chat session answers with. */
export const personaView = z.object({
  id: z.number().int(),
  name: z.string(),
  description: z.string(),
  instructions: z.string().describe('the system instructions the model is given'),
  tool_ids: z.array(z.number().int()).describe('tools the persona may use (1 = internal_search)'),
  source_types: z.array(z.string()).nullable().describe('source types its searches are limited to; null: all'),
  model: z.string().nullable().describe('the model it answers with; null: the configured default'),
  temperature: z.number().nullable(),
  is_default: z.boolean(),
  time_created: z.string(),
  time_updated: z.string(),
});
export const personaListView = z.array(personaView);

export function presentPersona(p: PersonaRow): z.input<typeof personaView> {
  return {
    id: p.persona_id,
    name: p.name,
    description: p.description,
    instructions: p.instructions,
    tool_ids: p.tool_ids,
    source_types: p.source_types,
    model: p.model,
    temperature: p.temperature,
    is_default: p.is_default,
    time_created: iso(p.created_at),
    time_updated: iso(p.updated_at),
  };
}

const fields = {
  description: z.string().max(2_000),
  instructions: z.string().max(20_000),
  tool_ids: toolIdList,
  source_types: sourceTypes.nullable(),
  model: z.string().min(1).max(200).nullable(),
  temperature: z.number().min(0).max(2).nullable(),
};

export const createPersonaBody = z.strictObject({
  name: z.string().trim().min(1).max(200),
  description: fields.description.optional(),
  instructions: fields.instructions.optional(),
  tool_ids: fields.tool_ids.optional(),
  source_types: fields.source_types.optional(),
  model: fields.model.optional(),
  temperature: fields.temperature.optional(),
});

export const updatePersonaBody = createPersonaBody.partial().refine((b) => Object.keys(b).length > 0, 'name at least one field to change');

export const personaParams = z.object({ persona_id: intParam });
export const tenantQuery = z.object(tenantIdParam);
