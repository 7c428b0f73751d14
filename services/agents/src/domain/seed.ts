/**
 * Seed data (docs/agents.md, "Seed"): the suggestion prompts a new tenant's lists are seeded from, per seed type.
 * Fixed and versioned with the code; a prompt's id never changes, since a tenant's seed statuses are kept against it.
 */
export const SEED_TYPES = ['company', 'people'] as const;
export type SeedType = (typeof SEED_TYPES)[number];

export interface SeedPrompt {
  prompt_id: string;
  prompt: string;
}

export const SEED_PROMPTS: Readonly<Record<SeedType, readonly SeedPrompt[]>> = {
  company: [
    { prompt_id: 'company-fintech-berlin', prompt: 'Find fintech companies in Berlin' },
    { prompt_id: 'company-saas-london', prompt: 'Find SaaS companies in London with 50-200 employees' },
    { prompt_id: 'company-healthcare-germany', prompt: 'Find healthcare companies in Germany founded after 2015' },
    { prompt_id: 'company-ecommerce-paris', prompt: 'Find e-commerce companies in Paris' },
    { prompt_id: 'company-cybersecurity-europe', prompt: 'Find cybersecurity companies in Europe with more than 100 employees' },
  ],
  people: [
    { prompt_id: 'people-cto-fintech-berlin', prompt: 'Find CTOs of fintech companies in Berlin' },
    { prompt_id: 'people-marketing-heads-saas', prompt: 'Find heads of marketing at SaaS companies in London' },
    { prompt_id: 'people-sales-vps-germany', prompt: 'Find VPs of sales at software companies in Germany' },
    { prompt_id: 'people-founders-healthcare', prompt: 'Find founders of healthcare companies in Europe' },
    { prompt_id: 'people-recruiters-paris', prompt: 'Find recruiters at companies in Paris' },
  ],
};

/**
 * A seed item's statuses, in order: `pending` (not yet reached), `processing` (its workflow is being started),
 * `list_created` (a company item's workflow started and its list_id stored), `people_workflow_started` (the same for a
 * people item), `completed` (continue was accepted: the workflow runs on its own), `failed` (with a reason; the next
 * start tries it again). `skipped` is never stored: it is what a start reports for an item already completed.
 */
export const SEED_STATUSES = ['pending', 'processing', 'list_created', 'people_workflow_started', 'completed', 'failed'] as const;
export type SeedStatus = (typeof SEED_STATUSES)[number];

/** The stored status once an item's workflow started and its list is known. */
export const startedStatus = (type: SeedType): SeedStatus => (type === 'company' ? 'list_created' : 'people_workflow_started');

/** The target each seeded workflow runs toward. */
export const SEED_TOTAL_TARGET = 10;

/** The summary's counters (spec 3's "Seed status summary"), every status counted, `skipped` always 0 when stored. */
export function seedSummary(statuses: ReadonlyArray<{ status: string }>): Record<'total' | 'pending' | 'processing' | 'list_created' | 'people_workflow_started' | 'completed' | 'failed' | 'skipped', number> {
  const out = { total: statuses.length, pending: 0, processing: 0, list_created: 0, people_workflow_started: 0, completed: 0, failed: 0, skipped: 0 };
  for (const s of statuses) if (s.status in out && s.status !== 'total') out[s.status as keyof typeof out]++;
  return out;
}
