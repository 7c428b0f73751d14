import { z } from 'zod';
import { DEFAULT_PORTS, envInt, envSecret, envBool, parseConfig } from '@lore/runtime/kit';
import type { OperatorSettings } from './controllers/settings';

const DNS_NAME = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/;
const DNS_LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/** A label or annotation key: an optional DNS-subdomain prefix and `/`, then a name of at most 63 characters. */
const QUALIFIED_NAME = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const LABEL_VALUE = /^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/;

/**
 * Why a label selector is not one the API server takes, or null: comma-separated `key`, `!key`, `key=value`,
 * `key==value`, `key!=value`, `key in (a,b)`, `key notin (a,b)`. Checked at start, so a typo stops the operator with
 * its reason instead of leaving it never ready while every list call is refused.
 */
export function labelSelectorProblem(selector: string): string | null {
  // Split on commas outside parentheses.
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < selector.length; i++) {
    if (selector[i] === '(') depth++;
    else if (selector[i] === ')') depth--;
    else if (selector[i] === ',' && depth === 0) {
      parts.push(selector.slice(start, i));
      start = i + 1;
    }
    if (depth < 0 || depth > 1) return 'unbalanced parentheses';
  }
  if (depth !== 0) return 'unbalanced parentheses';
  parts.push(selector.slice(start));
  for (const raw of parts) {
    const part = raw.trim();
    const set = /^(\S+)\s+(in|notin)\s*\(([^()]*)\)$/.exec(part);
    if (set) {
      if (!QUALIFIED_NAME.test(set[1]!)) return `"${set[1]}" is not a label key`;
      const values = set[3]!.split(',').map((v) => v.trim());
      if (values.some((v) => !LABEL_VALUE.test(v))) return `"${part}" holds a value that is not a label value`;
      continue;
    }
    const eq = /^([^=!\s]+)\s*(==|=|!=)\s*(\S*)$/.exec(part);
    if (eq) {
      if (!QUALIFIED_NAME.test(eq[1]!)) return `"${eq[1]}" is not a label key`;
      if (!LABEL_VALUE.test(eq[3]!)) return `"${eq[3]}" is not a label value`;
      continue;
    }
    const exists = /^!?\s*(\S+)$/.exec(part);
    if (exists && QUALIFIED_NAME.test(exists[1]!)) continue;
    return `"${part}" is not a requirement (key, !key, key=value, key!=value, key in (a,b), key notin (a,b))`;
  }
  return null;
}

const annotations = z
  .string()
  .optional()
  .transform((v, ctx) => {
    if (!v) return {} as Record<string, string>;
    try {
      const parsed = JSON.parse(v) as unknown;
      if (parsed && typeof parsed === 'object' && !Array.isArray(parsed) && Object.values(parsed).every((x) => typeof x === 'string')) {
        const badKey = Object.keys(parsed).find((k) => !QUALIFIED_NAME.test(k) || k.length > 316);
        if (badKey === undefined) return parsed as Record<string, string>;
        ctx.addIssue({ code: 'custom', message: `"${badKey}" is not an annotation key (an optional DNS prefix and /, then a name of letters, digits, - _ . of at most 63 characters)` });
        return z.NEVER;
      }
    } catch {
      // reported below
    }
    ctx.addIssue({ code: 'custom', message: 'must be a JSON object of string values, e.g. {"cert-manager.io/cluster-issuer":"letsencrypt"}' });
    return z.NEVER;
  });

