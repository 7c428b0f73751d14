import { cutUnits } from '@lore/ai';
import { randomUUID } from 'node:crypto';
import { AppError, type Sql } from '@lore/runtime';
import { SEED_PROMPTS, SEED_TOTAL_TARGET, seedSummary, startedStatus, type SeedType } from '../domain/seed';
import type { SearchKind } from '../domain/workflow';
import { workflowExists } from '../store/generic-workflows';
import { claimSeedItem, deleteSeedItems, ensureSeedItems, getSeedItem, listSeedItems, updateSeedItem, type SeedStatusRow } from '../store/seed';
import { getWorkflow } from '../store/workflows';
import type { AgentsDeps } from './context';
import { continueGeneric, followWorkflow, startGeneric } from './generic-workflows';
import type { Principal } from './principal';

/**
 * Seed runs (docs/agents.md, "Seed"): a seed start walks its type's suggestion prompts one after another — start a
 * workflow, take its list_id from the workflow's stream, store it against the prompt, continue the workflow — and
 * records each step in agents.seed_statuses, so a second start skips what is done and a start cut short resumes
 * where it stopped (a thread id is stored before its workflow is started, so none is started twice).
 */

/** An item left `processing` this long (a process stopped mid-item) is taken again by the next start. */
export const SEED_STALE_MS = 10 * 60_000;
/** How long a seed start waits for a workflow's first frame. */
const LIST_ID_WAIT_MS = 10_000;
/** Most statuses a status read answers (two types of a handful of prompts each: far fewer). */
export const MAX_SEED_STATUSES = 1000;

export interface SeedResultItem {
  index: number;
  prompt_id: string;
  list_id: string;
  status: string;
  reason: string;
  current_status: string | null;
}

export interface SeedRun {
  success: boolean;
  message: string;
  total_prompts: number;
  successful: number;
  failed: number;
  skipped: number;
  results: SeedResultItem[];
  status: string;
}

const kindOf = (type: SeedType): SearchKind => (type === 'company' ? 'company_search' : 'people_search');

/** The list_id of a workflow, read from the first frame of its stream (the `started` event carries it). */
async function listIdFromStream(deps: AgentsDeps, tenantId: string, threadId: string): Promise<string> {
  const stop = new AbortController();
  // The `started` event is written with the workflow, so the first frame is there at once; the bound is a safeguard.
  const bound = setTimeout(() => stop.abort(), LIST_ID_WAIT_MS);
  let listId: string | null = null;
  await followWorkflow(deps, tenantId, threadId, 0, { signal: stop.signal, write: async () => undefined }, (frame) => {
    listId = frame.list_id;
    stop.abort();
  }).finally(() => clearTimeout(bound));
  if (!listId) throw new Error('the workflow stream gave no list_id');
  return listId;
}

const reasonOf = (err: unknown): string => cutUnits(err instanceof AppError || err instanceof Error ? err.message : String(err), 500);

