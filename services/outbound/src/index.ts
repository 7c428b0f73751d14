/**
 * The one way a Lore service fetches a URL a user chose (webhook receivers, connectors, the crawler, web research,
 * company overview): the SSRF guard, the bounded HTTP client built on it, and robots.txt for page fetchers.
 * See docs/outbound.md.
 */
export {
  TargetGuard,
  TargetRefusedError,
  addressRefusal,
  checkTargetUrl,
  checkWebhookUrl,
  type HostLookup,
  type Protocol,
  type RefusalReason,
  type ResolvedAddress,
  type ResolvedTarget,
  type TargetGuardOptions,
  type TargetPolicy,
} from './target-guard';
export {
  OUTBOUND_DEFAULTS,
  OutboundError,
  OutboundHttpClient,
  parseContentType,
  unrequestedEncoding,
  type OutboundErrorKind,
  type OutboundHttpClientOptions,
  type OutboundMethod,
  type OutboundRequest,
  type OutboundResponse,
} from './http-client';
export { ROBOTS_DEFAULTS, RobotsPolicy, type RobotsPolicyOptions, type RobotsRules, type RobotsSource } from './robots';
