import type { GatewayContext } from '../context';
import type { ApiKeyRule } from './guards';
import { requireApiKey } from './guards';
import { readJson } from './body';

/**
 * What route modules outside the gateway's core (webhooks) get: the shared context and the same guards and
 * body reader the control plane uses, so every route authenticates the same way.
 */
export interface WebhookRouteDeps {
  context: GatewayContext;
  /** Middleware: x-api-key credential, scope, IP, rate limit; sets `ctx.state.principal`. */
  requireApiKey: (rule: ApiKeyRule) => ReturnType<typeof requireApiKey>;
  readJson: typeof readJson;
}

export function webhookRouteDeps(context: GatewayContext): WebhookRouteDeps {
  return { context, requireApiKey: (rule) => requireApiKey(context, rule), readJson };
}
