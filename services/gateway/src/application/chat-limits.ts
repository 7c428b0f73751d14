import { AppError } from '@lore/runtime';
import { rateHeaders, type Principal } from '../auth/authenticate';
import type { GatewayContext } from '../context';
import type { RateOutcome, RateSpec } from '../state/gateway-state';

/** The core routes that send a chat message (and so start an answer). */
const MESSAGE_PATHS = new Set(['/api/chat/send-message', '/api/chat/send-chat-message']);

export function isChatMessage(method: string, path: string): boolean {
  return method === 'POST' && MESSAGE_PATHS.has(path);
}

/** A per-minute limit as a GCRA rate: a minute's messages at once, refilled evenly over the minute. */
const perMinute = (n: number) => ({ perSecond: n / 60, burst: n });

/** One budget a message spends: its bucket in the shared state, and whose it is for the refusal's wording. */
interface Budget {
  key: string;
  rate: RateSpec;
  whose: string;
}

/** The budgets a caller's message spends, in the order they are checked. */
export function chatBudgets(limits: GatewayContext['config']['chatMessageLimits'], principal: Pick<Principal, 'tenantId' | 'credential' | 'subject' | 'groups'>): Budget[] {
  const budgets: Budget[] = [];
  if (limits.perUserPerMinute > 0) {
    budgets.push({ key: `chatmsg:u:${principal.tenantId}:${principal.credential}:${principal.subject}`, rate: perMinute(limits.perUserPerMinute), whose: 'your' });
  }
  if (limits.perGroupPerMinute > 0) {
    for (const group of principal.groups) {
      budgets.push({ key: `chatmsg:g:${principal.tenantId}:${group}`, rate: perMinute(limits.perGroupPerMinute), whose: `user group ${group}'s` });
    }
  }
  if (limits.perTenantPerMinute > 0) budgets.push({ key: `chatmsg:t:${principal.tenantId}`, rate: perMinute(limits.perTenantPerMinute), whose: 'the tenant\'s' });
  return budgets;
}

/**
 * Spec 2's message rate limits: per caller (a user, key or OAuth client), per user group and per tenant, each on
 * when configured. A signed-in user's message counts against each of their groups' budgets (keys and OAuth tokens
 * belong to no group). All are checked in the shared state, so they hold across gateway replicas, in order: the
 * caller's, then each group's (ascending ids), then the tenant's — and a budget is spent only by a message every
 * earlier one let through (a message a later limit refuses has still used the earlier allowances). The tighter
 * answer's headers are returned. A refusal is 429 with `Retry-After` and the `RateLimit-*` headers of the limit
 * that refused, and core's `{ detail }` body.
 */
export async function admitChatMessage(ctx: GatewayContext, principal: Principal): Promise<Record<string, string>> {
  const outcomes: Array<{ rate: RateOutcome; budget: Budget }> = [];
  for (const budget of chatBudgets(ctx.config.chatMessageLimits, principal)) {
    const rate = await ctx.state.hit(budget.key, budget.rate);
    outcomes.push({ rate, budget });
    if (!rate.allowed) {
      const message = `${budget.whose} chat message rate limit is reached; retry later`;
      throw new AppError('RATE_LIMITED', message, { headers: rateHeaders(rate, budget.rate.perSecond), body: { detail: message } });
    }
  }
  if (outcomes.length === 0) return {};
  const tightest = outcomes.reduce((a, b) => (b.rate.remaining < a.rate.remaining ? b : a));
  return rateHeaders(tightest.rate, tightest.budget.rate.perSecond);
}