export async function runSeed(deps: AgentsDeps, principal: Principal, type: SeedType): Promise<SeedRun> {
  const prompts = SEED_PROMPTS[type];
  const kind = kindOf(type);
  const tenantId = principal.tenantId;
  const inTenant = <T>(fn: (sql: Sql) => Promise<T>): Promise<T> => deps.db.withTenant(tenantId, fn);
  await inTenant((sql) => ensureSeedItems(sql, tenantId, type, principal.owner, prompts));
  const results: SeedResultItem[] = [];
  let successful = 0;
  let failed = 0;
  let skipped = 0;
  for (const [index, p] of prompts.entries()) {
    const item = await inTenant((sql) => claimSeedItem(sql, tenantId, type, p.prompt_id, principal.owner, SEED_STALE_MS));
    if (!item) {
      const current = await inTenant((sql) => getSeedItem(sql, tenantId, type, p.prompt_id));
      skipped++;
      results.push({
        index,
        prompt_id: p.prompt_id,
        list_id: current?.list_id ?? '',
        status: 'skipped',
        reason: current?.status === 'completed' ? 'already completed' : 'another seed start is processing it',
        current_status: current ? await workflowStatus(deps, tenantId, current) : null,
      });
      continue;
    }
    let threadId = item.thread_id;
    let listId = item.list_id;
    try {
      if (!listId) {
        // The thread id is stored first: a start cut short after this finds its workflow instead of starting another.
        if (!threadId) {
          threadId = randomUUID();
          await inTenant((sql) => updateSeedItem(sql, tenantId, type, p.prompt_id, { status: 'processing', thread_id: threadId }));
        }
        const id = threadId;
        const exists = await inTenant((sql) => workflowExists(sql, tenantId, id));
        if (!exists) await startGeneric(deps, principal, kind, { prompt: p.prompt, threadId: id, total_target: SEED_TOTAL_TARGET, type: 'predefined_agent', list_name: p.prompt });
        listId = await listIdFromStream(deps, tenantId, id);
        const lid = listId;
        await inTenant((sql) => updateSeedItem(sql, tenantId, type, p.prompt_id, { status: startedStatus(type), thread_id: id, list_id: lid }));
      }
      let reason = '';
      try {
        await continueGeneric(deps, principal, kind, { thread_id: threadId!, total_target: SEED_TOTAL_TARGET });
      } catch (err) {
        // A workflow that already holds its target (or is stopping) needs no continue; anything else fails the item.
        if (!(err instanceof AppError && err.status === 422)) throw err;
        reason = `not continued: ${reasonOf(err)}`;
      }
      await inTenant((sql) => updateSeedItem(sql, tenantId, type, p.prompt_id, { status: 'completed', reason }));
      successful++;
      const done = await inTenant((sql) => getSeedItem(sql, tenantId, type, p.prompt_id));
      results.push({ index, prompt_id: p.prompt_id, list_id: listId, status: 'completed', reason, current_status: done ? await workflowStatus(deps, tenantId, done) : null });
    } catch (err) {
      deps.logger.warn({ err, seed_type: type, prompt_id: p.prompt_id }, 'seed item failed');
      const reason = reasonOf(err);
      await inTenant((sql) => updateSeedItem(sql, tenantId, type, p.prompt_id, { status: 'failed', reason }));
      failed++;
      results.push({ index, prompt_id: p.prompt_id, list_id: listId ?? '', status: 'failed', reason, current_status: null });
    }
  }
  return {
    success: failed === 0,
    message: `${type} seed: ${successful} started, ${skipped} skipped, ${failed} failed of ${prompts.length} prompts`,
    total_prompts: prompts.length,
    successful,
    failed,
    skipped,
    results,
    status: failed === 0 ? 'completed' : 'completed_with_errors',
  };
}

async function workflowStatus(deps: AgentsDeps, tenantId: string, item: SeedStatusRow): Promise<string | null> {
  const threadId = item.thread_id;
  if (!threadId) return null;
  const w = await deps.db.withTenant(tenantId, (sql) => getWorkflow(sql, tenantId, threadId, ['company_search', 'people_search']));
  return w?.status ?? null;
}

export async function seedStatuses(deps: AgentsDeps, principal: Principal, type: SeedType | null): Promise<{ summary: ReturnType<typeof seedSummary>; statuses: SeedStatusRow[] }> {
  const statuses = await deps.db.withTenant(principal.tenantId, (sql) => listSeedItems(sql, principal.tenantId, type, MAX_SEED_STATUSES));
  return { summary: seedSummary(statuses), statuses };
}

/** Clears seed statuses (one type or all; only completed ones unless `all`): their prompts are seeded again by the next start. */
export async function clearSeedStatuses(deps: AgentsDeps, principal: Principal, type: SeedType | null, all: boolean): Promise<{ deleted_keys: string[] }> {
  const gone = await deps.db.withTenant(principal.tenantId, (sql) => deleteSeedItems(sql, principal.tenantId, type, all));
  return { deleted_keys: gone.map((g) => `${g.seed_type}:${g.prompt_id}`) };
}
