import { randomBytes } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT, createNamespace, installCrds, runId, waitCrdsEstablished } from '../../operator/test/support/kube';
import { agentsConfigSchema } from '@lore/agents';
import { coreConfigSchema } from '@lore/core';
import { graphConfigSchema } from '@lore/graph';
import { mcpConfigSchema } from '@lore/mcp';
import { DEFAULT_PORTS } from '@lore/runtime/kit';
import { CHART, FULL, MINIMAL, helm, kubectl, kubectlOk, renderObjects, template, yamlToObject } from './support';
import { CLUSTER_ENTRY } from '../e2e/cluster';

jest.setTimeout(180_000);

/** The Helm chart: lint, render, server-side validation on a real kube-apiserver, and its refusals. */
describe('charts/lore', () => {
  let ns: string;

  beforeAll(async () => {
    await installCrds();
    await kubectlOk(['apply', '--server-side', '-f', join(__dirname, 'fixtures', 'servicemonitor-crd.yaml')]);
    await waitCrdsEstablished(['servicemonitors.monitoring.coreos.com']);
    ns = await createNamespace(runId(), { prefix: 'chart' });
    // The API server's PodSecurity admission then warns about any pod template that is not "restricted";
    // the dry runs below fail on any warning.
    await kubectlOk(['label', 'namespace', ns, 'pod-security.kubernetes.io/enforce=restricted', 'pod-security.kubernetes.io/warn=restricted']);
  });

  it('passes helm lint with the minimal and the full values', async () => {
    for (const values of [MINIMAL, FULL]) {
      const r = await helm(['lint', CHART, '--strict', '-f', values]);
      expect(`${r.stdout}${r.stderr}`).toContain('1 chart(s) linted, 0 chart(s) failed');
      expect(r.code).toBe(0);
    }
  });

  it.each([
    ['minimal', MINIMAL],
    ['full', FULL],
  ])('renders the %s values into objects the API server accepts (kubectl apply --server-side --dry-run=server)', async (_name, values) => {
    const r = await template('lore', ns, ['-f', values]);
    expect(r.code).toBe(0);
    const applied = await kubectl(['apply', '--server-side', '--force-conflicts', '--dry-run=server', '-n', ns, '-f', '-'], r.yaml);
    expect(applied.stderr).toBe('');
    expect(applied.code).toBe(0);
    expect(applied.stdout).toMatch(/deployment\.apps\/lore-gateway serverside-applied \(server dry run\)/);
  });

  it('would be warned about by PodSecurity "restricted" if a pod weakened its security context', async () => {
    const r = await template('lore', ns, ['-f', MINIMAL, '--set', 'containerSecurityContext.allowPrivilegeEscalation=true']);
    const applied = await kubectl(['apply', '--server-side', '--force-conflicts', '--dry-run=server', '-n', ns, '-f', '-'], r.yaml);
    expect(applied.stderr).toContain('would violate PodSecurity "restricted:latest": allowPrivilegeEscalation != false');
  });

  it('renders every deployment of the architecture from one image, the services that do not exist yet only on request', async () => {
    const minimal = await renderObjects('lore', ns, ['-f', MINIMAL]);
    const deployments = (objs: any[]) => objs.filter((o) => o.kind === 'Deployment').map((d) => d.metadata.labels['app.kubernetes.io/component']).sort();
    expect(deployments(minimal)).toEqual(['agents', 'agents-worker', 'core', 'core-worker', 'gateway', 'graph', 'graph-worker', 'mcp', 'operator', 'webhooks']);
    const full = await renderObjects('lore', ns, ['-f', FULL]);
    expect(deployments(full)).toEqual(['agents', 'agents-worker', 'core', 'core-worker', 'gateway', 'graph', 'graph-worker', 'mcp', 'operator', 'webhooks']);
    const images = new Set(full.filter((o) => o.kind === 'Deployment' || o.kind === 'Job').map((o) => o.spec.template.spec.containers[0].image));
    expect(images).toEqual(new Set(['registry.example.com/lore/lore@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef']));
    const args = Object.fromEntries(full.filter((o) => o.kind === 'Deployment').map((d) => [d.metadata.labels['app.kubernetes.io/component'], d.spec.template.spec.containers[0].args[0]]));
    // The same entry points the cluster-mode suites start (test/e2e/cluster.ts), and the operator's.
    expect(args).toMatchObject({ ...CLUSTER_ENTRY, operator: 'operator/dist/main.js' });
    // The MCP server calls the API back through the gateway's Service (spec 3's AGENT_CORE_URL, MEMORY_URL), holds no
    // database address, and is probed on /health.
    const mcp = minimal.find((o) => o.kind === 'Deployment' && o.metadata.name === 'lore-mcp').spec.template.spec.containers[0];
    const mcpEnv = Object.fromEntries((mcp.env as Array<{ name: string; value?: string }>).map((e) => [e.name, e.value]));
    expect(mcpEnv).toMatchObject({ AGENT_CORE_URL: `http://lore-gateway.${ns}.svc:80`, MEMORY_URL: `http://lore-gateway.${ns}.svc:80`, MCP_HOST: '0.0.0.0', MCP_PORT: String(DEFAULT_PORTS.mcp) });
    expect(mcpEnv).toHaveProperty('LORE_IDENTITY_SECRET');
    expect(mcpEnv).not.toHaveProperty('LORE_DATABASE_URL');
    const mcpOwn = Object.keys(mcpEnv).filter((n) => /^(MCP_|LORE_MCP_|AGENT_CORE_URL$|MEMORY_URL$|LORE_IDENTITY_SECRET$|LOG_LEVEL$|LOG_DIR$)/.test(n));
    expect(mcpOwn.length).toBeGreaterThan(6);
    for (const name of mcpOwn) expect(Object.keys(mcpConfigSchema.shape)).toContain(name);
    expect([mcp.livenessProbe, mcp.readinessProbe, mcp.startupProbe].map((p: any) => p.httpGet.path)).toEqual(['/health', '/health', '/health']);
    const gwEnv = minimal.find((o) => o.kind === 'Deployment' && o.metadata.name === 'lore-gateway').spec.template.spec.containers[0].env;
    expect(gwEnv).toEqual(expect.arrayContaining([{ name: 'GATEWAY_UPSTREAM_MCP', value: `http://lore-mcp.${ns}.svc:${DEFAULT_PORTS.mcp}` }]));
    for (const kind of ['HorizontalPodAutoscaler', 'NetworkPolicy', 'ServiceMonitor', 'PodDisruptionBudget', 'Ingress']) {
      expect(full.some((o) => o.kind === kind)).toBe(true);
    }
    for (const kind of ['HorizontalPodAutoscaler', 'NetworkPolicy', 'ServiceMonitor', 'Ingress']) {
      expect(minimal.some((o) => o.kind === kind)).toBe(false);
    }
    // The gateway forwards to the graph Service the chart created.
    const gw = minimal.find((o) => o.kind === 'Deployment' && o.metadata.name === 'lore-gateway');
    expect(gw.spec.template.spec.containers[0].env).toEqual(expect.arrayContaining([{ name: 'GATEWAY_UPSTREAM_GRAPH', value: `http://lore-graph.${ns}.svc:8083` }]));
  });

  it("runs one mcp replica and refuses more with the reason: sessions live in its memory, and the gateway's hop to it has no affinity", async () => {
    const minimal = await renderObjects('lore', ns, ['-f', MINIMAL]);
    expect(minimal.find((o) => o.kind === 'Deployment' && o.metadata.name === 'lore-mcp').spec.replicas).toBe(1);
    // The Service spreads connections over its endpoints (no affinity): what a second replica would break.
    const svc = minimal.find((o) => o.kind === 'Service' && o.metadata.name === 'lore-mcp');
    expect(svc.spec.type).toBe('ClusterIP');
    expect(svc.spec.sessionAffinity ?? 'None').toBe('None');
    for (const replicas of ['2', '3']) {
      const r = await template('lore', ns, ['-f', MINIMAL, '--set', `mcp.replicaCount=${replicas}`]);
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain(`mcp.replicaCount (${replicas}) must be 0 or 1: MCP sessions live in one replica's memory`);
      expect(r.stderr).toContain('neither ingress affinity nor sessionAffinity: ClientIP prevents that on the gateway-to-mcp hop');
    }
    // 0 stops it without removing its objects; with mcp.enabled=false the count is not read.
    const none = await renderObjects('lore', ns, ['-f', MINIMAL, '--set', 'mcp.replicaCount=0']);
    expect(none.find((o) => o.kind === 'Deployment' && o.metadata.name === 'lore-mcp').spec.replicas).toBe(0);
    const off = await renderObjects('lore', ns, ['-f', MINIMAL, '--set', 'mcp.enabled=false', '--set', 'mcp.replicaCount=2']);
    expect(off.some((o) => o.metadata.labels?.['app.kubernetes.io/component'] === 'mcp')).toBe(false);
  });

  it("sets each process's port to its code default, and no two processes share one (they can all run on one host)", async () => {
    const full = await renderObjects('lore', ns, ['-f', FULL]);
    const container = (component: string) =>
      full.find((o) => o.kind === 'Deployment' && o.metadata.labels['app.kubernetes.io/component'] === component).spec.template.spec.containers[0];
    const ports = (component: string) => (container(component).ports as Array<{ containerPort: number }>).map((p) => p.containerPort);
    const envValue = (component: string, name: string) => (container(component).env as Array<{ name: string; value?: string }>).find((e) => e.name === name)?.value;
    expect(ports('gateway')).toEqual([DEFAULT_PORTS.gateway, DEFAULT_PORTS.gatewayAdmin, DEFAULT_PORTS.gatewayOps]);
    expect(ports('webhooks')).toEqual([DEFAULT_PORTS.webhooksOps]);
    expect(ports('graph')).toEqual([DEFAULT_PORTS.graph]);
    expect(ports('graph-worker')).toEqual([DEFAULT_PORTS.graphWorker]);
    expect(ports('operator')).toEqual([DEFAULT_PORTS.operatorHealth]);
    expect(ports('core')).toEqual([DEFAULT_PORTS.core]);
    expect(ports('core-worker')).toEqual([DEFAULT_PORTS.coreWorker]);
    expect(ports('agents')).toEqual([DEFAULT_PORTS.agents]);
    expect(ports('agents-worker')).toEqual([DEFAULT_PORTS.agentsWorker]);
    expect(ports('mcp')).toEqual([DEFAULT_PORTS.mcp]);
    expect(envValue('graph-worker', 'LORE_GRAPH_WORKER_PORT')).toBe(String(DEFAULT_PORTS.graphWorker));
    expect(envValue('operator', 'LORE_OPERATOR_HEALTH_PORT')).toBe(String(DEFAULT_PORTS.operatorHealth));
    expect(envValue('core', 'LORE_CORE_PORT')).toBe(String(DEFAULT_PORTS.core));
    expect(envValue('core-worker', 'LORE_CORE_WORKER_PORT')).toBe(String(DEFAULT_PORTS.coreWorker));
    expect(envValue('agents', 'LORE_AGENTS_PORT')).toBe(String(DEFAULT_PORTS.agents));
    expect(envValue('agents-worker', 'LORE_AGENTS_WORKER_PORT')).toBe(String(DEFAULT_PORTS.agentsWorker));
    const all = ['gateway', 'webhooks', 'graph', 'graph-worker', 'operator', 'core', 'core-worker', 'agents', 'agents-worker', 'mcp'].flatMap(ports);
    expect(new Set(all).size).toBe(all.length);
  });

  it('gives graph and graph-worker the embedder settings (by default the model in the image), in names the graph reads, and no one else', async () => {
    const envOf = (objs: any[], component: string): Record<string, string> => {
      const d = objs.find((o) => o.kind === 'Deployment' && o.metadata.labels['app.kubernetes.io/component'] === component);
      return Object.fromEntries((d.spec.template.spec.containers[0].env as Array<{ name: string; value?: string }>).filter((e) => e.value !== undefined).map((e) => [e.name, e.value!]));
    };
    const embedderEnv = (env: Record<string, string>) => Object.fromEntries(Object.entries(env).filter(([k]) => k.startsWith('LORE_EMBEDDER')));
    const minimal = await renderObjects('lore', ns, ['-f', MINIMAL]);
    for (const component of ['graph', 'graph-worker']) {
      // No model folder: the one the image ships (its own LORE_EMBEDDER_MODEL_DIR) is used.
      expect(embedderEnv(envOf(minimal, component))).toEqual({ LORE_EMBEDDER: 'auto', LORE_EMBEDDER_THREADS: '1', LORE_EMBEDDER_BATCH_SIZE: '8' });
    }
    for (const component of ['gateway', 'webhooks', 'operator', 'core', 'core-worker', 'agents', 'agents-worker']) expect(embedderEnv(envOf(minimal, component))).toEqual({});
    const full = await renderObjects('lore', ns, ['-f', FULL]);
    const expected = {
      LORE_EMBEDDER: 'local-model',
      LORE_EMBEDDER_MODEL_DIR: '/models/all-minilm-l6-v2-int8-1.0.0',
      LORE_EMBEDDER_THREADS: '2',
      LORE_EMBEDDER_BATCH_SIZE: '16',
    };
    for (const component of ['graph', 'graph-worker']) {
      const env = envOf(full, component);
      expect(embedderEnv(env)).toEqual(expected);
      // The graph's own configuration schema reads every one of them as set.
      const parsed = graphConfigSchema.safeParse({
        ...env,
        LORE_DATABASE_URL: 'postgres://lore_app:x@pg:5432/lore',
        LORE_KAFKA_BROKERS: 'kafka:9092',
        LORE_IDENTITY_SECRET: 'x'.repeat(32),
      });
      expect(parsed.success).toBe(true);
      expect(parsed.data).toMatchObject({ LORE_EMBEDDER: 'local-model', LORE_EMBEDDER_MODEL_DIR: expected.LORE_EMBEDDER_MODEL_DIR, LORE_EMBEDDER_THREADS: 2, LORE_EMBEDDER_BATCH_SIZE: 16 });
    }
    // The schema refuses what the graph would refuse.
    for (const bad of ['graph.ai.embedder=onnx', 'graph.ai.embedderThreads=0', 'graph.ai.embedderBatchSize=1000', 'graph.ai.embedderModelDir=models']) {
      const r = await template('lore', ns, ['-f', MINIMAL, '--set', bad]);
      expect({ bad, code: r.code }).toEqual({ bad, code: 1 });
    }
  });

  describe('core', () => {
    const component = (objs: any[], kind: string, name: string) => objs.find((o) => o.kind === kind && o.metadata.labels?.['app.kubernetes.io/component'] === name);
    const containerOf = (objs: any[], name: string) => component(objs, 'Deployment', name).spec.template.spec.containers[0];
    /** Variables every Lore container gets from the chart whatever the component (lore.commonEnv, OTEL_SERVICE_NAME). */
    const COMMON = new Set(['NODE_ENV', 'LOG_LEVEL', 'OTEL_SERVICE_NAME', 'OTEL_EXPORTER_OTLP_ENDPOINT']);

    it.each([
      ['minimal', MINIMAL, 'lore'],
      ['full', FULL, 'lore-credentials'],
    ])('runs core with the %s values: its entry point on 8082, probes on that port, PostgreSQL, the identity secret and the key ring from the Secret, the graph Service, graph\'s language model, nothing else', async (_name, values, secret) => {
      const objs = await renderObjects('lore', ns, ['-f', values]);
      const c = containerOf(objs, 'core');
      expect(c.args).toEqual(['services/core/dist/main.js']);
      expect(c.ports).toEqual([{ name: 'http', containerPort: DEFAULT_PORTS.core }]);
      for (const probe of ['livenessProbe', 'readinessProbe', 'startupProbe']) expect(c[probe].httpGet.port).toBe('http');
      expect(c.readinessProbe.httpGet.path).toBe('/readyz');
      const env = c.env as Array<{ name: string; value?: string; valueFrom?: unknown }>;
      const byName = Object.fromEntries(env.map((e) => [e.name, e]));
      expect(byName.LORE_CORE_PORT).toEqual({ name: 'LORE_CORE_PORT', value: '8082' });
      expect(byName.LORE_CORE_MIGRATE).toEqual({ name: 'LORE_CORE_MIGRATE', value: 'false' });
      expect(byName.LORE_DATABASE_URL).toEqual({ name: 'LORE_DATABASE_URL', valueFrom: { secretKeyRef: { name: secret, key: 'database-url' } } });
      expect(byName.LORE_IDENTITY_SECRET).toEqual({ name: 'LORE_IDENTITY_SECRET', valueFrom: { secretKeyRef: { name: secret, key: 'identity-secret' } } });
      // The platform key ring (it seals connector credentials): the gateway's own Secret key, so both hold one ring.
      expect(byName.LORE_ENCRYPTION_KEYS).toEqual({ name: 'LORE_ENCRYPTION_KEYS', valueFrom: { secretKeyRef: { name: secret, key: 'encryption-keys' } } });
      const gatewayEnv = containerOf(objs, 'gateway').env as Array<{ name: string }>;
      expect(gatewayEnv.find((e) => e.name === 'LORE_ENCRYPTION_KEYS')).toEqual(byName.LORE_ENCRYPTION_KEYS);
      // Chat retrieves from the graph Service the chart created (its port, its name, this namespace).
      const graphSvc = objs.find((o) => o.kind === 'Service' && o.metadata.name === 'lore-graph');
      expect(graphSvc.spec.ports).toEqual([expect.objectContaining({ name: 'http', port: DEFAULT_PORTS.graph })]);
      expect(byName.LORE_CORE_GRAPH_URL).toEqual({ name: 'LORE_CORE_GRAPH_URL', value: `http://${graphSvc.metadata.name}.${ns}.svc:${DEFAULT_PORTS.graph}` });
      // The language model is graph's (graph.ai): the same endpoint, model and llm-api-key, never the embeddings key.
      const graphEnv = Object.fromEntries((containerOf(objs, 'graph').env as Array<{ name: string }>).map((e) => [e.name, e]));
      const llm = ['LORE_AI_LLM_BASE_URL', 'LORE_AI_LLM_MODEL', 'LORE_AI_LLM_API_KEY'];
      if (values === FULL) {
        for (const name of llm) expect(byName[name]).toEqual(graphEnv[name]);
        expect(byName.LORE_AI_LLM_BASE_URL).toEqual({ name: 'LORE_AI_LLM_BASE_URL', value: 'http://vllm.ai.svc:8000/v1' });
        expect(byName.LORE_AI_LLM_API_KEY).toEqual({ name: 'LORE_AI_LLM_API_KEY', valueFrom: { secretKeyRef: { name: 'lore-ai', key: 'llm-api-key', optional: true } } });
      } else {
        // No endpoint: the embedded extractive model answers, as it does for graph.
        for (const name of llm) expect({ name, present: name in byName }).toEqual({ name, present: false });
      }
      // Never the schema owner (only the migrations Job holds it), and nothing core does not use.
      for (const absent of ['LORE_DATABASE_OWNER_URL', 'LORE_REDIS_URL', 'LORE_KAFKA_BROKERS', 'LORE_KAFKA_PREFIX', 'LORE_AI_EMBEDDINGS_API_KEY', 'LORE_EMBEDDER', 'LORE_HTTP_PORT']) {
        expect({ absent, present: absent in byName }).toEqual({ absent, present: false });
      }
      expect(JSON.stringify(env)).not.toContain('database-owner-url');
      // Every other variable is one core's own configuration schema reads, and the schema accepts the chart's values.
      const extra = new Set(((values === FULL ? [{ name: 'TZ' }] : []) as Array<{ name: string }>).map((e) => e.name));
      const unread = env.map((e) => e.name).filter((n) => !COMMON.has(n) && !extra.has(n) && !(n in coreConfigSchema.shape));
      expect(unread).toEqual([]);
      const plain = Object.fromEntries(env.filter((e) => e.value !== undefined).map((e) => [e.name, e.value!]));
      // The values from Secrets stand in as the processes would read them (the ring as the chart's minimal values give it).
      const parsed = coreConfigSchema.safeParse({
        ...plain,
        LORE_LOG_LEVEL: 'info',
        LORE_DATABASE_URL: 'postgres://lore_app:x@pg:5432/lore',
        LORE_IDENTITY_SECRET: 'x'.repeat(32),
        LORE_ENCRYPTION_KEYS: `k1:${randomBytes(32).toString('base64')}`,
        ...(values === FULL ? { LORE_AI_LLM_API_KEY: 'sk-test' } : {}),
      });
      expect(parsed.error?.issues).toBeUndefined();
      expect(parsed.data).toMatchObject({
        LORE_CORE_PORT: 8082,
        LORE_CORE_MIGRATE: false,
        LORE_CORE_BODY_LIMIT_BYTES: values === FULL ? 2097152 : 1048576,
        LORE_CORE_GRAPH_URL: `http://lore-graph.${ns}.svc:8083`,
        LORE_CORE_GRAPH_TIMEOUT_MS: values === FULL ? 15000 : 10000,
        LORE_CORE_ANSWER_MAX_TOKENS: values === FULL ? 1200 : 800,
      });
      expect(parsed.data?.LORE_AI_LLM_BASE_URL).toBe(values === FULL ? 'http://vllm.ai.svc:8000/v1' : undefined);
      expect(parsed.data?.LORE_AI_LLM_MODEL).toBe(values === FULL ? 'qwen2.5-7b-instruct' : undefined);
      expect(parsed.data?.LORE_DATABASE_OWNER_URL).toBeUndefined();

      // Its Service on 8082, selecting its pods; the gateway forwards core's routes to exactly that Service.
      const svc = objs.find((o) => o.kind === 'Service' && o.metadata.name === 'lore-core');
      expect(svc.spec.ports).toEqual([{ name: 'http', port: 8082, targetPort: 'http', protocol: 'TCP' }]);
      expect(component(objs, 'Deployment', 'core').spec.template.metadata.labels).toMatchObject(svc.spec.selector);
      const gateway = containerOf(objs, 'gateway').env as Array<{ name: string; value?: string }>;
      expect(gateway.filter((e) => e.name === 'GATEWAY_UPSTREAM_CORE')).toEqual([{ name: 'GATEWAY_UPSTREAM_CORE', value: `http://${svc.metadata.name}.${ns}.svc:8082` }]);
      // A PodDisruptionBudget for its two replicas.
      const pdb = objs.find((o) => o.kind === 'PodDisruptionBudget' && o.metadata.name === 'lore-core');
      expect(pdb.spec).toEqual({ minAvailable: 1, selector: { matchLabels: svc.spec.selector } });
    });

    it.each([
      ['minimal', MINIMAL, 'lore'],
      ['full', FULL, 'lore-credentials'],
    ])('runs core-worker beside core with the %s values: its entry point, probes and metrics on 8088, core\'s database, identity, key ring and graph Service, Kafka, its scheduler settings, nothing else', async (_name, values, secret) => {
      const objs = await renderObjects('lore', ns, ['-f', values]);
      const w = containerOf(objs, 'core-worker');
      const deployment = component(objs, 'Deployment', 'core-worker');
      // The same image as core, its own entry point and replicas.
      expect(w.image).toBe(containerOf(objs, 'core').image);
      expect(w.args).toEqual(['services/core/dist/worker-main.js']);
      expect(deployment.spec.replicas).toBe(values === FULL ? 2 : 1);
      expect(w.resources).toEqual({ requests: { cpu: '100m', memory: '256Mi' }, limits: { memory: '1Gi' } });
      expect(w.ports).toEqual([{ name: 'metrics', containerPort: DEFAULT_PORTS.coreWorker }]);
      for (const probe of ['livenessProbe', 'readinessProbe', 'startupProbe']) expect(w[probe].httpGet.port).toBe('metrics');
      expect(w.readinessProbe.httpGet.path).toBe('/readyz');
      const env = w.env as Array<{ name: string; value?: string; valueFrom?: unknown }>;
      const byName = Object.fromEntries(env.map((e) => [e.name, e]));
      const coreEnv = Object.fromEntries((containerOf(objs, 'core').env as Array<{ name: string }>).map((e) => [e.name, e]));
      // What it shares with core comes from the same sources: the Secret, the graph Service, core's values.
      for (const name of ['LORE_DATABASE_URL', 'LORE_IDENTITY_SECRET', 'LORE_ENCRYPTION_KEYS', 'LORE_CORE_GRAPH_URL', 'LORE_CORE_GRAPH_TIMEOUT_MS', 'LORE_CORE_MIGRATE']) {
        expect({ name, env: byName[name] }).toEqual({ name, env: coreEnv[name] });
      }
      expect(byName.LORE_ENCRYPTION_KEYS).toEqual({ name: 'LORE_ENCRYPTION_KEYS', valueFrom: { secretKeyRef: { name: secret, key: 'encryption-keys' } } });
      expect(byName.LORE_CORE_GRAPH_URL).toEqual({ name: 'LORE_CORE_GRAPH_URL', value: `http://lore-graph.${ns}.svc:${DEFAULT_PORTS.graph}` });
      // Kafka from the ConfigMap, as graph-worker gets it.
      const graphWorkerEnv = Object.fromEntries((containerOf(objs, 'graph-worker').env as Array<{ name: string }>).map((e) => [e.name, e]));
      for (const name of ['LORE_KAFKA_BROKERS', 'LORE_KAFKA_PREFIX']) expect({ name, env: byName[name] }).toEqual({ name, env: graphWorkerEnv[name] });
      expect(byName.LORE_KAFKA_BROKERS).toEqual({ name: 'LORE_KAFKA_BROKERS', valueFrom: { configMapKeyRef: { name: 'lore', key: 'kafka-brokers' } } });
      // Never the owner's URL, Redis, the language model, the embedder, core's API settings, or loopback reads.
      for (const absent of ['LORE_DATABASE_OWNER_URL', 'LORE_REDIS_URL', 'LORE_AI_LLM_BASE_URL', 'LORE_AI_LLM_API_KEY', 'LORE_AI_EMBEDDINGS_API_KEY', 'LORE_EMBEDDER', 'LORE_CORE_PORT', 'LORE_CORE_BODY_LIMIT_BYTES', 'LORE_CORE_ANSWER_MAX_TOKENS', 'LORE_CONNECTORS_ALLOW_LOOPBACK']) {
        expect({ absent, present: absent in byName }).toEqual({ absent, present: false });
      }
      expect(JSON.stringify(env)).not.toContain('database-owner-url');
      // Every other variable is one core's configuration schema reads, and it accepts them as the process would.
      const extra = new Set(values === FULL ? ['TZ'] : []);
      expect(env.map((e) => e.name).filter((n) => !COMMON.has(n) && !extra.has(n) && !(n in coreConfigSchema.shape))).toEqual([]);
      const plain = Object.fromEntries(env.filter((e) => e.value !== undefined).map((e) => [e.name, e.value!]));
      const parsed = coreConfigSchema.safeParse({
        ...plain,
        LORE_LOG_LEVEL: 'info',
        LORE_DATABASE_URL: 'postgres://lore_app:x@pg:5432/lore',
        LORE_IDENTITY_SECRET: 'x'.repeat(32),
        LORE_ENCRYPTION_KEYS: `k1:${randomBytes(32).toString('base64')}`,
        LORE_KAFKA_BROKERS: 'kafka-0:9092,kafka-1:9092',
        LORE_KAFKA_PREFIX: '',
      });
      expect(parsed.error?.issues).toBeUndefined();
      expect(parsed.data).toMatchObject({
        NODE_ENV: 'production',
        LORE_CORE_WORKER_PORT: DEFAULT_PORTS.coreWorker,
        LORE_CORE_MIGRATE: false,
        LORE_CORE_RELAY: true,
        LORE_CORE_CONSUMER_GROUP: 'core-worker',
        LORE_CORE_GRAPH_URL: `http://lore-graph.${ns}.svc:8083`,
        LORE_CORE_SCHEDULER_INTERVAL_MS: values === FULL ? 30000 : 15000,
        LORE_CORE_INDEX_HEARTBEAT_MS: values === FULL ? 10000 : 5000,
        LORE_CORE_INDEX_STALE_MS: values === FULL ? 120000 : 60000,
        LORE_CORE_INDEX_BATCH_DOCUMENTS: values === FULL ? 32 : 64,
        LORE_CONNECTORS_ALLOW_LOOPBACK: false,
      });
      expect(parsed.data?.LORE_CONNECTORS_GOOGLE_API_URL).toBe(values === FULL ? 'https://google-apis.proxy.example.com' : undefined);
      expect(parsed.data?.LORE_CONNECTORS_GOOGLE_TOKEN_URL).toBe(values === FULL ? 'https://google-apis.proxy.example.com/oauth2/token' : undefined);
      // The restricted security context of every pod, no service account token.
      expect(deployment.spec.template.spec.automountServiceAccountToken).toBe(false);
      expect(w.securityContext).toEqual({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } });

      // A Service for its metrics (what a ServiceMonitor selects), selecting its pods only; a PDB when asked.
      const svc = objs.find((o) => o.kind === 'Service' && o.metadata.name === 'lore-core-worker');
      expect(svc.spec.ports).toEqual([{ name: 'metrics', port: DEFAULT_PORTS.coreWorker, targetPort: 'metrics', protocol: 'TCP' }]);
      expect(svc.metadata.labels['lore.dev/metrics']).toBe('true');
      expect(deployment.spec.template.metadata.labels).toMatchObject(svc.spec.selector);
      expect(component(objs, 'Deployment', 'core').spec.template.metadata.labels).not.toMatchObject(svc.spec.selector);
      const pdb = objs.find((o) => o.kind === 'PodDisruptionBudget' && o.metadata.name === 'lore-core-worker');
      if (values === FULL) expect(pdb.spec).toEqual({ minAvailable: 1, selector: { matchLabels: svc.spec.selector } });
      else expect(pdb).toBeUndefined();
      expect(objs.some((o) => o.kind === 'HorizontalPodAutoscaler' && o.metadata.name === 'lore-core-worker')).toBe(false);
    });

    it('runs core-worker only with core and core.worker.enabled', async () => {
      const workerObjects = (objs: any[]) => objs.filter((o) => o.metadata.labels?.['app.kubernetes.io/component'] === 'core-worker');
      const graphFrom = (objs: any[]) =>
        objs.find((o) => o.kind === 'NetworkPolicy' && o.metadata.name === 'lore-graph').spec.ingress
          .flatMap((r: any) => (r.from ?? []).filter((f: any) => f.podSelector).map((f: any) => f.podSelector.matchLabels['app.kubernetes.io/component']));
      const off = await renderObjects('lore', ns, ['-f', FULL, '--set', 'core.worker.enabled=false']);
      expect(workerObjects(off)).toEqual([]);
      expect(component(off, 'Deployment', 'core')).toBeDefined();
      // (agents-worker, on in the full values, reads the tenant's knowledge from graph too: the agents tests.)
      expect(graphFrom(off)).toEqual(['gateway', 'core', 'agents-worker']);
      const withoutCore = await renderObjects('lore', ns, ['-f', FULL, '--set', 'core.enabled=false']);
      expect(workerObjects(withoutCore)).toEqual([]);
      expect(graphFrom(withoutCore)).toEqual(['gateway', 'agents-worker']);
      const on = await renderObjects('lore', ns, ['-f', FULL]);
      expect(workerObjects(on).map((o) => o.kind).sort()).toEqual(['Deployment', 'NetworkPolicy', 'PodDisruptionBudget', 'Service', 'ServiceMonitor']);
      expect(graphFrom(on)).toEqual(['gateway', 'core', 'core-worker', 'agents-worker']);
    });

    it('scales core with a HorizontalPodAutoscaler when asked (the full values), instead of a fixed replica count', async () => {
      const full = await renderObjects('lore', ns, ['-f', FULL]);
      const hpa = full.find((o) => o.kind === 'HorizontalPodAutoscaler' && o.metadata.name === 'lore-core');
      expect(hpa.spec).toMatchObject({ scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'lore-core' }, minReplicas: 2, maxReplicas: 6 });
      expect(component(full, 'Deployment', 'core').spec.replicas).toBeUndefined();
      const minimal = await renderObjects('lore', ns, ['-f', MINIMAL]);
      expect(minimal.some((o) => o.kind === 'HorizontalPodAutoscaler')).toBe(false);
      expect(component(minimal, 'Deployment', 'core').spec.replicas).toBe(2);
    });

    it('lets only the gateway (and Prometheus) reach core, lets core and core-worker reach graph, and restricts no egress (core reaches PostgreSQL, core-worker the web)', async () => {
      const full = await renderObjects('lore', ns, ['-f', FULL]);
      const policy = (name: string) => full.find((o) => o.kind === 'NetworkPolicy' && o.metadata.name === `lore-${name}`);
      const core = policy('core');
      const gatewayPod = component(full, 'Deployment', 'gateway').spec.template.metadata.labels;
      const corePod = component(full, 'Deployment', 'core').spec.template.metadata.labels;
      expect(corePod).toMatchObject(core.spec.podSelector.matchLabels);
      expect(core.spec.policyTypes).toEqual(['Ingress']);
      const fromGateway = core.spec.ingress.find((r: any) => r.from?.some((f: any) => f.podSelector));
      expect(fromGateway.ports).toEqual([{ port: 'http', protocol: 'TCP' }]);
      expect(fromGateway.from).toHaveLength(1);
      expect(gatewayPod).toMatchObject(fromGateway.from[0].podSelector.matchLabels);
      expect(fromGateway.from[0].podSelector.matchLabels['app.kubernetes.io/component']).toBe('gateway');
      // Nothing but the gateway reaches core's port (Prometheus aside): not core's own pods, not graph's.
      const fromPods = core.spec.ingress.flatMap((r: any) => (r.from ?? []).filter((f: any) => f.podSelector).map((f: any) => f.podSelector.matchLabels['app.kubernetes.io/component']));
      expect(fromPods).toEqual(['gateway']);
      // graph's policy: core's rules (the gateway, Prometheus) and two more on graph's port: core's pods, where chat
      // retrieves from (LORE_CORE_GRAPH_URL), and core-worker's, which write connector documents there; nothing else.
      const graph = policy('graph');
      const graphPod = component(full, 'Deployment', 'graph').spec.template.metadata.labels;
      expect(graphPod).toMatchObject(graph.spec.podSelector.matchLabels);
      const fromCore = graph.spec.ingress.filter((r: any) => r.from?.some((f: any) => f.podSelector?.matchLabels['app.kubernetes.io/component'] === 'core'));
      expect(fromCore).toHaveLength(1);
      expect(fromCore[0].ports).toEqual([{ port: 'http', protocol: 'TCP' }]);
      expect(fromCore[0].from).toHaveLength(1);
      expect(corePod).toMatchObject(fromCore[0].from[0].podSelector.matchLabels);
      const workerPod = component(full, 'Deployment', 'core-worker').spec.template.metadata.labels;
      const fromWorker = graph.spec.ingress.filter((r: any) => r.from?.some((f: any) => f.podSelector?.matchLabels['app.kubernetes.io/component'] === 'core-worker'));
      expect(fromWorker).toHaveLength(1);
      expect(fromWorker[0].ports).toEqual([{ port: 'http', protocol: 'TCP' }]);
      expect(fromWorker[0].from).toHaveLength(1);
      expect(workerPod).toMatchObject(fromWorker[0].from[0].podSelector.matchLabels);
      expect(corePod).not.toMatchObject(fromWorker[0].from[0].podSelector.matchLabels);
      // Besides them graph admits agents-worker (the agents tests), and otherwise has core's rules.
      const fromAgentsWorker = graph.spec.ingress.filter((r: any) => r.from?.some((f: any) => f.podSelector?.matchLabels['app.kubernetes.io/component'] === 'agents-worker'));
      expect(fromAgentsWorker).toHaveLength(1);
      expect(graph.spec.ingress.filter((r: any) => !fromCore.includes(r) && !fromWorker.includes(r) && !fromAgentsWorker.includes(r))).toEqual(core.spec.ingress);
      const graphContainer = component(full, 'Deployment', 'graph').spec.template.spec.containers[0];
      expect(graphContainer.ports).toEqual([expect.objectContaining({ name: 'http', containerPort: DEFAULT_PORTS.graph })]);
      // No other internal service admits core or core-worker.
      for (const name of ['agents', 'mcp', 'gateway', 'core']) {
        expect(JSON.stringify(policy(name).spec.ingress)).not.toContain('"app.kubernetes.io/component":"core-worker"');
        if (name !== 'core') expect(JSON.stringify(policy(name).spec.ingress)).not.toContain('"app.kubernetes.io/component":"core"');
      }
      // core-worker serves nothing but its probes and metrics: Prometheus on its metrics port, as graph-worker.
      const worker = policy('core-worker');
      expect(workerPod).toMatchObject(worker.spec.podSelector.matchLabels);
      expect(worker.spec.policyTypes).toEqual(['Ingress']);
      expect(worker.spec.ingress).toEqual([{ ports: [{ port: 'metrics', protocol: 'TCP' }], from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } }] }]);
      expect(worker.spec.ingress).toEqual(policy('graph-worker').spec.ingress);
      // No policy limits egress: core's connections to the external PostgreSQL, and core-worker's to Kafka and to
      // connector sources on the internet (its SSRF guard refuses private and metadata addresses), leave freely.
      expect(full.filter((o) => o.kind === 'NetworkPolicy' && (o.spec.policyTypes ?? []).includes('Egress'))).toEqual([]);
      // Its metrics are scraped on that port.
      const monitor = full.find((o) => o.kind === 'ServiceMonitor' && o.metadata.name === 'lore-core');
      expect(monitor.spec.endpoints).toEqual([expect.objectContaining({ port: 'http', path: '/metrics' })]);
      const workerMonitor = full.find((o) => o.kind === 'ServiceMonitor' && o.metadata.name === 'lore-core-worker');
      expect(workerMonitor.spec.endpoints).toEqual([expect.objectContaining({ port: 'metrics', path: '/metrics' })]);
      // It selects core-worker's metrics Service, which selects core-worker's pods.
      const workerSvc = full.find((o) => o.kind === 'Service' && o.metadata.name === 'lore-core-worker');
      expect(workerSvc.metadata.labels).toMatchObject(workerMonitor.spec.selector.matchLabels);
      expect(workerPod).toMatchObject(workerSvc.spec.selector);
    });

    it('leaves core out on request: no objects, no upstream on the gateway, no policy, and graph\'s policy admits the gateway (and agents-worker) only', async () => {
      const off = await renderObjects('lore', ns, ['-f', FULL, '--set', 'core.enabled=false']);
      expect(off.filter((o) => ['core', 'core-worker'].includes(o.metadata.labels?.['app.kubernetes.io/component']))).toEqual([]);
      expect(containerOf(off, 'gateway').env.some((e: { name: string }) => e.name === 'GATEWAY_UPSTREAM_CORE')).toBe(false);
      const graph = off.find((o) => o.kind === 'NetworkPolicy' && o.metadata.name === 'lore-graph');
      const fromPods = graph.spec.ingress.flatMap((r: any) => (r.from ?? []).filter((f: any) => f.podSelector).map((f: any) => f.podSelector.matchLabels['app.kubernetes.io/component']));
      expect(fromPods).toEqual(['gateway', 'agents-worker']);
    });

    it('refuses core without graph (chat retrieves from it), and reads no Kafka itself (its worker does)', async () => {
      const refused = await template('lore', ns, ['-f', MINIMAL, '--set', 'graph.enabled=false', '--set', 'graphWorker.enabled=false']);
      expect(refused.code).not.toBe(0);
      expect(refused.stderr).toContain('core.enabled needs graph.enabled');
      // Without core the same install renders.
      const withoutCore = await template('lore', ns, ['-f', MINIMAL, '--set', 'graph.enabled=false', '--set', 'graphWorker.enabled=false', '--set', 'core.enabled=false']);
      expect(withoutCore.stderr).toBe('');
      expect(withoutCore.code).toBe(0);
      // The Kafka settings go to graph, never to core.
      const objs = await renderObjects('lore', ns, ['-f', MINIMAL]);
      const names = (c: string) => (containerOf(objs, c).env as Array<{ name: string }>).map((e) => e.name);
      expect(names('graph')).toEqual(expect.arrayContaining(['LORE_KAFKA_BROKERS', 'LORE_KAFKA_PREFIX']));
      expect(names('core').filter((n) => n.startsWith('LORE_KAFKA'))).toEqual([]);
      expect(names('core-worker').filter((n) => n.startsWith('LORE_KAFKA'))).toEqual(['LORE_KAFKA_BROKERS', 'LORE_KAFKA_PREFIX']);
      // The gateway has no bus either (the webhooks worker reads Kafka): no address it never uses.
      expect(names('gateway').filter((n) => n.startsWith('LORE_KAFKA'))).toEqual([]);
      expect(names('webhooks').filter((n) => n.startsWith('LORE_KAFKA'))).toEqual(['LORE_KAFKA_BROKERS', 'LORE_KAFKA_PREFIX']);
    });

    it('needs the key ring for core alone (it seals connector credentials)', async () => {
      // Left empty, the ring is generated (one 32-byte key) and kept, as for the gateway (chart-install-modes suite).
      const generated = await renderObjects('lore', ns, [
        '-f', MINIMAL, '--set', 'secrets.encryptionKeys=',
        '--set', 'gateway.enabled=false', '--set', 'webhooks.enabled=false', '--set', 'operator.enabled=false',
      ]);
      const ring = generated.find((o) => o.kind === 'Secret' && o.metadata.name === 'lore').data['encryption-keys'];
      expect(Buffer.from(ring, 'base64').toString()).toMatch(/^k1:[A-Za-z0-9+/]{43}=$/);
      const bad = await template('lore', ns, [
        '-f', MINIMAL, '--set', 'secrets.encryptionKeys=k1:c2hvcnQ=',
        '--set', 'gateway.enabled=false', '--set', 'webhooks.enabled=false', '--set', 'operator.enabled=false',
      ]);
      expect(bad.code).not.toBe(0);
      expect(bad.stderr).toContain('secrets.encryptionKeys: entry 1 must be id:base64-of-32-bytes');
      // Without any of its three readers no ring is needed.
      const none = await template('lore', ns, [
        '-f', MINIMAL, '--set', 'secrets.encryptionKeys=',
        '--set', 'gateway.enabled=false', '--set', 'webhooks.enabled=false', '--set', 'operator.enabled=false', '--set', 'core.enabled=false',
      ]);
      expect(none.stderr).toBe('');
      expect(none.code).toBe(0);
    });
  });

  describe('agents', () => {
    const component = (objs: any[], kind: string, name: string) => objs.find((o) => o.kind === kind && o.metadata.labels?.['app.kubernetes.io/component'] === name);
    const containerOf = (objs: any[], name: string) => component(objs, 'Deployment', name).spec.template.spec.containers[0];
    const envByName = (objs: any[], name: string): Record<string, { name: string; value?: string; valueFrom?: unknown }> =>
      Object.fromEntries((containerOf(objs, name).env as Array<{ name: string }>).map((e) => [e.name, e]));
    /** Variables every Lore container gets from the chart whatever the component (lore.commonEnv, OTEL_SERVICE_NAME). */
    const COMMON = new Set(['NODE_ENV', 'LOG_LEVEL', 'OTEL_SERVICE_NAME', 'OTEL_EXPORTER_OTLP_ENDPOINT']);
    /** What the agents processes read from Secrets, as the processes would read them. */
    const fromSecrets = (values: string) => ({
      LORE_DATABASE_URL: 'postgres://lore_app:x@pg:5432/lore',
      LORE_REDIS_URL: 'redis://redis:6379',
      LORE_IDENTITY_SECRET: 'x'.repeat(32),
      ...(values === FULL ? { LORE_AI_LLM_API_KEY: 'sk-test' } : {}),
    });
    /** The component names of the pods a NetworkPolicy's rules admit. */
    const podsFrom = (policy: any) => policy.spec.ingress.flatMap((r: any) => (r.from ?? []).filter((f: any) => f.podSelector).map((f: any) => f.podSelector.matchLabels['app.kubernetes.io/component']));

    it.each([
      ['minimal', MINIMAL, 'lore'],
      ['full', FULL, 'lore-credentials'],
    ])('runs agents with the %s values: its entry point on 8084, probes on that port, PostgreSQL, Redis and the identity secret from the Secret, graph\'s language model, no SearXNG address (the worker\'s), nothing else', async (_name, values, secret) => {
      const objs = await renderObjects('lore', ns, ['-f', values]);
      const c = containerOf(objs, 'agents');
      expect(c.image).toBe(containerOf(objs, 'gateway').image);
      expect(c.args).toEqual(['services/agents/dist/main.js']);
      expect(c.ports).toEqual([{ name: 'http', containerPort: DEFAULT_PORTS.agents }]);
      for (const probe of ['livenessProbe', 'readinessProbe', 'startupProbe']) expect(c[probe].httpGet.port).toBe('http');
      expect(c.readinessProbe.httpGet.path).toBe('/readyz');
      const env = c.env as Array<{ name: string; value?: string; valueFrom?: unknown }>;
      const byName = envByName(objs, 'agents');
      expect(byName.LORE_AGENTS_PORT).toEqual({ name: 'LORE_AGENTS_PORT', value: '8084' });
      expect(byName.LORE_AGENTS_MIGRATE).toEqual({ name: 'LORE_AGENTS_MIGRATE', value: 'false' });
      expect(byName.LORE_DATABASE_URL).toEqual({ name: 'LORE_DATABASE_URL', valueFrom: { secretKeyRef: { name: secret, key: 'database-url' } } });
      expect(byName.LORE_REDIS_URL).toEqual({ name: 'LORE_REDIS_URL', valueFrom: { secretKeyRef: { name: secret, key: 'redis-url' } } });
      expect(byName.LORE_IDENTITY_SECRET).toEqual({ name: 'LORE_IDENTITY_SECRET', valueFrom: { secretKeyRef: { name: secret, key: 'identity-secret' } } });
      // The gateway's own Redis and identity secret: one value for both.
      const gateway = envByName(objs, 'gateway');
      expect(byName.LORE_REDIS_URL).toEqual(gateway.LORE_REDIS_URL);
      expect(byName.LORE_IDENTITY_SECRET).toEqual(gateway.LORE_IDENTITY_SECRET);
      // The language model is graph's (graph.ai), as core's is: the same endpoint, model and llm-api-key.
      const graphEnv = envByName(objs, 'graph');
      const llm = ['LORE_AI_LLM_BASE_URL', 'LORE_AI_LLM_MODEL', 'LORE_AI_LLM_API_KEY'];
      if (values === FULL) {
        for (const name of llm) expect({ name, env: byName[name] }).toEqual({ name, env: graphEnv[name] });
        // Egress proxy URLs may carry credentials: only from the Secret the values name.
        expect(byName.LORE_AGENTS_EGRESS_PROXIES).toEqual({ name: 'LORE_AGENTS_EGRESS_PROXIES', valueFrom: { secretKeyRef: { name: 'lore-egress-proxies', key: 'egress-proxies' } } });
      } else {
        for (const name of [...llm, 'LORE_AGENTS_EGRESS_PROXIES']) expect({ name, present: name in byName }).toEqual({ name, present: false });
      }
      // The web search is the worker's alone (the API builds no lists): never on the API, even with agents.searxngUrl.
      expect('LORE_AGENTS_SEARXNG_URL' in byName).toBe(false);
      expect(byName.LORE_AGENTS_LIVE_URL_TTL_S).toEqual({ name: 'LORE_AGENTS_LIVE_URL_TTL_S', value: values === FULL ? '1800' : '3600' });
      // Never the owner's URL, the key ring, Kafka (the worker's), the embedder, loopback reads or a port name agents does not read.
      for (const absent of ['LORE_DATABASE_OWNER_URL', 'LORE_ENCRYPTION_KEYS', 'LORE_KAFKA_BROKERS', 'LORE_KAFKA_PREFIX', 'LORE_AI_EMBEDDINGS_API_KEY', 'LORE_EMBEDDER', 'LORE_HTTP_PORT', 'LORE_AGENTS_ALLOW_LOOPBACK', 'LORE_AGENTS_WORKER_PORT']) {
        expect({ absent, present: absent in byName }).toEqual({ absent, present: false });
      }
      expect(JSON.stringify(env)).not.toContain('database-owner-url');
      // Every other variable is one agents' configuration schema reads, and the schema accepts the chart's values.
      const extra = new Set(values === FULL ? ['TZ'] : []);
      expect(env.map((e) => e.name).filter((n) => !COMMON.has(n) && !extra.has(n) && !(n in agentsConfigSchema.shape))).toEqual([]);
      const plain = Object.fromEntries(env.filter((e) => e.value !== undefined).map((e) => [e.name, e.value!]));
      const parsed = agentsConfigSchema.safeParse({ ...plain, LORE_LOG_LEVEL: 'info', ...fromSecrets(values) });
      expect(parsed.error?.issues).toBeUndefined();
      expect(parsed.data).toMatchObject({
        NODE_ENV: 'production',
        LORE_AGENTS_PORT: 8084,
        LORE_AGENTS_MIGRATE: false,
        LORE_AGENTS_BODY_LIMIT_BYTES: values === FULL ? 2097152 : 1048576,
        LORE_AGENTS_ALLOW_LOOPBACK: false,
      });
      expect(parsed.data?.LORE_AGENTS_SEARXNG_URL).toBeUndefined();
      expect(parsed.data?.LORE_AI_LLM_BASE_URL).toBe(values === FULL ? 'http://vllm.ai.svc:8000/v1' : undefined);
      expect(parsed.data?.LORE_AI_LLM_MODEL).toBe(values === FULL ? 'qwen2.5-7b-instruct' : undefined);
      expect(parsed.data?.LORE_DATABASE_OWNER_URL).toBeUndefined();

      // Its Service on 8084, selecting its pods; the gateway forwards agents' routes to exactly that Service.
      const svc = objs.find((o) => o.kind === 'Service' && o.metadata.name === 'lore-agents');
      expect(svc.spec.ports).toEqual([{ name: 'http', port: 8084, targetPort: 'http', protocol: 'TCP' }]);
      expect(component(objs, 'Deployment', 'agents').spec.template.metadata.labels).toMatchObject(svc.spec.selector);
      expect(component(objs, 'Deployment', 'agents-worker').spec.template.metadata.labels).not.toMatchObject(svc.spec.selector);
      const gatewayEnv = containerOf(objs, 'gateway').env as Array<{ name: string; value?: string }>;
      expect(gatewayEnv.filter((e) => e.name === 'GATEWAY_UPSTREAM_AGENTS')).toEqual([{ name: 'GATEWAY_UPSTREAM_AGENTS', value: `http://${svc.metadata.name}.${ns}.svc:8084` }]);
      // A PodDisruptionBudget for its two replicas; an autoscaler instead of a fixed count when asked (the full values).
      const pdb = objs.find((o) => o.kind === 'PodDisruptionBudget' && o.metadata.name === 'lore-agents');
      expect(pdb.spec).toEqual({ minAvailable: 1, selector: { matchLabels: svc.spec.selector } });
      const hpa = objs.find((o) => o.kind === 'HorizontalPodAutoscaler' && o.metadata.name === 'lore-agents');
      if (values === FULL) {
        expect(hpa.spec).toMatchObject({ scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'lore-agents' }, minReplicas: 2, maxReplicas: 4 });
        expect(component(objs, 'Deployment', 'agents').spec.replicas).toBeUndefined();
      } else {
        expect(hpa).toBeUndefined();
        expect(component(objs, 'Deployment', 'agents').spec.replicas).toBe(2);
      }
    });

    it.each([
      ['minimal', MINIMAL, 'lore'],
      ['full', FULL, 'lore-credentials'],
    ])('runs agents-worker beside agents with the %s values: its entry point, probes and metrics on 8089, agents\' environment, Kafka, its run settings, nothing else', async (_name, values, secret) => {
      const objs = await renderObjects('lore', ns, ['-f', values]);
      const w = containerOf(objs, 'agents-worker');
      const deployment = component(objs, 'Deployment', 'agents-worker');
      expect(w.image).toBe(containerOf(objs, 'agents').image);
      expect(w.args).toEqual(['services/agents/dist/worker-main.js']);
      expect(deployment.spec.replicas).toBe(values === FULL ? 2 : 1);
      expect(w.resources).toEqual({ requests: { cpu: '100m', memory: '256Mi' }, limits: { memory: '1Gi' } });
      expect(w.ports).toEqual([{ name: 'metrics', containerPort: DEFAULT_PORTS.agentsWorker }]);
      for (const probe of ['livenessProbe', 'readinessProbe', 'startupProbe']) expect(w[probe].httpGet.port).toBe('metrics');
      expect(w.readinessProbe.httpGet.path).toBe('/readyz');
      const env = w.env as Array<{ name: string; value?: string; valueFrom?: unknown }>;
      const byName = envByName(objs, 'agents-worker');
      const agentsEnv = envByName(objs, 'agents');
      // What it shares with agents comes from the same sources: the Secret, agents' values, graph's language model.
      for (const name of ['LORE_DATABASE_URL', 'LORE_REDIS_URL', 'LORE_IDENTITY_SECRET', 'LORE_AGENTS_MIGRATE', 'LORE_AGENTS_EGRESS_PROXIES', 'LORE_AI_LLM_BASE_URL', 'LORE_AI_LLM_MODEL', 'LORE_AI_LLM_API_KEY']) {
        expect({ name, env: byName[name] }).toEqual({ name, env: agentsEnv[name] });
      }
      // The web search (SearXNG) when agents.searxngUrl names one: the worker's alone.
      if (values === FULL) expect(byName.LORE_AGENTS_SEARXNG_URL).toEqual({ name: 'LORE_AGENTS_SEARXNG_URL', value: 'http://searxng.search.svc:8080' });
      else expect('LORE_AGENTS_SEARXNG_URL' in byName).toBe(false);
      expect(byName.LORE_REDIS_URL).toEqual({ name: 'LORE_REDIS_URL', valueFrom: { secretKeyRef: { name: secret, key: 'redis-url' } } });
      expect(byName.LORE_AGENTS_WORKER_PORT).toEqual({ name: 'LORE_AGENTS_WORKER_PORT', value: '8089' });
      // The tenant's knowledge: graph's Service URL, the worker's alone (the API builds no lists).
      expect(byName.LORE_AGENTS_GRAPH_URL).toEqual({ name: 'LORE_AGENTS_GRAPH_URL', value: `http://lore-graph.${ns}.svc:8083` });
      expect('LORE_AGENTS_GRAPH_URL' in agentsEnv).toBe(false);
      // Its run settings are the worker's alone: the API does not run workflows.
      for (const name of ['LORE_AGENTS_WORKFLOW_MAX_RUNNING', 'LORE_AGENTS_BUDGET_FETCHES', 'LORE_AGENTS_BUDGET_WALL_MS', 'LORE_AGENTS_BUDGET_MODEL_TOKENS']) {
        expect({ name, inWorker: name in byName, inApi: name in agentsEnv }).toEqual({ name, inWorker: true, inApi: false });
      }
      // Kafka from the ConfigMap, as core-worker gets it.
      const coreWorkerEnv = envByName(objs, 'core-worker');
      for (const name of ['LORE_KAFKA_BROKERS', 'LORE_KAFKA_PREFIX']) expect({ name, env: byName[name] }).toEqual({ name, env: coreWorkerEnv[name] });
      expect(byName.LORE_KAFKA_BROKERS).toEqual({ name: 'LORE_KAFKA_BROKERS', valueFrom: { configMapKeyRef: { name: 'lore', key: 'kafka-brokers' } } });
      // Never the owner's URL, the key ring, the embedder, the API's port and body limit, or loopback reads.
      for (const absent of ['LORE_DATABASE_OWNER_URL', 'LORE_ENCRYPTION_KEYS', 'LORE_AI_EMBEDDINGS_API_KEY', 'LORE_EMBEDDER', 'LORE_AGENTS_PORT', 'LORE_AGENTS_BODY_LIMIT_BYTES', 'LORE_AGENTS_LIVE_URL_TTL_S', 'LORE_AGENTS_ALLOW_LOOPBACK', 'LORE_HTTP_PORT']) {
        expect({ absent, present: absent in byName }).toEqual({ absent, present: false });
      }
      expect(JSON.stringify(env)).not.toContain('database-owner-url');
      // Every other variable is one agents' configuration schema reads, and it accepts them as the process would.
      const extra = new Set(values === FULL ? ['TZ'] : []);
      expect(env.map((e) => e.name).filter((n) => !COMMON.has(n) && !extra.has(n) && !(n in agentsConfigSchema.shape))).toEqual([]);
      const plain = Object.fromEntries(env.filter((e) => e.value !== undefined).map((e) => [e.name, e.value!]));
      const parsed = agentsConfigSchema.safeParse({ ...plain, LORE_LOG_LEVEL: 'info', ...fromSecrets(values), LORE_KAFKA_BROKERS: 'kafka-0:9092,kafka-1:9092', LORE_KAFKA_PREFIX: '' });
      expect(parsed.error?.issues).toBeUndefined();
      expect(parsed.data).toMatchObject({
        NODE_ENV: 'production',
        LORE_AGENTS_WORKER_PORT: DEFAULT_PORTS.agentsWorker,
        LORE_AGENTS_MIGRATE: false,
        LORE_AGENTS_RELAY: true,
        LORE_AGENTS_CONSUMER_GROUP: 'agents-worker',
        LORE_AGENTS_ALLOW_LOOPBACK: false,
        LORE_AGENTS_WORKFLOW_MAX_RUNNING: values === FULL ? 4 : 8,
        LORE_AGENTS_BUDGET_FETCHES: values === FULL ? 400 : 200,
        LORE_AGENTS_BUDGET_WALL_MS: values === FULL ? 900000 : 600000,
        LORE_AGENTS_BUDGET_MODEL_TOKENS: values === FULL ? 80000 : 50000,
      });
      expect(deployment.spec.template.spec.automountServiceAccountToken).toBe(false);
      expect(w.securityContext).toEqual({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } });

      // A Service for its metrics (what a ServiceMonitor selects), selecting its pods only; a PDB when asked.
      const svc = objs.find((o) => o.kind === 'Service' && o.metadata.name === 'lore-agents-worker');
      expect(svc.spec.ports).toEqual([{ name: 'metrics', port: DEFAULT_PORTS.agentsWorker, targetPort: 'metrics', protocol: 'TCP' }]);
      expect(svc.metadata.labels['lore.dev/metrics']).toBe('true');
      expect(deployment.spec.template.metadata.labels).toMatchObject(svc.spec.selector);
      expect(component(objs, 'Deployment', 'agents').spec.template.metadata.labels).not.toMatchObject(svc.spec.selector);
      const pdb = objs.find((o) => o.kind === 'PodDisruptionBudget' && o.metadata.name === 'lore-agents-worker');
      if (values === FULL) expect(pdb.spec).toEqual({ minAvailable: 1, selector: { matchLabels: svc.spec.selector } });
      else expect(pdb).toBeUndefined();
      expect(objs.some((o) => o.kind === 'HorizontalPodAutoscaler' && o.metadata.name === 'lore-agents-worker')).toBe(false);
    });

    it('runs agents-worker only with agents and agents.worker.enabled', async () => {
      const workerObjects = (objs: any[]) => objs.filter((o) => o.metadata.labels?.['app.kubernetes.io/component'] === 'agents-worker');
      const graphAdmits = (objs: any[]) =>
        podsFrom(objs.find((o) => o.kind === 'NetworkPolicy' && o.metadata.name === 'lore-graph')).includes('agents-worker');
      const off = await renderObjects('lore', ns, ['-f', FULL, '--set', 'agents.worker.enabled=false']);
      expect(workerObjects(off)).toEqual([]);
      expect(component(off, 'Deployment', 'agents')).toBeDefined();
      // graph admits agents-worker only while it runs.
      expect(graphAdmits(off)).toBe(false);
      const withoutAgents = await renderObjects('lore', ns, ['-f', FULL, '--set', 'agents.enabled=false']);
      expect(workerObjects(withoutAgents)).toEqual([]);
      expect(graphAdmits(withoutAgents)).toBe(false);
      const on = await renderObjects('lore', ns, ['-f', FULL]);
      expect(workerObjects(on).map((o) => o.kind).sort()).toEqual(['Deployment', 'NetworkPolicy', 'PodDisruptionBudget', 'Service', 'ServiceMonitor']);
      expect(graphAdmits(on)).toBe(true);
    });

    it('lets only the gateway (and Prometheus) reach agents, nothing reach agents-worker but Prometheus, and restricts no egress (both read the web)', async () => {
      const full = await renderObjects('lore', ns, ['-f', FULL]);
      const policy = (name: string) => full.find((o) => o.kind === 'NetworkPolicy' && o.metadata.name === `lore-${name}`);
      const agents = policy('agents');
      const agentsPod = component(full, 'Deployment', 'agents').spec.template.metadata.labels;
      const gatewayPod = component(full, 'Deployment', 'gateway').spec.template.metadata.labels;
      expect(agentsPod).toMatchObject(agents.spec.podSelector.matchLabels);
      expect(agents.spec.policyTypes).toEqual(['Ingress']);
      const fromGateway = agents.spec.ingress.find((r: any) => r.from?.some((f: any) => f.podSelector));
      expect(fromGateway.ports).toEqual([{ port: 'http', protocol: 'TCP' }]);
      expect(fromGateway.from).toHaveLength(1);
      expect(gatewayPod).toMatchObject(fromGateway.from[0].podSelector.matchLabels);
      // Nothing but the gateway reaches agents' port (Prometheus aside): not its worker, not core.
      expect(podsFrom(agents)).toEqual(['gateway']);
      expect(agents.spec.ingress).toContainEqual({ ports: [{ port: 'http', protocol: 'TCP' }], from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } }] });
      expect(agents.spec.ingress).toHaveLength(2);
      // No other service admits agents or its worker, but graph its worker: list building reads the tenant's knowledge.
      for (const name of ['graph', 'core', 'mcp', 'gateway', 'core-worker']) {
        for (const c of ['agents', 'agents-worker']) {
          const admitted = JSON.stringify(policy(name).spec.ingress).includes(`"app.kubernetes.io/component":"${c}"`);
          expect({ name, c, admitted }).toEqual({ name, c, admitted: name === 'graph' && c === 'agents-worker' });
        }
      }
      const graphFromWorker = policy('graph').spec.ingress.find((r: any) => JSON.stringify(r.from).includes('"app.kubernetes.io/component":"agents-worker"'));
      expect(graphFromWorker.ports).toEqual([{ port: 'http', protocol: 'TCP' }]);
      expect(component(full, 'Deployment', 'agents-worker').spec.template.metadata.labels).toMatchObject(graphFromWorker.from[0].podSelector.matchLabels);
      // agents-worker serves nothing but its probes and metrics: Prometheus on its metrics port, as core-worker.
      const worker = policy('agents-worker');
      const workerPod = component(full, 'Deployment', 'agents-worker').spec.template.metadata.labels;
      expect(workerPod).toMatchObject(worker.spec.podSelector.matchLabels);
      expect(agentsPod).not.toMatchObject(worker.spec.podSelector.matchLabels);
      expect(worker.spec.policyTypes).toEqual(['Ingress']);
      expect(worker.spec.ingress).toEqual([{ ports: [{ port: 'metrics', protocol: 'TCP' }], from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } }] }]);
      expect(worker.spec.ingress).toEqual(policy('core-worker').spec.ingress);
      // No policy limits egress: company sites, search results and SearXNG are reached on the web (their SSRF guard
      // refuses private and metadata addresses), PostgreSQL, Redis and Kafka outside the cluster.
      expect(full.filter((o) => o.kind === 'NetworkPolicy' && (o.spec.policyTypes ?? []).includes('Egress'))).toEqual([]);
      // Metrics are scraped on the API's port and on the worker's metrics port, through their Services.
      const monitor = full.find((o) => o.kind === 'ServiceMonitor' && o.metadata.name === 'lore-agents');
      expect(monitor.spec.endpoints).toEqual([expect.objectContaining({ port: 'http', path: '/metrics' })]);
      const workerMonitor = full.find((o) => o.kind === 'ServiceMonitor' && o.metadata.name === 'lore-agents-worker');
      expect(workerMonitor.spec.endpoints).toEqual([expect.objectContaining({ port: 'metrics', path: '/metrics' })]);
      const workerSvc = full.find((o) => o.kind === 'Service' && o.metadata.name === 'lore-agents-worker');
      expect(workerSvc.metadata.labels).toMatchObject(workerMonitor.spec.selector.matchLabels);
      expect(workerPod).toMatchObject(workerSvc.spec.selector);
    });

    it('leaves agents out on request: no objects, no upstream on the gateway, no policy or monitor', async () => {
      const off = await renderObjects('lore', ns, ['-f', FULL, '--set', 'agents.enabled=false']);
      expect(off.filter((o) => ['agents', 'agents-worker'].includes(o.metadata.labels?.['app.kubernetes.io/component']))).toEqual([]);
      expect(containerOf(off, 'gateway').env.some((e: { name: string }) => e.name === 'GATEWAY_UPSTREAM_AGENTS')).toBe(false);
      // The rest of the install is unchanged.
      expect(component(off, 'Deployment', 'core')).toBeDefined();
      expect(containerOf(off, 'gateway').env.some((e: { name: string }) => e.name === 'GATEWAY_UPSTREAM_CORE')).toBe(true);
    });

    it('documents every variable agents\' configuration schema reads in configuration.md\'s Agents table, and nothing else there', () => {
      const doc = readFileSync(join(REPO_ROOT, 'docs', 'configuration.md'), 'utf8');
      const section = /\n## Agents\n([\s\S]*?)\n## /.exec(doc)?.[1] ?? '';
      // The table's first column: one or more backticked names per row.
      const documented = section.split('\n').filter((l) => l.startsWith('| `')).flatMap((l) => [...l.split('|')[1]!.matchAll(/`([A-Z0-9_]+)`/g)].map((m) => m[1]!));
      expect(documented.length).toBeGreaterThan(10);
      expect([...new Set(documented)].sort()).toEqual(Object.keys(agentsConfigSchema.shape).sort());
    });

    it('needs Kafka for agents-worker, never for the agents API; and agents, Redis', async () => {
      const kafkaReaders = ['--set', 'webhooks.enabled=false', '--set', 'graph.enabled=false', '--set', 'graphWorker.enabled=false', '--set', 'core.enabled=false'];
      // Only agents-worker is left to read Kafka: without brokers the chart refuses it, naming it.
      const refused = await template('lore', ns, ['-f', MINIMAL, ...kafkaReaders, '--set-json', 'externalKafka.brokers=[]']);
      expect(refused.code).not.toBe(0);
      expect(refused.stderr).toContain('externalKafka.brokers is required by webhooks, graph, graphWorker, core.worker and agents.worker');
      // Without the worker the agents API renders with no brokers at all, and gets no Kafka settings.
      const apiOnly = await template('lore', ns, ['-f', MINIMAL, ...kafkaReaders, '--set-json', 'externalKafka.brokers=[]', '--set', 'agents.worker.enabled=false']);
      expect(apiOnly.stderr).toBe('');
      expect(apiOnly.code).toBe(0);
      const objs = await renderObjects('lore', ns, ['-f', MINIMAL]);
      expect(Object.keys(envByName(objs, 'agents')).filter((n) => n.startsWith('LORE_KAFKA'))).toEqual([]);
      expect(Object.keys(envByName(objs, 'agents-worker')).filter((n) => n.startsWith('LORE_KAFKA'))).toEqual(['LORE_KAFKA_BROKERS', 'LORE_KAFKA_PREFIX']);
      // Redis's URL is required whenever the chart makes the Secret; agents reads it with the gateway.
      const noRedis = await template('lore', ns, ['-f', MINIMAL, '--set', 'externalRedis.url=']);
      expect(noRedis.code).not.toBe(0);
      expect(noRedis.stderr).toContain('externalRedis.url is required (or secrets.existingSecret): the gateway and agents read it');
    });
  });

  it('runs every pod with the restricted security context, probes and checksum annotations', async () => {
    const objs = await renderObjects('lore', ns, ['-f', FULL]);
    const pods = objs.filter((o) => o.kind === 'Deployment' || o.kind === 'Job');
    expect(pods.length).toBeGreaterThan(8);
    for (const p of pods) {
      const spec = p.spec.template.spec;
      expect(spec.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 10001, seccompProfile: { type: 'RuntimeDefault' } });
      for (const c of spec.containers) {
        expect(c.securityContext).toEqual({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } });
        expect(c.resources.requests).toBeDefined();
      }
      if (p.kind === 'Deployment') {
        const c = spec.containers[0];
        // The MCP server is probed on spec 3's /health (it serves /livez and /readyz too).
        const mcp = p.metadata.labels['app.kubernetes.io/component'] === 'mcp';
        expect(c.livenessProbe.httpGet.path).toBe(mcp ? '/health' : '/livez');
        expect(c.readinessProbe.httpGet.path).toBe(mcp ? '/health' : '/readyz');
        expect(Object.keys(p.spec.template.metadata.annotations)).toEqual(expect.arrayContaining(['checksum/config', 'checksum/secret']));
      }
    }
    // Only the operator gets a service account token; only the migrations Job sees the owner's URL.
    expect(pods.filter((p) => p.spec.template.spec.automountServiceAccountToken !== false).map((p) => p.metadata.name)).toEqual(['lore-operator']);
    const ownerUrl = pods.filter((p) => JSON.stringify(p.spec.template.spec.containers[0].env).includes('LORE_DATABASE_OWNER_URL'));
    expect(ownerUrl.map((p) => p.kind)).toEqual(['Job']);
    const operatorEnv = JSON.stringify(pods.find((p) => p.metadata.name === 'lore-operator').spec.template.spec.containers[0].env);
    expect(operatorEnv).not.toContain('LORE_DATABASE_URL');
  });

  it('gives the encryption key ring to the gateway, the webhooks worker, core and core-worker only, from the Secret', async () => {
    for (const [values, secret] of [
      [MINIMAL, 'lore'],
      [FULL, 'lore-credentials'],
    ] as const) {
      const objs = await renderObjects('lore', ns, ['-f', values]);
      const pods = objs.filter((o) => o.kind === 'Deployment' || o.kind === 'Job');
      const holders = pods.filter((p) => p.spec.template.spec.containers[0].env.some((e: { name: string }) => e.name === 'LORE_ENCRYPTION_KEYS'));
      expect(holders.map((p) => p.metadata.labels['app.kubernetes.io/component']).sort()).toEqual(['core', 'core-worker', 'gateway', 'webhooks']);
      for (const p of holders) {
        const env = p.spec.template.spec.containers[0].env.find((e: { name: string }) => e.name === 'LORE_ENCRYPTION_KEYS');
        expect(env).toEqual({ name: 'LORE_ENCRYPTION_KEYS', valueFrom: { secretKeyRef: { name: secret, key: 'encryption-keys' } } });
      }
    }
    const minimal = await renderObjects('lore', ns, ['-f', MINIMAL]);
    const rendered = minimal.find((o) => o.kind === 'Secret' && o.metadata.name === 'lore');
    expect(Buffer.from(rendered.data['encryption-keys'], 'base64').toString()).toMatch(/^k1:[A-Za-z0-9+/]{43}=$/);
    // A ring of several keys (the new one first) renders; commas in --set are escaped.
    const [k2, k1] = [`k2:${randomBytes(32).toString('base64')}`, `k1:${randomBytes(32).toString('base64')}`];
    const withRing = await renderObjects('lore', ns, ['-f', MINIMAL, '--set', `secrets.encryptionKeys=${k2}\\,${k1}`]);
    const ringSecret = withRing.find((o) => o.kind === 'Secret' && o.metadata.name === 'lore');
    expect(Buffer.from(ringSecret.data['encryption-keys'], 'base64').toString()).toBe(`${k2},${k1}`);
  });

  it('drains every Deployment before it is signalled: a preStop sleep, then the grace period on top', async () => {
    const deployments = (await renderObjects('lore', ns, ['-f', FULL])).filter((o) => o.kind === 'Deployment');
    expect(deployments.length).toBeGreaterThan(4);
    for (const d of deployments) {
      expect(d.spec.template.spec.terminationGracePeriodSeconds).toBe(35);
      expect(d.spec.template.spec.containers[0].lifecycle).toEqual({ preStop: { sleep: { seconds: 5 } } });
    }
    const off = (await renderObjects('lore', ns, ['-f', MINIMAL, '--set', 'shutdown.drainSeconds=0', '--set', 'shutdown.graceSeconds=20']))
      .filter((o) => o.kind === 'Deployment');
    for (const d of off) {
      expect(d.spec.template.spec.terminationGracePeriodSeconds).toBe(20);
      expect(d.spec.template.spec.containers[0].lifecycle).toBeUndefined();
    }
    const refused = await template('lore', ns, ['-f', MINIMAL, '--set', 'shutdown.drainSeconds=-1']);
    expect(refused.code).not.toBe(0);
  });

  it('rolls pods when the configuration changes (checksum annotations)', async () => {
    const checksum = async (extra: string[]) => {
      const objs = await renderObjects('lore', ns, ['-f', MINIMAL, ...extra]);
      return objs.find((o) => o.kind === 'Deployment' && o.metadata.name === 'lore-gateway').spec.template.metadata.annotations;
    };
    const a = await checksum([]);
    const b = await checksum(['--set', 'config.logLevel=debug']);
    const c = await checksum(['--set', 'secrets.adminToken=another-admin-token-0123456789']);
    expect(b['checksum/config']).not.toBe(a['checksum/config']);
    expect(b['checksum/secret']).toBe(a['checksum/secret']);
    expect(c['checksum/secret']).not.toBe(a['checksum/secret']);
  });

  it('cuts every name to 63 characters, keeping component names distinct', async () => {
    const release = `r${'x'.repeat(52)}`;
    const objs = await renderObjects(release, ns, ['-f', FULL]);
    const overridden = await renderObjects(release, ns, ['-f', FULL, '--set', `fullnameOverride=${'f'.repeat(63)}`]);
    for (const o of overridden) expect(o.metadata.name.length).toBeLessThanOrEqual(63);
    const names = objs.filter((o) => o.kind !== 'CustomResourceDefinition').map((o) => `${o.kind}/${o.metadata.name}`);
    for (const n of names) expect(n.split('/')[1]!.length).toBeLessThanOrEqual(63);
    expect(new Set(names).size).toBe(names.length);
    const r = await template(release, ns, ['-f', FULL, '--set', `fullnameOverride=${'f'.repeat(63)}`]);
    const applied = await kubectl(['apply', '--server-side', '--force-conflicts', '--dry-run=server', '-n', ns, '-f', '-'], r.yaml);
    expect(applied.stderr).toBe('');
  });

  it.each([
    ['no database', ['--set', 'externalDatabase.url='], 'externalDatabase.url is required'],
    ['inline secrets beside an existing Secret', ['--set', 'secrets.existingSecret=mine'], 'secrets.existingSecret is set: leave'],
    ['a short identity secret', ['--set', 'secrets.identitySecret=short'], 'secrets.identitySecret must be at least 32 characters'],
    ['an encryption key that is not 32 bytes', ['--set', 'secrets.encryptionKeys=k1:c2hvcnQ='], 'secrets.encryptionKeys: entry 1 must be id:base64-of-32-bytes'],
    ['an encryption key id listed twice', ['--set-json', `secrets.encryptionKeys="k1:${'A'.repeat(43)}=,k1:${'B'.repeat(43)}="`], 'the id "k1" appears twice'],
    ['the owner as application role', ['--set', 'externalDatabase.url=postgres://lore_owner:owner-password@postgres.data.svc:5432/lore'], 'must not connect as the schema owner'],
    ['no Kafka', ['--set-json', 'externalKafka.brokers=[]'], 'externalKafka.brokers is required'],
    ['the operator without the gateway', ['--set', 'gateway.enabled=false'], 'operator.enabled needs gateway.enabled'],
    ['graph-worker without graph', ['--set', 'graph.enabled=false'], 'graphWorker.enabled needs graph.enabled'],
    ['core without graph', ['--set', 'graph.enabled=false', '--set', 'graphWorker.enabled=false'], 'core.enabled needs graph.enabled'],
    ['two operators without leader election', ['--set', 'operator.leaderElection=false'], 'needs operator.leaderElection'],
    ['shared TLS without its Secret', ['--set', 'operator.ingress.tls.mode=secret'], 'set operator.ingress.tls.secretName'],
    ['a TLS Secret for another mode', ['--set', 'operator.ingress.tls.secretName=wild'], 'only used with operator.ingress.tls.mode=secret'],
    ['an Ingress without a host', ['--set', 'gateway.ingress.enabled=true'], 'gateway.ingress.enabled needs gateway.ingress.host'],
    ['min above max replicas', ['--set', 'gateway.autoscaling.enabled=true', '--set', 'gateway.autoscaling.minReplicas=5', '--set', 'gateway.autoscaling.maxReplicas=3'], 'minReplicas (5) is greater than maxReplicas (3)'],
    ['min above max core replicas', ['--set', 'core.autoscaling.enabled=true', '--set', 'core.autoscaling.minReplicas=5', '--set', 'core.autoscaling.maxReplicas=3'], 'core.autoscaling.minReplicas (5) is greater than maxReplicas (3)'],
    ['a core PDB that blocks every drain', ['--set', 'core.pdb.minAvailable=2'], 'core.pdb.minAvailable (2) must be below its replicas (2)'],
    ['a core-worker PDB that blocks every drain', ['--set', 'core.worker.pdb.enabled=true'], 'core.worker.pdb.minAvailable (1) must be below its replicas (1)'],
    ['min above max agents replicas', ['--set', 'agents.autoscaling.enabled=true', '--set', 'agents.autoscaling.minReplicas=5', '--set', 'agents.autoscaling.maxReplicas=3'], 'agents.autoscaling.minReplicas (5) is greater than maxReplicas (3)'],
    ['an agents PDB that blocks every drain', ['--set', 'agents.pdb.minAvailable=2'], 'agents.pdb.minAvailable (2) must be below its replicas (2)'],
    ['an agents-worker PDB that blocks every drain', ['--set', 'agents.worker.pdb.enabled=true'], 'agents.worker.pdb.minAvailable (1) must be below its replicas (1)'],
    ['a core-worker stale limit within two heartbeats', ['--set', 'core.worker.indexHeartbeatMs=30000'], 'core.worker.indexStaleMs (60000) must be more than twice core.worker.indexHeartbeatMs (30000)'],
    ['a PDB that blocks every drain', ['--set', 'gateway.pdb.minAvailable=2'], 'gateway.pdb.minAvailable (2) must be below its replicas (2)'],
    ['two MCP replicas (sessions live in one replica\'s memory)', ['--set', 'mcp.replicaCount=2'], 'mcp.replicaCount (2) must be 0 or 1'],
  ])('fails at template time on %s', async (_name, args, message) => {
    const r = await template('lore', ns, ['-f', MINIMAL, ...args]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(message);
  });

  it.each([
    ['a misspelt top-level key', ['--set', 'gatway.enabled=false'], 'gatway'],
    ['an unknown retention', ['--set', 'operator.dataRetention=Sometimes'], 'dataRetention'],
    ['a negative replica count', ['--set', 'gateway.replicaCount=-1'], 'replicaCount'],
    ['an invalid TLS mode', ['--set', 'operator.ingress.tls.mode=always'], 'mode'],
    ['a broker without a port', ['--set', 'externalKafka.brokers[0]=kafka'], 'brokers'],
    ['a core body limit core would refuse', ['--set', 'core.bodyLimitBytes=100'], 'bodyLimitBytes'],
    ['a graph time limit core would refuse', ['--set', 'core.graphTimeoutMs=50'], 'graphTimeoutMs'],
    ['an answer length core would refuse', ['--set', 'core.answerMaxTokens=64000'], 'answerMaxTokens'],
    ['a batch size core-worker would refuse', ['--set', 'core.worker.indexBatchDocuments=0'], 'indexBatchDocuments'],
    ['a scheduler interval core-worker would refuse', ['--set', 'core.worker.schedulerIntervalMs=10'], 'schedulerIntervalMs'],
    ['a Drive endpoint that is no http(s) URL', ['--set', 'core.worker.googleApiUrl=ftp://drive.example.com'], 'googleApiUrl'],
    ['a misspelt core.worker key', ['--set', 'core.worker.replicas=2'], 'replicas'],
    ['a rate the gateway would refuse', ['--set', 'gateway.rateLimit.perSecond=1000001'], '/gateway/rateLimit/perSecond'],
    ['a burst the gateway would refuse', ['--set', 'gateway.rateLimit.burst=10000001'], '/gateway/rateLimit/burst'],
    ['an agents body limit agents would refuse', ['--set', 'agents.bodyLimitBytes=100'], '/agents/bodyLimitBytes'],
    ['a SearXNG address that is no http(s) URL', ['--set', 'agents.searxngUrl=ftp://searxng.example.com'], '/agents/searxngUrl'],
    ['a misspelt agents.worker key', ['--set', 'agents.worker.replicas=2'], 'replicas'],
    ['workflows at once agents-worker would refuse', ['--set', 'agents.worker.maxRunning=0'], '/agents/worker/maxRunning'],
    ['a run budget agents-worker would refuse', ['--set', 'agents.worker.budgetWallMs=500'], '/agents/worker/budgetWallMs'],
    ['an IngressClass name the API server would refuse', ['--set', 'operator.ingress.className=Nginx Public'], '/operator/ingress/className'],
    ['an annotation key the API server would refuse', ['--set-json', 'operator.ingress.annotations={"not a key!":"x"}'], 'not a key!'],
    ['a one-label custom hostname domain', ['--set', 'operator.hostnameDomains[0]=com'], '/operator/hostnameDomains/0'],
  ])('refuses %s through values.schema.json', async (_name, args, field) => {
    const r = await template('lore', ns, ['-f', MINIMAL, ...args]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('values don\'t meet the specifications of the schema');
    expect(r.stderr).toContain(field);
  });

  it("takes the gateway's largest rate and burst (values.schema.json's maxima are the gateway's)", async () => {
    const r = await template('lore', ns, ['-f', MINIMAL, '--set', 'gateway.rateLimit.perSecond=1000000', '--set', 'gateway.rateLimit.burst=10000000']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
  });

  it('documents every value in values.yaml with a comment', () => {
    const lines = readFileSync(join(CHART, 'values.yaml'), 'utf8').split('\n');
    // Kubernetes objects passed through as they are (documented once, on their key).
    const passthrough = new Set(['resources', 'seccompProfile', 'capabilities']);
    const undocumented: string[] = [];
    const parents: Array<{ indent: number; key: string }> = [];
    lines.forEach((line, i) => {
      const m = /^(\s*)([A-Za-z][\w-]*):/.exec(line);
      if (!m) return;
      const indent = m[1]!.length;
      while (parents.length && parents[parents.length - 1]!.indent >= indent) parents.pop();
      const parent = parents[parents.length - 1]?.key;
      const isParent = (lines[i + 1] ?? '').startsWith(`${m[1]}  `) && !/:\s*\S/.test(line.slice(m[0].length - 1));
      const documented = /^\s*#/.test(lines[i - 1] ?? '') || isParent || (parent !== undefined && passthrough.has(parent));
      if (!documented) undocumented.push(`${i + 1}: ${line.trim()}`);
      parents.push({ indent, key: m[2]! });
    });
    expect(undocumented).toEqual([]);
  });

  describe('CRDs', () => {
    it('ships byte-for-byte copies of crds/ in the chart', () => {
      const source = readdirSync(join(REPO_ROOT, 'crds')).filter((f) => f.endsWith('.yaml')).sort();
      const copies = readdirSync(join(CHART, 'files', 'crds')).filter((f) => f.endsWith('.yaml')).sort();
      expect(copies).toEqual(source);
      for (const f of source) {
        expect(readFileSync(join(CHART, 'files', 'crds', f), 'utf8')).toBe(readFileSync(join(REPO_ROOT, 'crds', f), 'utf8'));
      }
    });

    it('renders them unchanged but for the keep policy and release labels, and only when crds.install', async () => {
      const rendered = (await renderObjects('lore', ns, ['-f', MINIMAL])).filter((o) => o.kind === 'CustomResourceDefinition');
      expect(rendered.map((c) => c.metadata.name).sort()).toEqual(['apikeys.lore.dev', 'memories.lore.dev']);
      for (const crd of rendered) {
        expect(crd.metadata.annotations['helm.sh/resource-policy']).toBe('keep');
        const file = crd.metadata.name === 'memories.lore.dev' ? 'lore.dev_memories.yaml' : 'lore.dev_apikeys.yaml';
        const source = await yamlToObject(join(REPO_ROOT, 'crds', file));
        expect(crd.spec).toEqual(source.spec);
        expect(crd.metadata.labels).toMatchObject(source.metadata.labels);
      }
      const without = await renderObjects('lore', ns, ['-f', MINIMAL, '--set', 'crds.install=false', '--api-versions', 'lore.dev/v1alpha1']);
      expect(without.some((o) => o.kind === 'CustomResourceDefinition')).toBe(false);
      // Without the CRDs in the cluster (or named with --api-versions) the operator would have nothing to watch.
      const missing = await template('lore', ns, ['-f', MINIMAL, '--set', 'crds.install=false']);
      expect(missing.code).not.toBe(0);
      expect(missing.stderr).toContain('needs the Memory and ApiKey CRDs already installed');
    });
  });

  it('installs, upgrades and uninstalls for real (hooks aside: no controller runs Jobs here)', async () => {
    const release = `it-${runId()}`;
    // With NetworkPolicies, and an ingress controller's namespace named (the gateway's public port is then admitted
    // from there and from mcp only).
    const policies = ['--set', 'networkPolicy.enabled=true', '--set-json', 'networkPolicy.ingressControllerNamespaceSelector={"matchLabels":{"kubernetes.io/metadata.name":"ingress-nginx"}}'];
    const install = await helm(['install', release, CHART, '-n', ns, '-f', MINIMAL, '--set', 'crds.install=false', ...policies, '--no-hooks', '--wait=false']);
    expect(install.stderr).toBe('');
    expect(install.code).toBe(0);
    const before = JSON.parse(await kubectlOk(['-n', ns, 'get', 'deployment', `${release}-lore-gateway`, '-o', 'json']));
    const upgrade = await helm(['upgrade', release, CHART, '-n', ns, '-f', MINIMAL, '--set', 'crds.install=false', ...policies, '--set', 'config.logLevel=debug', '--no-hooks']);
    expect(upgrade.code).toBe(0);
    const after = JSON.parse(await kubectlOk(['-n', ns, 'get', 'deployment', `${release}-lore-gateway`, '-o', 'json']));
    expect(after.spec.template.metadata.annotations['checksum/config']).not.toBe(before.spec.template.metadata.annotations['checksum/config']);
    const cm = JSON.parse(await kubectlOk(['-n', ns, 'get', 'configmap', `${release}-lore`, '-o', 'json']));
    expect(cm.data['log-level']).toBe('debug');
    // core is part of the default install: its Deployment and Service exist, and the gateway is pointed at it.
    const core = JSON.parse(await kubectlOk(['-n', ns, 'get', 'deployment', `${release}-lore-core`, '-o', 'json']));
    expect(core.spec.template.spec.containers[0].args).toEqual(['services/core/dist/main.js']);
    const coreSvc = JSON.parse(await kubectlOk(['-n', ns, 'get', 'service', `${release}-lore-core`, '-o', 'json']));
    expect(coreSvc.spec.ports.map((p: { port: number }) => p.port)).toEqual([8082]);
    // And its connector indexer, core-worker, with its metrics Service.
    const coreWorker = JSON.parse(await kubectlOk(['-n', ns, 'get', 'deployment', `${release}-lore-core-worker`, '-o', 'json']));
    expect(coreWorker.spec.template.spec.containers[0].args).toEqual(['services/core/dist/worker-main.js']);
    const coreWorkerSvc = JSON.parse(await kubectlOk(['-n', ns, 'get', 'service', `${release}-lore-core-worker`, '-o', 'json']));
    expect(coreWorkerSvc.spec.ports.map((p: { port: number }) => p.port)).toEqual([8088]);
    // agents is part of the default install too, with its worker and their Services; the gateway forwards to it.
    const agents = JSON.parse(await kubectlOk(['-n', ns, 'get', 'deployment', `${release}-lore-agents`, '-o', 'json']));
    expect(agents.spec.template.spec.containers[0].args).toEqual(['services/agents/dist/main.js']);
    const agentsSvc = JSON.parse(await kubectlOk(['-n', ns, 'get', 'service', `${release}-lore-agents`, '-o', 'json']));
    expect(agentsSvc.spec.ports.map((p: { port: number }) => p.port)).toEqual([8084]);
    const agentsWorker = JSON.parse(await kubectlOk(['-n', ns, 'get', 'deployment', `${release}-lore-agents-worker`, '-o', 'json']));
    expect(agentsWorker.spec.template.spec.containers[0].args).toEqual(['services/agents/dist/worker-main.js']);
    const agentsWorkerSvc = JSON.parse(await kubectlOk(['-n', ns, 'get', 'service', `${release}-lore-agents-worker`, '-o', 'json']));
    expect(agentsWorkerSvc.spec.ports.map((p: { port: number }) => p.port)).toEqual([8089]);
    expect(after.spec.template.spec.containers[0].env).toEqual(
      expect.arrayContaining([
        { name: 'GATEWAY_UPSTREAM_CORE', value: `http://${release}-lore-core.${ns}.svc:8082` },
        { name: 'GATEWAY_UPSTREAM_AGENTS', value: `http://${release}-lore-agents.${ns}.svc:8084` },
        { name: 'GATEWAY_UPSTREAM_MCP', value: `http://${release}-lore-mcp.${ns}.svc:8000` },
      ]),
    );
    await expectMcpInstalled(release);
    const uninstall = await helm(['uninstall', release, '-n', ns, '--no-hooks']);
    expect(uninstall.code).toBe(0);
    expect((await kubectl(['-n', ns, 'get', 'deployment', `${release}-lore-gateway`])).code).not.toBe(0);
    expect((await kubectl(['-n', ns, 'get', 'deployment', `${release}-lore-core`])).code).not.toBe(0);
    expect((await kubectl(['-n', ns, 'get', 'deployment', `${release}-lore-core-worker`])).code).not.toBe(0);
    expect((await kubectl(['-n', ns, 'get', 'deployment', `${release}-lore-agents`])).code).not.toBe(0);
    expect((await kubectl(['-n', ns, 'get', 'deployment', `${release}-lore-agents-worker`])).code).not.toBe(0);
    for (const kind of ['deployment', 'service', 'networkpolicy']) expect((await kubectl(['-n', ns, 'get', kind, `${release}-lore-mcp`])).code).not.toBe(0);
    // The CRDs (installed outside this release here) are untouched.
    expect((await kubectl(['get', 'crd', 'memories.lore.dev'])).code).toBe(0);
  });

  /**
   * The MCP tool server as the real install made it (docs/mcp.md, "Running it"): one replica of the shared image on
   * port 8000, probed on /health, calling the API back through the gateway's Service, its identity secret from the
   * release's Secret and nothing else secret; a ClusterIP Service the gateway forwards to; a NetworkPolicy admitting
   * the gateway only (and Prometheus), and the gateway's admitting mcp on its public port.
   */
  async function expectMcpInstalled(release: string): Promise<void> {
    const get = async (kind: string, name: string) => JSON.parse(await kubectlOk(['-n', ns, 'get', kind, name, '-o', 'json']));
    const deployment = await get('deployment', `${release}-lore-mcp`);
    expect(deployment.spec.replicas).toBe(1);
    const pod = deployment.spec.template;
    const c = pod.spec.containers[0];
    expect(c.args).toEqual(['services/mcp/dist/main.js']);
    expect(c.ports).toEqual([expect.objectContaining({ name: 'http', containerPort: 8000, protocol: 'TCP' })]);
    for (const probe of [c.livenessProbe, c.readinessProbe, c.startupProbe]) expect(probe.httpGet).toMatchObject({ path: '/health', port: 'http' });
    const env = Object.fromEntries((c.env as Array<{ name: string; value?: string; valueFrom?: any }>).map((e) => [e.name, e]));
    const gateway = `http://${release}-lore-gateway.${ns}.svc:80`;
    expect(env).toMatchObject({
      AGENT_CORE_URL: { value: gateway },
      MEMORY_URL: { value: gateway },
      MCP_HOST: { value: '0.0.0.0' },
      MCP_PORT: { value: '8000' },
      LORE_IDENTITY_SECRET: { valueFrom: { secretKeyRef: { name: `${release}-lore`, key: 'identity-secret' } } },
    });
    // The only secret it holds is the identity secret; no database, Redis or Kafka address.
    const fromSecrets = Object.values(env).filter((e: any) => e.valueFrom?.secretKeyRef).map((e: any) => e.name);
    expect(fromSecrets).toEqual(['LORE_IDENTITY_SECRET']);
    for (const name of ['LORE_DATABASE_URL', 'LORE_REDIS_URL', 'LORE_KAFKA_BROKERS']) expect(env).not.toHaveProperty(name);
    // Every variable it sets is one the tool server reads, and the values parse as the process would parse them.
    const own = Object.keys(env).filter((n) => /^(MCP_|LORE_MCP_|AGENT_CORE_URL$|MEMORY_URL$|LORE_IDENTITY_SECRET$)/.test(n));
    for (const name of own) expect(Object.keys(mcpConfigSchema.shape)).toContain(name);
    const plain = Object.fromEntries(own.filter((n) => env[n]!.value !== undefined).map((n) => [n, env[n]!.value as string]));
    expect(mcpConfigSchema.safeParse({ ...plain, LORE_IDENTITY_SECRET: 'x'.repeat(32) }).success).toBe(true);
    // The Secret it names holds that key.
    const secret = await get('secret', `${release}-lore`);
    expect(Object.keys(secret.data)).toContain('identity-secret');
    // Its Service: ClusterIP on 8000, selecting exactly its pods.
    const svc = await get('service', `${release}-lore-mcp`);
    expect(svc.spec.type).toBe('ClusterIP');
    expect(svc.spec.ports).toEqual([expect.objectContaining({ name: 'http', port: 8000, targetPort: 'http', protocol: 'TCP' })]);
    expect(pod.metadata.labels).toMatchObject(svc.spec.selector);
    // Its NetworkPolicy: its port from the gateway's pods (and Prometheus, on the same port), nothing else.
    const gatewayPods = (await get('deployment', `${release}-lore-gateway`)).spec.template.metadata.labels;
    const policy = await get('networkpolicy', `${release}-lore-mcp`);
    expect(pod.metadata.labels).toMatchObject(policy.spec.podSelector.matchLabels);
    expect(policy.spec.policyTypes).toEqual(['Ingress']);
    const fromPods = policy.spec.ingress.filter((r: any) => r.from.some((f: any) => f.podSelector));
    expect(fromPods).toHaveLength(1);
    expect(fromPods[0].ports).toEqual([{ port: 'http', protocol: 'TCP' }]);
    expect(gatewayPods).toMatchObject(fromPods[0].from[0].podSelector.matchLabels);
    expect(policy.spec.ingress.filter((r: any) => r !== fromPods[0])).toEqual([{ ports: [{ port: 'http', protocol: 'TCP' }], from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns } } }] }]);
    // And the gateway's admits mcp's pods on its public port: the tools' calls back.
    const gatewayPolicy = await get('networkpolicy', `${release}-lore-gateway`);
    const fromMcp = gatewayPolicy.spec.ingress.filter((r: any) => r.from?.some((f: any) => f.podSelector?.matchLabels?.['app.kubernetes.io/component'] === 'mcp'));
    expect(fromMcp).toHaveLength(1);
    expect(fromMcp[0].ports).toEqual([{ port: 'http', protocol: 'TCP' }]);
    expect(pod.metadata.labels).toMatchObject(fromMcp[0].from[0].podSelector.matchLabels);
  }
});
