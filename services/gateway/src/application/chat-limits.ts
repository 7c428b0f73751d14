import { AppError } from '@lore/runtime';
import { rateHeaders, type Principal } from '../auth/authenticate';
import type { GatewayContext } from '../context';
import type { RateOutcome } from '../state/gateway-state';

/** The core routes that send a chat message (and so start an answer). */
const MESSAGE_PATHS = new Set(['/api/chat/send-message', '/api/chat/send-chat-message']);

export function isChatMessage(method: string, path: string): boolean {
  return method === 'POST' && MESSAGE_PATHS.has(path);
}

/** A per-minute limit as a GCRA rate: a minute's messages at once, refilled evenly over the minute. */
const perMinute = (n: number) => ({ perSecond: n / 60, burst: n });

/**
 * Spec 2's message rate limits: per caller (a user, key or OAuth client) and per tenant, each on when configured.
 * Both are checked in the shared state, so they hold across gateway replicas: the caller's first, then — only for a
 * message it let through — the tenant's (a message the tenant's limit refuses has still used the caller's
 * allowance). The tighter answer's headers are returned. A refusal is 429 with `Retry-After` and the `RateLimit-*` headers, and core's `{ detail }` body.
 */
export async function admitChatMessage(ctx: GatewayContext, principal: Principal): Promise<Record<string, string>> {
  const { perUserPerMinute, perTenantPerMinute } = ctx.config.chatMessageLimits;
  const outcomes: Array<{ rate: RateOutcome; perSecond: number }> = [];
  if (perUserPerMinute > 0) {
    const rate = perMinute(perUserPerMinute);
    outcomes.push({ rate: await ctx.state.hit(`chatmsg:u:${principal.tenantId}:${principal.credential}:${principal.subject}`, rate), perSecond: rate.perSecond });
  }
  // The tenant's allowance is spent only by messages the caller's own limit let through.
  if (perTenantPerMinute > 0 && outcomes.every((o) => o.rate.allowed)) {
    const rate = perMinute(perTenantPerMinute);
    outcomes.push({ rate: await ctx.state.hit(`chatmsg:t:${principal.tenantId}`, rate), perSecond: rate.perSecond });
  }
  if (outcomes.length === 0) return {};
  const refused = outcomes.find((o) => !o.rate.allowed);
  const tightest = refused ?? outcomes.reduce((a, b) => (b.rate.remaining < a.rate.remaining ? b : a));
  const headers = rateHeaders(tightest.rate, tightest.perSecond);
  if (refused) {
    const which = refused === outcomes[0] && perUserPerMinute > 0 ? 'your' : 'the tenant\'s';
    const message = `${which} chat message rate limit is reached; retry later`;
    throw new AppError('RATE_LIMITED', message, { headers, body: { detail: message } });
  }
  return headers;
}
