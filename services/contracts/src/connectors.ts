import { z } from 'zod';

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