/** The operator's environment, parsed once. Secrets have no defaults; every problem is reported at once. */
export const operatorEnvSchema = z
  .object({
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace']).default('info'),
    LORE_OPERATOR_HEALTH_PORT: envInt(DEFAULT_PORTS.operatorHealth, 0, 65535),
    LORE_OPERATOR_HEALTH_HOST: z.string().default('0.0.0.0'),
    /** Kubeconfig file; when unset: KUBECONFIG, ~/.kube/config or the in-cluster service account. */
    LORE_OPERATOR_KUBECONFIG: z.string().optional(),
    LORE_OPERATOR_ADMIN_URL: z.url({ error: 'must be the URL of the gateway internal admin listener' }),
    LORE_OPERATOR_ADMIN_TOKEN: envSecret(24),
    LORE_OPERATOR_BASE_DOMAIN: z.string().regex(DNS_NAME, 'must be a lowercase DNS name'),
    LORE_OPERATOR_HOSTNAME_DOMAINS: z
      .string()
      .default('')
      .transform((v) => v.split(',').map((d) => d.trim()).filter((d) => d !== ''))
      .pipe(z.array(z.string().regex(DNS_NAME, 'must be a comma-separated list of lowercase DNS names').refine((d) => d.includes('.'), 'must list domains of two labels or more'))),
    POD_NAMESPACE: z.string().regex(DNS_LABEL).optional(),
    POD_NAME: z.string().optional(),
    LORE_OPERATOR_GATEWAY_NAMESPACE: z.string().regex(DNS_LABEL).optional(),
    LORE_OPERATOR_GATEWAY_SERVICE: z.string().regex(DNS_LABEL, 'must be a Service name'),
    LORE_OPERATOR_GATEWAY_SERVICE_PORT: z
      .string()
      .default('80')
      .transform((v) => (/^\d+$/.test(v) ? Number(v) : v)),
    LORE_OPERATOR_INGRESS_CLASS: z.union([z.literal(''), z.string().regex(DNS_NAME, 'must be an IngressClass name (a lowercase DNS name)')]).optional(),
    LORE_OPERATOR_INGRESS_ANNOTATIONS: annotations,
    LORE_OPERATOR_INGRESS_TLS_MODE: z.enum(['none', 'secret', 'per-host']).default('none'),
    LORE_OPERATOR_INGRESS_TLS_SECRET: z.string().optional(),
    LORE_OPERATOR_DATA_RETENTION: z.enum(['Retain', 'Delete']).default('Retain'),
    LORE_OPERATOR_MEMORY_KEY_OVERLAP_SECONDS: envInt(3600, 0, 30 * 86400),
    LORE_OPERATOR_NAMESPACE_SELECTOR: z
      .string()
      .optional()
      .superRefine((v, ctx) => {
        const problem = v ? labelSelectorProblem(v) : null;
        if (problem) ctx.addIssue({ code: 'custom', message: `must be a label selector: ${problem}` });
      }),
    LORE_OPERATOR_WORKERS: envInt(8, 1, 64),
    LORE_OPERATOR_RESYNC_SECONDS: envInt(600, 0, 86400),
    LORE_OPERATOR_LEADER_ELECTION: envBool(true),
    LORE_OPERATOR_LEASE_NAME: z.string().regex(DNS_LABEL).default('lore-operator'),
    LORE_OPERATOR_LEASE_NAMESPACE: z.string().regex(DNS_LABEL).optional(),
    LORE_OPERATOR_LEASE_DURATION_SECONDS: envInt(15, 2, 600),
    LORE_OPERATOR_RENEW_DEADLINE_SECONDS: envInt(10, 1, 599),
    LORE_OPERATOR_RETRY_PERIOD_SECONDS: envInt(2, 1, 60),
    /** Fault injection for crash-recovery tests only: the process kills itself at that point of a key issuance. */
    LORE_OPERATOR_CRASH_AT: z.enum(['key-created', 'secret-written']).optional(),
  })
  .superRefine((env, ctx) => {
    if (!env.LORE_OPERATOR_GATEWAY_NAMESPACE && !env.POD_NAMESPACE) {
      ctx.addIssue({ code: 'custom', path: ['LORE_OPERATOR_GATEWAY_NAMESPACE'], message: 'is required when POD_NAMESPACE is not set' });
    }
    if (env.LORE_OPERATOR_LEADER_ELECTION && !env.LORE_OPERATOR_LEASE_NAMESPACE && !env.POD_NAMESPACE) {
      ctx.addIssue({ code: 'custom', path: ['LORE_OPERATOR_LEASE_NAMESPACE'], message: 'is required for leader election when POD_NAMESPACE is not set' });
    }
    if (env.LORE_OPERATOR_INGRESS_TLS_MODE === 'secret' && !env.LORE_OPERATOR_INGRESS_TLS_SECRET) {
      ctx.addIssue({ code: 'custom', path: ['LORE_OPERATOR_INGRESS_TLS_SECRET'], message: 'is required when LORE_OPERATOR_INGRESS_TLS_MODE is secret' });
    }
    // A listed domain lets any namespace name any host under it: the base domain (every namespace's defaults) or one
    // above it (the gateway's own host is usually there) would hand those out.
    for (const d of env.LORE_OPERATOR_HOSTNAME_DOMAINS ?? []) {
      if (env.LORE_OPERATOR_BASE_DOMAIN === d || env.LORE_OPERATOR_BASE_DOMAIN?.endsWith(`.${d}`)) {
        ctx.addIssue({ code: 'custom', path: ['LORE_OPERATOR_HOSTNAME_DOMAINS'], message: `${d} holds the base domain ${env.LORE_OPERATOR_BASE_DOMAIN}: list domains that hold nothing else of the platform` });
      }
    }
    if (env.LORE_OPERATOR_RENEW_DEADLINE_SECONDS >= env.LORE_OPERATOR_LEASE_DURATION_SECONDS) {
      ctx.addIssue({ code: 'custom', path: ['LORE_OPERATOR_RENEW_DEADLINE_SECONDS'], message: 'must be shorter than LORE_OPERATOR_LEASE_DURATION_SECONDS' });
    }
  });

