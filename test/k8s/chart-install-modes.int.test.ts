import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT, createNamespace, installCrds, run, runId, waitCrdsEstablished } from '../../operator/test/support/kube';
import { CHART, MINIMAL, helm, jsonStream, kubectl, kubectlOk, template } from './support';

jest.setTimeout(300_000);

/** The APIs of the two operators, as `helm template` must be told them (a cluster tells `helm install` itself). */
const OPERATOR_APIS = ['postgresql.cnpg.io/v1/Cluster', 'kafka.strimzi.io/v1beta2/Kafka', 'kafka.strimzi.io/v1beta2/KafkaNodePool'];
const WITH_OPERATORS = OPERATOR_APIS.flatMap((api) => ['--api-versions', api]);
/** What the processes accept (LORE_ENCRYPTION_KEYS, the secrets' minimum lengths), as validate.yaml checks given values. */
const KEY_RING = /^k1:[A-Za-z0-9+/]{43}=$/;

const decode = (data: Record<string, string>): Record<string, string> =>
  Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]));

/**
 * The chart's install modes (docs/chart.md, "Where PostgreSQL, Redis and Kafka come from"): with no values it creates
 * a CloudNativePG Cluster, a Strimzi Kafka and a Redis, generates its secrets and keeps them; each mode renders into
 * objects the real kube-apiserver accepts with the operators' real CRDs applied (test/k8s/fixtures/operator-crds.sh);
 * install, upgrade and uninstall run against that API server (no nodes and no controllers run there: pods are never
 * scheduled and Jobs never run, so hooks are rendered and checked but `--no-hooks` installs).
 */
