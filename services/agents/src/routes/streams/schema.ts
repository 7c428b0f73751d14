import { z } from 'zod';

export const streamParams = z.object({ stream_key: z.string().min(1).max(200) });

/** Spec 3 answers a string: the tenant's stream keys, comma-separated (empty when none). */
export const activeStreamsView = z.string();

export const streamStatusView = z.object({
  stream_key: z.string(),
  active: z.boolean(),
  length: z.number().int(),
  first_entry_id: z.string(),
  last_entry_id: z.string(),
  age_seconds: z.number().int(),
});