export type OperatorEnv = z.infer<typeof operatorEnvSchema>;

export interface OperatorConfig {
  logLevel: string;
  health: { host: string; port: number };
  kubeconfig?: string;
  admin: { url: string; token: string };
  settings: OperatorSettings;
  namespaceSelector?: string;
  workers: number;
  resyncMs: number;
  identity: string;
  leaderElection?: { namespace: string; name: string; leaseDurationMs: number; renewDeadlineMs: number; retryPeriodMs: number };
  crashAt?: 'key-created' | 'secret-written';
}

export function loadOperatorConfig(env: Record<string, string | undefined>, fallbackIdentity: string): OperatorConfig {
  const e = parseConfig(operatorEnvSchema, env);
  const podNamespace = e.POD_NAMESPACE;
  return {
    logLevel: e.LOG_LEVEL,
    health: { host: e.LORE_OPERATOR_HEALTH_HOST, port: e.LORE_OPERATOR_HEALTH_PORT },
    kubeconfig: e.LORE_OPERATOR_KUBECONFIG,
    admin: { url: e.LORE_OPERATOR_ADMIN_URL, token: e.LORE_OPERATOR_ADMIN_TOKEN },
    settings: {
      baseDomain: e.LORE_OPERATOR_BASE_DOMAIN,
      hostnameDomains: e.LORE_OPERATOR_HOSTNAME_DOMAINS,
      gatewayNamespace: (e.LORE_OPERATOR_GATEWAY_NAMESPACE ?? podNamespace)!,
      gatewayServiceName: e.LORE_OPERATOR_GATEWAY_SERVICE,
      gatewayServicePort: e.LORE_OPERATOR_GATEWAY_SERVICE_PORT,
      ingress: {
        className: e.LORE_OPERATOR_INGRESS_CLASS || undefined,
        annotations: e.LORE_OPERATOR_INGRESS_ANNOTATIONS,
        tls: { mode: e.LORE_OPERATOR_INGRESS_TLS_MODE, secretName: e.LORE_OPERATOR_INGRESS_TLS_SECRET },
      },
      defaultDataRetention: e.LORE_OPERATOR_DATA_RETENTION,
      memoryKeyOverlapSeconds: e.LORE_OPERATOR_MEMORY_KEY_OVERLAP_SECONDS,
    },
    namespaceSelector: e.LORE_OPERATOR_NAMESPACE_SELECTOR || undefined,
    workers: e.LORE_OPERATOR_WORKERS,
    resyncMs: e.LORE_OPERATOR_RESYNC_SECONDS * 1000,
    identity: e.POD_NAME || fallbackIdentity,
    leaderElection: e.LORE_OPERATOR_LEADER_ELECTION
      ? {
          namespace: (e.LORE_OPERATOR_LEASE_NAMESPACE ?? podNamespace)!,
          name: e.LORE_OPERATOR_LEASE_NAME,
          leaseDurationMs: e.LORE_OPERATOR_LEASE_DURATION_SECONDS * 1000,
          renewDeadlineMs: e.LORE_OPERATOR_RENEW_DEADLINE_SECONDS * 1000,
          retryPeriodMs: e.LORE_OPERATOR_RETRY_PERIOD_SECONDS * 1000,
        }
      : undefined,
    crashAt: e.LORE_OPERATOR_CRASH_AT,
  };
}
