import { z } from 'zod';

export const RoutingSchema = z.discriminatedUnion('mode', [
  z.object({ mode: z.literal('auto') }),
  z.object({ mode: z.literal('manual'), vault_id: z.string().min(1).max(64) }),
  z.object({ mode: z.literal('review') }),
]);

export const IngestBodySchema = z.object({
  content: z.string().min(1, 'content is required'),
  content_type: z.enum(['text', 'markdown', 'html']).default('text'),
  title: z.string().max(500).optional(),
  routing: RoutingSchema.default({ mode: 'auto' }),
});

export const IngestResultSchema = z.object({
  doc_id: z.string(),
  vault_id: z.string(),
  routing_confidence: z.number().min(0).max(1),
  needs_review: z.boolean(),
  dlp_matches: z.number().int().min(0),
});

/** The ingest answer of spec 1, exactly its five fields. */
export function presentIngestResult(r: { doc_id: string; vault_id: string; routing_confidence: number; needs_review: boolean; dlp_matches: number }): z.input<typeof IngestResultSchema> {
  return { doc_id: r.doc_id, vault_id: r.vault_id, routing_confidence: r.routing_confidence, needs_review: r.needs_review, dlp_matches: r.dlp_matches };
}
