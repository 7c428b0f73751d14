import { ConfigError } from '@lore/runtime/kit';
import { labelSelectorProblem, loadOperatorConfig } from './config';

const base = {
  LORE_OPERATOR_ADMIN_URL: 'http://lore-gateway-admin:8081',
  LORE_OPERATOR_ADMIN_TOKEN: 'x'.repeat(32),
  LORE_OPERATOR_BASE_DOMAIN: 'mem.example.com',
  LORE_OPERATOR_GATEWAY_SERVICE: 'lore-gateway',
  POD_NAMESPACE: 'lore',
};

describe('operator config', () => {
  it('fills defaults from the pod namespace', () => {
    const c = loadOperatorConfig(base, 'host-1');
    expect(c.settings).toMatchObject({ gatewayNamespace: 'lore', gatewayServicePort: 80, defaultDataRetention: 'Retain', ingress: { tls: { mode: 'none' }, annotations: {} } });
    expect(c.leaderElection).toEqual({ namespace: 'lore', name: 'lore-operator', leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 });
    expect(c.identity).toBe('host-1');
    expect(c.resyncMs).toBe(600_000);
  });

  it('refuses at start a namespace selector, an IngressClass or an annotation key the API server would refuse later', () => {
    for (const ok of ['lore.dev/enabled=true', 'env in (prod, staging),!legacy', 'tier!=db, team', 'app.kubernetes.io/part-of==lore', 'x notin (a)']) {
      expect({ ok, problem: labelSelectorProblem(ok) }).toEqual({ ok, problem: null });
    }
    for (const bad of ['lore.dev/enabled=yes please', 'env in (prod', '=x', 'a b c', 'UPPER.example/x=1', 'k=v,']) {
      expect({ bad, refused: labelSelectorProblem(bad) !== null }).toEqual({ bad, refused: true });
    }
    const problemsOf = (env: Record<string, string>) => {
      try {
        loadOperatorConfig({ ...base, ...env }, 'h');
        return '';
      } catch (e) {
        return (e as ConfigError).problems.join('\n');
      }
    };
    expect(problemsOf({ LORE_OPERATOR_NAMESPACE_SELECTOR: 'env in (prod' })).toMatch(/LORE_OPERATOR_NAMESPACE_SELECTOR.*unbalanced/);
    expect(problemsOf({ LORE_OPERATOR_INGRESS_CLASS: 'Nginx Public' })).toMatch(/LORE_OPERATOR_INGRESS_CLASS/);
    expect(problemsOf({ LORE_OPERATOR_INGRESS_ANNOTATIONS: '{"not a key!":"x"}' })).toMatch(/LORE_OPERATOR_INGRESS_ANNOTATIONS.*not an annotation key/);
    expect(problemsOf({ LORE_OPERATOR_NAMESPACE_SELECTOR: 'lore.dev/served=yes', LORE_OPERATOR_INGRESS_CLASS: 'nginx', LORE_OPERATOR_INGRESS_ANNOTATIONS: '{"cert-manager.io/cluster-issuer":"le"}' })).toBe('');
    // Custom hostname domains that would hand out the base domain's names, or a whole top-level domain.
    expect(problemsOf({ LORE_OPERATOR_HOSTNAME_DOMAINS: 'example.com' })).toMatch(/LORE_OPERATOR_HOSTNAME_DOMAINS.*holds the base domain/);
    expect(problemsOf({ LORE_OPERATOR_HOSTNAME_DOMAINS: 'mem.example.com' })).toMatch(/holds the base domain/);
    expect(problemsOf({ LORE_OPERATOR_HOSTNAME_DOMAINS: 'com' })).toMatch(/two labels/);
    expect(problemsOf({ LORE_OPERATOR_HOSTNAME_DOMAINS: 'kb.acme.io, docs.example.org' })).toBe('');
  });

  it('reports every problem at once and never defaults the admin token', () => {
    let err: unknown;
    try {
      loadOperatorConfig({ LORE_OPERATOR_INGRESS_TLS_MODE: 'secret', LORE_OPERATOR_INGRESS_ANNOTATIONS: '[1]', LORE_OPERATOR_WORKERS: 'many' }, 'h');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    const problems = (err as ConfigError).problems.join('\n');
    for (const v of ['LORE_OPERATOR_ADMIN_URL', 'LORE_OPERATOR_ADMIN_TOKEN', 'LORE_OPERATOR_BASE_DOMAIN', 'LORE_OPERATOR_GATEWAY_SERVICE', 'LORE_OPERATOR_INGRESS_ANNOTATIONS', 'LORE_OPERATOR_WORKERS']) {
      expect(problems).toContain(v);
    }
  });

  it('checks values that contradict each other', () => {
    expect(() => loadOperatorConfig({ ...base, POD_NAMESPACE: undefined }, 'h')).toThrow(/LORE_OPERATOR_GATEWAY_NAMESPACE/);
    expect(() => loadOperatorConfig({ ...base, LORE_OPERATOR_INGRESS_TLS_MODE: 'secret' }, 'h')).toThrow(/LORE_OPERATOR_INGRESS_TLS_SECRET/);
    expect(() => loadOperatorConfig({ ...base, LORE_OPERATOR_RENEW_DEADLINE_SECONDS: '20' }, 'h')).toThrow(/shorter than/);
  });

  it('parses ingress annotations, a named port and disabled leader election', () => {
    const c = loadOperatorConfig(
      { ...base, LORE_OPERATOR_INGRESS_ANNOTATIONS: '{"cert-manager.io/cluster-issuer":"le"}', LORE_OPERATOR_GATEWAY_SERVICE_PORT: 'http', LORE_OPERATOR_LEADER_ELECTION: 'false' },
      'h',
    );
    expect(c.settings.ingress.annotations).toEqual({ 'cert-manager.io/cluster-issuer': 'le' });
    expect(c.settings.gatewayServicePort).toBe('http');
    expect(c.leaderElection).toBeUndefined();
  });
});
