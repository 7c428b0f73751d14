import { z } from 'zod';
import type { SeedRun } from '../../application/seed';
import { SEED_TYPES } from '../../domain/seed';
import type { SeedStatusRow } from '../../store/seed';


const seedTypeQuery = z.enum(SEED_TYPES).optional();
const bool = z.enum(['true', 'false', '1', '0']).default('false').transform((v) => v === 'true' || v === '1');

export const statusQuery = z.object({ seed_type: seedTypeQuery });
export const clearQuery = z.object({ seed_type: z.enum([...SEED_TYPES, 'all']).default('all'), clear_all: bool });

const resultItem = z.object({
  index: z.number().int(),
  prompt_id: z.string(),
  list_id: z.string(),
  status: z.string().describe('completed, failed or skipped'),
  reason: z.string(),
  current_status: z.string().nullable().describe("the workflow's status now"),
});

export const seedRunView = z.object({
  success: z.boolean(),
  message: z.string(),
  total_prompts: z.number().int(),
  successful: z.number().int(),
  failed: z.number().int(),
  skipped: z.number().int(),
  results: z.array(resultItem),
  status: z.string().describe('completed, or completed_with_errors when an item failed'),
});

export const presentSeedRun = (r: SeedRun): z.input<typeof seedRunView> => r;

const summaryView = z.object({
  total: z.number().int(),
  pending: z.number().int(),
  processing: z.number().int(),
  list_created: z.number().int(),
  people_workflow_started: z.number().int(),
  completed: z.number().int(),
  failed: z.number().int(),
  skipped: z.number().int(),
});

const statusItem = z.object({
  seed_type: z.string(),
  prompt_id: z.string(),
  prompt: z.string(),
  status: z.string(),
  thread_id: z.string().nullable(),
  list_id: z.string().nullable(),
  reason: z.string(),
  created_at: z.string(),
  updated_at: z.string(),
});

export const seedStatusView = z.object({ success: z.boolean(), summary: summaryView, statuses: z.array(statusItem), count: z.number().int() });

export function presentSeedStatus(r: { summary: z.input<typeof summaryView>; statuses: SeedStatusRow[] }): z.input<typeof seedStatusView> {
  return {
    success: true,
    summary: r.summary,
    statuses: r.statuses.map((s) => ({
      seed_type: s.seed_type,
      prompt_id: s.prompt_id,
      prompt: s.prompt,
      status: s.status,
      thread_id: s.thread_id,
      list_id: s.list_id,
      reason: s.reason,
      created_at: new Date(s.created_at).toISOString(),
      updated_at: new Date(s.updated_at).toISOString(),
    })),
    count: r.statuses.length,
  };
}

export const seedClearView = z.object({
  success: z.boolean(),
  message: z.string(),
  deleted_count: z.number().int(),
  cleared_type: z.string().describe('company, people or all'),
  deleted_keys: z.array(z.string()).describe('`<seed type>:<prompt id>` of every status deleted'),
});
