import { z } from 'zod';

/**
 * The sources a connector may read: core's connectors take them, and a knowledge graph's connector ingest names them
 * in `source_types` (a name outside them would read no document).
 */
export const CONNECTOR_SOURCES = ['web', 'file', 'google_drive'] as const;
export type ConnectorSource = (typeof CONNECTOR_SOURCES)[number];

/**
 * The message on `lore.connectors.index` (keyed by `<tenant>:<cc pair id>`, so one pair's attempts are handled in
 * order): one index attempt to run. The attempt row is the job; the message only says which one.
 */
export const ConnectorIndexMessageSchema = z.object({
  event_id: z.string().min(1),
  tenant_id: z.string().min(1),
  cc_pair_id: z.number().int().positive(),
  attempt_id: z.number().int().positive(),
});
export type ConnectorIndexMessage = z.infer<typeof ConnectorIndexMessageSchema>;