describe('charts/lore install modes', () => {
  let ns: string;

  beforeAll(async () => {
    const crds = await run('bash', [join(REPO_ROOT, 'test', 'k8s', 'fixtures', 'operator-crds.sh')], undefined, 280_000);
    if (crds.code !== 0) throw new Error(`operator-crds.sh failed: ${crds.stderr}`);
    await installCrds();
    await kubectlOk(['apply', '--server-side', '--force-conflicts', '-f', crds.stdout.trim()]);
    await waitCrdsEstablished(['clusters.postgresql.cnpg.io', 'kafkas.kafka.strimzi.io', 'kafkanodepools.kafka.strimzi.io']);
    ns = await createNamespace(runId(), { prefix: 'modes' });
    // PodSecurity "restricted" warns about any pod template below it (the Redis StatefulSet, the test Pod too).
    await kubectlOk(['label', 'namespace', ns, 'pod-security.kubernetes.io/enforce=restricted', 'pod-security.kubernetes.io/warn=restricted']);
  });

  /**
   * Server-side dry run of rendered objects: the API server's own validation (CRD schemas, PodSecurity "restricted"),
   * which must pass without a warning. Returns the objects as the API server would store them.
   */
  async function dryRun(yaml: string): Promise<any[]> {
    const applied = await kubectl(['apply', '--server-side', '--force-conflicts', '--dry-run=server', '-n', ns, '-o', 'json', '-f', '-'], yaml);
    expect(applied.stderr).toBe('');
    expect(applied.code).toBe(0);
    return jsonStream(applied.stdout);
  }

  it('says what is missing when the operators do not run, and what to set instead', async () => {
    const none = await template('lore', ns, []);
    expect(none.code).not.toBe(0);
    expect(none.stderr).toContain('postgresql.mode is cloudnativepg (none of externalDatabase.url, externalRedis.url, externalKafka.brokers and secrets.existingSecret is set, so mode auto chose the in-cluster services) but the cluster does not serve postgresql.cnpg.io/v1 Cluster: install the CloudNativePG operator first');
    expect(none.stderr).toContain('postgresql.mode=external with externalDatabase.url and externalDatabase.ownerUrl');
    const pgOnly = await template('lore', ns, ['--api-versions', OPERATOR_APIS[0]!]);
    expect(pgOnly.code).not.toBe(0);
    expect(pgOnly.stderr).toContain('kafka.mode is strimzi (none of externalDatabase.url');
    expect(pgOnly.stderr).toContain('kafka.mode=external with externalKafka.brokers');
    // An explicit mode says so.
    const explicit = await template('lore', ns, ['-f', MINIMAL, '--set', 'postgresql.mode=cloudnativepg', '--set', 'externalDatabase.url=', '--set', 'externalDatabase.ownerUrl=']);
    expect(explicit.stderr).toContain('postgresql.mode is cloudnativepg (mode cloudnativepg) but the cluster does not serve');
    // Values of the other mode are refused rather than ignored.
    const mixed = await template('lore', ns, [...WITH_OPERATORS, '-f', MINIMAL, '--set', 'kafka.mode=strimzi']);
    expect(mixed.code).not.toBe(0);
    expect(mixed.stderr).toContain('kafka.mode is strimzi: leave externalKafka.brokers empty');
    const badMode = await template('lore', ns, ['--set', 'redis.mode=sentinel']);
    expect(badMode.stderr).toContain("values don't meet the specifications of the schema");
  });

  it('with no values creates the three services in the cluster, wires every process to them and generates its secrets', async () => {
    const r = await template('lore', ns, WITH_OPERATORS);
    expect(r.stderr).toBe('');
    const objs = await dryRun(r.yaml);
    const find = (kind: string, name: string) => objs.find((o) => o.kind === kind && o.metadata.name === name);

    // Every deployment is on.
    const deployments = objs.filter((o) => o.kind === 'Deployment').map((d) => d.metadata.labels['app.kubernetes.io/component']).sort();
    expect(deployments).toEqual(['agents', 'agents-worker', 'core', 'core-worker', 'gateway', 'graph', 'graph-worker', 'mcp', 'operator', 'webhooks']);

    // PostgreSQL: a CloudNativePG Cluster; the schema owner is its initdb owner, the application role a managed role.
    const cluster = find('Cluster', 'lore-postgresql');
    expect(cluster.apiVersion).toBe('postgresql.cnpg.io/v1');
    expect(cluster.metadata.annotations['helm.sh/resource-policy']).toBe('keep');
    expect(cluster.spec.bootstrap.initdb).toMatchObject({ database: 'lore', owner: 'lore_owner', postInitApplicationSQL: ['CREATE EXTENSION IF NOT EXISTS vector SCHEMA public'] });
    expect(cluster.spec.managed.roles).toEqual([
      expect.objectContaining({ name: 'lore_app', login: true, superuser: false, bypassrls: false, passwordSecret: { name: 'lore-postgresql-lore-app' } }),
    ]);
    const role = decode(find('Secret', 'lore-postgresql-lore-app').data);
    expect(role.username).toBe('lore_app');
    expect(role.password).toMatch(/^[A-Za-z0-9]{40}$/);
    expect(role.uri).toBe(`postgresql://lore_app:${role.password}@lore-postgresql-rw.${ns}.svc:5432/lore`);

    // Kafka: Strimzi in KRaft mode, one node pool of combined controllers and brokers; Lore reads its bootstrap Service.
    const kafka = find('Kafka', 'lore-kafka');
    expect(kafka.metadata.annotations).toMatchObject({ 'strimzi.io/kraft': 'enabled', 'strimzi.io/node-pools': 'enabled', 'helm.sh/resource-policy': 'keep' });
    expect(kafka.spec.kafka.listeners).toEqual([{ name: 'plain', port: 9092, type: 'internal', tls: false }]);
    expect(kafka.spec.kafka.config).toMatchObject({ 'default.replication.factor': 1, 'min.insync.replicas': 1 });
    const pool = find('KafkaNodePool', 'lore-kafka-nodes');
    expect(pool.metadata.labels['strimzi.io/cluster']).toBe('lore-kafka');
    expect(pool.spec).toMatchObject({ replicas: 1, roles: ['controller', 'broker'] });
    expect(find('ConfigMap', 'lore').data['kafka-brokers']).toBe(`lore-kafka-kafka-bootstrap.${ns}.svc:9092`);

    // Redis: a StatefulSet with a generated password, never on a command line.
    const redis = find('StatefulSet', 'lore-redis');
    const redisSecret = decode(find('Secret', 'lore-redis').data);
    expect(redisSecret.url).toBe(`redis://:${redisSecret.password}@lore-redis.${ns}.svc:6379/0`);
    expect(JSON.stringify(redis.spec.template.spec.containers[0].args)).not.toContain(redisSecret.password);
    expect(redis.spec.template.spec.containers[0].env).toEqual([{ name: 'REDISCLI_AUTH', valueFrom: { secretKeyRef: { name: 'lore-redis', key: 'password' } } }]);

    // Each process reads its connections from those Secrets, and only what it reads.
    const env = (component: string) =>
      Object.fromEntries((objs.find((o) => o.kind === 'Deployment' && o.metadata.labels['app.kubernetes.io/component'] === component).spec.template.spec.containers[0].env as any[]).map((e) => [e.name, e]));
    for (const component of ['gateway', 'graph', 'core', 'agents', 'webhooks']) {
      expect(env(component).LORE_DATABASE_URL.valueFrom.secretKeyRef).toEqual({ name: 'lore-postgresql-lore-app', key: 'uri' });
    }
    for (const component of ['gateway', 'agents']) expect(env(component).LORE_REDIS_URL.valueFrom.secretKeyRef).toEqual({ name: 'lore-redis', key: 'url' });
    expect(env('graph')).not.toHaveProperty('LORE_REDIS_URL');
    expect(env('graph').LORE_KAFKA_BROKERS.valueFrom.configMapKeyRef).toEqual({ name: 'lore', key: 'kafka-brokers' });
    expect(env('gateway').GATEWAY_ADMIN_TOKEN.valueFrom.secretKeyRef).toEqual({ name: 'lore', key: 'admin-token' });

    // The release's Secret: generated secrets the processes accept, no URLs (they live with their services).
    const main = find('Secret', 'lore');
    expect(main.metadata.annotations['helm.sh/resource-policy']).toBe('keep');
    const secrets = decode(main.data);
    expect(Object.keys(secrets).sort()).toEqual(['admin-token', 'encryption-keys', 'identity-secret', 'session-secret']);
    expect(secrets['encryption-keys']).toMatch(KEY_RING);
    expect(Buffer.from(secrets['encryption-keys']!.slice(3), 'base64')).toHaveLength(32);
    expect(secrets['identity-secret']!.length).toBeGreaterThanOrEqual(32);
    expect(secrets['session-secret']!.length).toBeGreaterThanOrEqual(32);
    expect(secrets['admin-token']!.length).toBeGreaterThanOrEqual(24);
    expect(new Set(Object.values(secrets)).size).toBe(4);

    // Migrations run after the Cluster exists on install, before anything changes on upgrade, waiting for both roles.
    const job = find('Job', 'lore-migrations');
    expect(job.metadata.annotations['helm.sh/hook']).toBe('post-install,pre-upgrade,pre-rollback');
    const jobEnv = Object.fromEntries((job.spec.template.spec.containers[0].env as any[]).map((e) => [e.name, e.valueFrom?.secretKeyRef]));
    expect(jobEnv).toMatchObject({ LORE_DATABASE_URL: { name: 'lore-postgresql-lore-app', key: 'uri' }, LORE_DATABASE_OWNER_URL: { name: 'lore-postgresql-app', key: 'uri' } });
    expect(job.spec.template.spec.initContainers.map((c: any) => c.name)).toEqual(['wait-for-database']);
    expect(objs.some((o) => o.kind === 'Secret' && o.metadata.name === 'lore-migrations')).toBe(false);
  });

  it.each([
    ['external services (the minimal values)', ['-f', MINIMAL], { cluster: false, kafka: false, redis: false, hook: 'pre-install,pre-upgrade,pre-rollback' }],
    [
      'external PostgreSQL, Kafka and Redis in the cluster',
      ['-f', MINIMAL, '--set', 'kafka.mode=strimzi', '--set-json', 'externalKafka.brokers=[]', '--set', 'redis.mode=inCluster', '--set', 'externalRedis.url='],
      { cluster: false, kafka: true, redis: true, hook: 'pre-install,pre-upgrade,pre-rollback' },
    ],
    [
      'CloudNativePG with an existing Secret for the rest',
      ['--set', 'secrets.existingSecret=lore-credentials', '--set', 'postgresql.mode=cloudnativepg', '--set', 'kafka.mode=external', '--set', 'externalKafka.brokers[0]=kafka:9092', '--set', 'redis.mode=external'],
      { cluster: true, kafka: false, redis: false, hook: 'post-install,pre-upgrade,pre-rollback' },
    ],
    [
      'three Kafka nodes and two PostgreSQL instances, nothing kept',
      ['--set', 'kafka.strimzi.replicas=3', '--set', 'postgresql.cloudnativepg.instances=2', '--set', 'postgresql.cloudnativepg.keep=false', '--set', 'kafka.strimzi.keep=false', '--set', 'secrets.keep=false', '--set', 'postgresql.cloudnativepg.pgvector=false'],
      { cluster: true, kafka: true, redis: true, hook: 'post-install,pre-upgrade,pre-rollback' },
    ],
  ])('renders %s into objects the API server accepts', async (name, args, want) => {
    const r = await template('lore', ns, [...WITH_OPERATORS, ...args]);
    expect(r.stderr).toBe('');
    const objs = await dryRun(r.yaml);
    const has = (kind: string) => objs.some((o) => o.kind === kind);
    expect({ cluster: has('Cluster'), kafka: has('Kafka') && has('KafkaNodePool'), redis: has('StatefulSet') }).toEqual({ cluster: want.cluster, kafka: want.kafka, redis: want.redis });
    expect(objs.find((o) => o.kind === 'Job').metadata.annotations['helm.sh/hook']).toBe(want.hook);
    // The Job's script and Secret are hooks of the same events: a rollback recreates them from the release it rolls
    // back to, whose migrate.js refuses a newer schema and so stops the rollback (docs/chart.md, "Upgrades and rollbacks").
    const migrations = objs.filter((o) => o.metadata.labels?.['app.kubernetes.io/component'] === 'migrations');
    expect(migrations.map((o) => o.kind).sort()).toEqual(want.cluster ? ['ConfigMap', 'Job'] : ['ConfigMap', 'Job', 'Secret']);
    for (const o of migrations) expect(o.metadata.annotations['helm.sh/hook']).toBe(want.hook);
    const env = (component: string) =>
      Object.fromEntries((objs.find((o) => o.kind === 'Deployment' && o.metadata.labels['app.kubernetes.io/component'] === component).spec.template.spec.containers[0].env as any[]).map((e) => [e.name, e.valueFrom?.secretKeyRef]));
    const secret = args.includes('secrets.existingSecret=lore-credentials') ? 'lore-credentials' : 'lore';
    expect(env('gateway').LORE_DATABASE_URL).toEqual(want.cluster ? { name: 'lore-postgresql-lore-app', key: 'uri' } : { name: secret, key: 'database-url' });
    expect(env('gateway').LORE_REDIS_URL).toEqual(want.redis ? { name: 'lore-redis', key: 'url' } : { name: secret, key: 'redis-url' });
    const brokers = objs.find((o) => o.kind === 'ConfigMap' && o.metadata.name === 'lore').data['kafka-brokers'];
    expect(brokers.endsWith('-kafka-bootstrap.' + ns + '.svc:9092')).toBe(want.kafka);
    if (name.startsWith('three')) {
      expect(objs.find((o) => o.kind === 'Kafka').spec.kafka.config).toMatchObject({ 'default.replication.factor': 3, 'min.insync.replicas': 2, 'offsets.topic.replication.factor': 3 });
      for (const o of objs.filter((x) => ['Cluster', 'Kafka', 'KafkaNodePool', 'Secret'].includes(x.kind))) {
        expect(o.metadata.annotations?.['helm.sh/resource-policy']).toBeUndefined();
      }
      expect(objs.find((o) => o.kind === 'Cluster').spec.bootstrap.initdb.postInitApplicationSQL).toBeUndefined();
    }
  });

  it('installs with no values, upgrades with changed values keeping every generated secret, and uninstalls leaving only what keep says', async () => {
    const release = `m-${runId()}`;
    const get = async (kind: string, name: string) => JSON.parse(await kubectlOk(['-n', ns, 'get', kind, name, '-o', 'json']));
    // No values but crds.install=false: this API server already has the Memory and ApiKey CRDs, installed outside any
    // release by the other suites, and Helm refuses to adopt objects it did not make. --no-hooks: no Job runs here.
    const install = await helm(['install', release, CHART, '-n', ns, '--set', 'crds.install=false', '--no-hooks']);
    expect(install.stderr).toBe('');
    expect(install.code).toBe(0);
    const generated = async () => ({
      main: decode((await get('secret', `${release}-lore`)).data),
      role: decode((await get('secret', `${release}-lore-postgresql-lore-app`)).data),
      redis: decode((await get('secret', `${release}-lore-redis`)).data),
    });
    const first = await generated();
    expect(first.main['encryption-keys']).toMatch(KEY_RING);
    expect((await get('kafka', `${release}-lore-kafka`)).spec.kafka.config['min.insync.replicas']).toBe(1);
    expect((await get('cluster', `${release}-lore-postgresql`)).spec.instances).toBe(1);

    // The upgrade's server-side dry run looks the Secrets up and keeps their values, and the API server accepts it.
    const upgradeArgs = ['upgrade', release, CHART, '-n', ns, '--set', 'crds.install=false', '--set', 'config.logLevel=debug', '--set', 'kafka.strimzi.replicas=3', '--set', 'postgresql.cloudnativepg.instances=2'];
    const dry = await helm([...upgradeArgs, '--dry-run=server']);
    expect(dry.stderr).toBe('');
    expect(dry.code).toBe(0);
    const manifest = dry.stdout.slice(dry.stdout.indexOf('MANIFEST:') + 'MANIFEST:'.length, dry.stdout.indexOf('NOTES:'));
    const planned = await dryRun(manifest);
    expect(decode(planned.find((o) => o.kind === 'Secret' && o.metadata.name === `${release}-lore`).data)).toEqual(first.main);
    expect(planned.find((o) => o.kind === 'KafkaNodePool').spec.replicas).toBe(3);
    // A dry run changes nothing.
    expect((await get('configmap', `${release}-lore`)).data['log-level']).toBe('info');

    const before = (await get('deployment', `${release}-lore-gateway`)).spec.template.metadata.annotations;
    const upgrade = await helm([...upgradeArgs, '--no-hooks']);
    expect(upgrade.stderr).toBe('');
    expect(upgrade.code).toBe(0);
    expect(await generated()).toEqual(first);
    expect((await get('configmap', `${release}-lore`)).data['log-level']).toBe('debug');
    expect((await get('kafkanodepool', `${release}-lore-kafka-nodes`)).spec.replicas).toBe(3);
    expect((await get('kafka', `${release}-lore-kafka`)).spec.kafka.config).toMatchObject({ 'default.replication.factor': 3, 'min.insync.replicas': 2 });
    expect((await get('cluster', `${release}-lore-postgresql`)).spec.instances).toBe(2);
    // Unchanged secrets do not roll the pods; the changed configuration does.
    const after = (await get('deployment', `${release}-lore-gateway`)).spec.template.metadata.annotations;
    expect(after['checksum/secret']).toBe(before['checksum/secret']);
    expect(after['checksum/redis']).toBe(before['checksum/redis']);
    expect(after['checksum/config']).not.toBe(before['checksum/config']);

    // The helm test hook is part of the release (the test Pod itself is checked below).
    const hooks = (await helm(['get', 'hooks', release, '-n', ns])).stdout;
    expect(hooks).toContain(`name: ${release}-lore-test-readiness`);
    expect(hooks).toContain('helm.sh/hook: test\n');

    // Uninstall: what the release made is gone but the objects annotated keep, which are exactly these.
    const kinds = 'deployments,statefulsets,services,configmaps,secrets,jobs,poddisruptionbudgets,serviceaccounts,roles,rolebindings,networkpolicies,clusters.postgresql.cnpg.io,kafkas.kafka.strimzi.io,kafkanodepools.kafka.strimzi.io';
    const ofRelease = async () => JSON.parse(await kubectlOk(['-n', ns, 'get', kinds, '-l', `app.kubernetes.io/instance=${release}`, '-o', 'json'])).items as any[];
    const made = await ofRelease();
    expect(made.length).toBeGreaterThan(30);
    const kept = made.filter((o) => o.metadata.annotations?.['helm.sh/resource-policy'] === 'keep').map((o) => `${o.kind}/${o.metadata.name}`).sort();
    expect(kept).toEqual([`Cluster/${release}-lore-postgresql`, `Kafka/${release}-lore-kafka`, `KafkaNodePool/${release}-lore-kafka-nodes`, `Secret/${release}-lore`]);
    const uninstall = await helm(['uninstall', release, '-n', ns, '--no-hooks']);
    expect(uninstall.code).toBe(0);
    expect(uninstall.stdout).toContain('These resources were kept due to the resource policy');
    expect((await ofRelease()).map((o) => `${o.kind}/${o.metadata.name}`).sort()).toEqual(kept);
    const clusterWide = JSON.parse(await kubectlOk(['get', 'clusterroles,clusterrolebindings', '-l', `app.kubernetes.io/instance=${release}`, '-o', 'json'])).items;
    expect(clusterWide).toEqual([]);

    // Installing the same release again adopts the kept objects, and the key ring with them.
    const again = await helm(['install', release, CHART, '-n', ns, '--set', 'crds.install=false', '--no-hooks']);
    expect(again.stderr).toBe('');
    expect(again.code).toBe(0);
    expect((await generated()).main).toEqual(first.main);
    await helm(['uninstall', release, '-n', ns, '--no-hooks']);
    await kubectl(['-n', ns, 'delete', 'secret,clusters.postgresql.cnpg.io,kafkas.kafka.strimzi.io,kafkanodepools.kafka.strimzi.io', '-l', `app.kubernetes.io/instance=${release}`]);
  });

  it("runs the migrations Job's wait for the database as written: done once both roles log in, waiting (and saying why, never a password) until then", async () => {
    const r = await template('lore', ns, [...WITH_OPERATORS, '--show-only', 'templates/migrations.yaml']);
    const configMap = (await dryRun(r.yaml)).find((o) => o.kind === 'ConfigMap');
    const dir = mkdtempSync(join(tmpdir(), 'lore-wait-'));
    const script = join(dir, 'wait-for-database.js');
    writeFileSync(script, configMap.data['wait-for-database.js']);
    const owner = process.env.LORE_TEST_PG_URL;
    const app = process.env.LORE_TEST_PG_APP_URL;
    if (!owner || !app) throw new Error('LORE_TEST_PG_URL and LORE_TEST_PG_APP_URL are required (bash test/infra/up.sh pg)');
    const start = (ownerUrl: string) => {
      const child = spawn(process.execPath, [script], { env: { ...process.env, LORE_APP_DIR: REPO_ROOT, LORE_DATABASE_URL: app, LORE_DATABASE_OWNER_URL: ownerUrl }, stdio: ['ignore', 'pipe', 'pipe'] });
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
      return { child, exited, stderr: () => stderr };
    };
    try {
      const ready = start(owner);
      expect(await ready.exited).toBe(0);
      expect(ready.stderr()).toBe('');
      // A password the server refuses, as while CloudNativePG has not yet created the role.
      const url = new URL(owner);
      url.password = 'not-the-password-0123';
      const waiting = start(url.toString());
      const deadline = Date.now() + 30_000;
      while (!waiting.stderr().includes('waiting for the database:') && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
      expect(waiting.child.exitCode).toBeNull();
      expect(waiting.stderr()).toContain('waiting for the database: password authentication failed');
      expect(waiting.stderr()).not.toContain('not-the-password-0123');
      waiting.child.kill('SIGTERM');
      await waiting.exited;
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  describe('the helm test Pod', () => {
    let servers: Server[] = [];
    afterEach(async () => {
      await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
      servers = [];
    });
    const serve = async (status: number): Promise<string> => {
      const server = createServer((_req, res) => res.writeHead(status).end());
      servers.push(server);
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      return `http://127.0.0.1:${(server.address() as AddressInfo).port}/readyz`;
    };

    it('renders a restricted Pod with no secret, and its script passes only when every component answers ready', async () => {
      const r = await template('lore', ns, [...WITH_OPERATORS, '--show-only', 'templates/tests/readiness.yaml']);
      const [pod] = await dryRun(r.yaml);
      expect(pod.kind).toBe('Pod');
      expect(pod.metadata.annotations).toEqual({ 'helm.sh/hook': 'test', 'helm.sh/hook-delete-policy': 'before-hook-creation,hook-succeeded' });
      expect(pod.spec.automountServiceAccountToken).toBe(false);
      expect(pod.spec.restartPolicy).toBe('Never');
      expect(JSON.stringify(pod)).not.toContain('secretKeyRef');
      // Every component, by its Service, on the port and path its probes use.
      const targets = JSON.parse(pod.spec.containers[0].env.find((e: any) => e.name === 'LORE_TEST_TARGETS').value) as Array<{ name: string; url: string }>;
      expect(targets.map((t) => t.name)).toEqual(['gateway', 'webhooks', 'graph', 'graph-worker', 'core', 'core-worker', 'agents', 'agents-worker', 'mcp', 'operator', 'gateway (public)']);
      expect(targets.find((t) => t.name === 'graph')!.url).toBe(`http://lore-graph.${ns}.svc:8083/readyz`);
      expect(targets.find((t) => t.name === 'mcp')!.url).toBe(`http://lore-mcp.${ns}.svc:8000/health`);
      const fewer = await template('lore', ns, [...WITH_OPERATORS, '--set', 'core.enabled=false', '--set', 'mcp.enabled=false', '--show-only', 'templates/tests/readiness.yaml']);
      expect(fewer.yaml).not.toContain('lore-core');
      expect(fewer.yaml).not.toContain('lore-mcp');
      const off = await template('lore', ns, [...WITH_OPERATORS, '--set', 'tests.enabled=false', '--show-only', 'templates/tests/readiness.yaml']);
      expect(off.code).not.toBe(0);

      // The Pod's own script, run with node against loopback servers in place of the Services.
      const script = pod.spec.containers[0].args[1] as string;
      const runScript = async (targets: unknown) => {
        try {
          const { stdout } = await promisify(execFile)(process.execPath, ['-e', script], {
            env: { ...process.env, LORE_TEST_TARGETS: JSON.stringify(targets), LORE_TEST_ATTEMPTS: '2', LORE_TEST_PAUSE_MS: '50' },
          });
          return { code: 0, stdout };
        } catch (err: any) {
          return { code: err.code as number, stdout: err.stdout as string };
        }
      };
      const ready = await serve(200);
      const starting = await serve(503);
      const notFound = await serve(404);
      const pass = await runScript([
        { name: 'graph', url: ready, expect: 'ready' },
        { name: 'gateway (public)', url: notFound, expect: 'answer' },
      ]);
      expect(pass).toEqual({ code: 0, stdout: 'ok   graph: 200\nok   gateway (public): 404\n' });
      const closed = await serve(200);
      await new Promise((resolve) => servers.pop()!.close(resolve));
      const fail = await runScript([
        { name: 'graph', url: ready, expect: 'ready' },
        { name: 'core', url: starting, expect: 'ready' },
        { name: 'mcp', url: closed, expect: 'ready' },
      ]);
      expect(fail.code).toBe(1);
      expect(fail.stdout).toBe(`ok   graph: 200\nFAIL core: ${starting} answered 503\nFAIL mcp: ${closed}: ECONNREFUSED\n`);
    });
  });
});
