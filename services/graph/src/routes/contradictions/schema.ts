import { queryInteger } from '@lore/runtime';
import { z } from 'zod';
import type { ContradictionView } from '../../store/governance';

export const ContradictionsQuery = z.object({ status: z.enum(['open', 'resolved']).optional(), limit: queryInteger('limit', { min: 1, max: 200, default: 50 }) });

export const RESOLUTIONS = ['keep_first', 'keep_second', 'both_valid', 'dismissed'] as const;

export const ResolveBody = z.object({
  resolution: z.enum(RESOLUTIONS),
  note: z.string().max(2_000).optional(),
});

const SideSchema = z.object({ document_id: z.string(), title: z.string().nullable(), value: z.string(), sentence: z.string() });

export const ContradictionSchema = z.object({
  contradiction_id: z.string(),
  entity: z.string(),
  attribute: z.string(),
  status: z.enum(['open', 'resolved']),
  /** Exactly two sides: the two documents and what each states. */
  sources: z.array(SideSchema).length(2),
  resolution: z.string().nullable(),
  kept_document_id: z.string().nullable(),
  note: z.string().nullable(),
  detected_at: z.string(),
  resolved_at: z.string().nullable(),
});

export const ContradictionListSchema = z.object({ contradictions: z.array(ContradictionSchema), count: z.number().int() });

export function presentContradiction(c: ContradictionView): z.input<typeof ContradictionSchema> {
  return {
    contradiction_id: c.contradiction_id,
    entity: c.entity,
    attribute: c.attribute,
    status: c.status,
    sources: c.sources.map((s) => ({ document_id: s.document_id, title: s.title, value: s.value, sentence: s.sentence })),
    resolution: c.resolution,
    kept_document_id: c.kept_document_id,
    note: c.note,
    detected_at: c.detected_at,
    resolved_at: c.resolved_at,
  };
}
