import { copyFileSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { embeddedEnvSchema, startEmbedded, type Embedded } from '@lore/embedded';
import { KafkaBus, createLogger, createMetricsRegistry } from '@lore/runtime';
import { createOperatorMetrics } from '../../operator/src/runtime/metrics';
import { createNamespace, runId, waitCrdsEstablished } from '../../operator/test/support/kube';
import { freePort } from '../e2e/processes';
import { requireEnv } from '../support/infra';
import { alertExprs, alertNames, concreteQuery, crdDir, exposedNames, foreignSelectors, metricNames, promtoolBin, rulesFileOf, runCommand } from './observability';
import { CHART, MINIMAL, jsonStream, kubectl, kubectlOk, template } from './support';

jest.setTimeout(180_000);

const RELEASE = 'lore';
const NAMESPACE = 'lore-ns';
const RULE_TESTS = join(__dirname, 'observability-rules.test.yaml');
const DASHBOARDS = join(CHART, 'dashboards');
const ALERTS = ['LoreHighErrorRatio', 'LoreGateway5xx', 'LoreConsumerLagHigh', 'LoreOutboxBacklog', 'LoreDeadLetters', 'LoreReconcileFailing'];

/** The chart's PrometheusRule rendered for release `lore` in `lore-ns` (what the rule tests' series are labelled for). */
async function renderedRule(extra: string[] = []): Promise<string> {
  const r = await template(RELEASE, NAMESPACE, ['-f', MINIMAL, '--set', 'prometheusRule.enabled=true', '--show-only', 'templates/prometheusrule.yaml', ...extra]);
  if (r.code !== 0) throw new Error(`helm template failed: ${r.stderr}`);
  return r.yaml;
}

interface Dashboard {
  file: string;
  json: any;
}

function dashboards(): Dashboard[] {
  return readdirSync(DASHBOARDS)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((file) => ({ file, json: JSON.parse(readFileSync(join(DASHBOARDS, file), 'utf8')) }));
}

/** Every panel, those inside collapsed rows too. */
function panelsOf(d: any): any[] {
  return (d.panels as any[]).flatMap((p) => [p, ...((p.panels as any[] | undefined) ?? [])]);
}

/** Every PromQL query of a dashboard: its panels' targets and its query variables (label_values(metric, label): the metric). */
function queriesOf(d: any): Array<{ where: string; expr: string }> {
  const out: Array<{ where: string; expr: string }> = [];
  for (const p of panelsOf(d)) for (const t of p.targets ?? []) out.push({ where: `panel ${p.id} "${p.title}" ${t.refId}`, expr: t.expr });
  for (const v of d.templating?.list ?? []) {
    if (v.type !== 'query') continue;
    const q: string = typeof v.query === 'string' ? v.query : v.query.query;
    const m = /^label_values\((.+),\s*[a-zA-Z_][a-zA-Z0-9_]*\)$/.exec(q);
    out.push({ where: `variable ${v.name}`, expr: m ? m[1]! : q });
  }
  return out;
}

/** A rules file with one recording rule per expression: `promtool check rules` then parses every one of them. */
function recordingRulesOf(exprs: string[]): string {
  const rules = exprs.map((e, i) => ({ record: `lore:dashboard_query:${i}`, expr: e }));
  // JSON is YAML: promtool reads it as its rules file.
  return JSON.stringify({ groups: [{ name: 'lore-dashboard-queries', rules }] }, null, 2);
}

describe('observability pack (charts/lore: PrometheusRule, promtool rule tests, Grafana dashboards)', () => {
  let promtool: string;
  let work: string;

  beforeAll(async () => {
    promtool = await promtoolBin();
    work = mkdtempSync(join(tmpdir(), 'lore-observability-'));
  }, 45 * 60_000);

  afterAll(() => {
    if (work) rmSync(work, { recursive: true, force: true });
  });

  describe('PrometheusRule', () => {
    it('is rendered only when prometheusRule.enabled, with the six paging alerts', async () => {
      const off = await template(RELEASE, NAMESPACE, ['-f', MINIMAL]);
      expect(off.code).toBe(0);
      expect(off.yaml).not.toContain('kind: PrometheusRule');
      const on = await renderedRule();
      expect(on.match(/^kind: PrometheusRule$/gm)).toHaveLength(1);
      expect(alertNames(rulesFileOf(on))).toEqual(ALERTS);
    });

    it('passes promtool check rules', async () => {
      const file = join(work, 'check.yaml');
      writeFileSync(file, rulesFileOf(await renderedRule()));
      const r = await runCommand(promtool, ['check', 'rules', file]);
      expect(`${r.stdout}${r.stderr}`).toContain(`SUCCESS: ${ALERTS.length} rules found`);
      expect(r.code).toBe(0);
    });

    it('passes promtool test rules: each alert fires on series that should page and stays quiet on series that should not', async () => {
      // The rule tests cover every alert, each with a firing and a quiet evaluation.
      const tests = readFileSync(RULE_TESTS, 'utf8');
      for (const alert of ALERTS) {
        expect(tests.match(new RegExp(`alertname: ${alert}\\n\\s+exp_alerts: \\[\\]`, 'g'))?.length ?? 0).toBeGreaterThanOrEqual(1);
        expect(tests.match(new RegExp(`alertname: ${alert}\\n\\s+exp_alerts:\\n`, 'g'))?.length ?? 0).toBeGreaterThanOrEqual(1);
      }
      const dir = mkdtempSync(join(work, 'rules-'));
      writeFileSync(join(dir, 'rules.yaml'), rulesFileOf(await renderedRule()));
      copyFileSync(RULE_TESTS, join(dir, 'tests.yaml'));
      const r = await runCommand(promtool, ['test', 'rules', 'tests.yaml'], { cwd: dir });
      expect(`${r.stdout}${r.stderr}`).toContain('SUCCESS');
      expect(`${r.stdout}${r.stderr}`).not.toContain('FAILED');
      expect(r.code).toBe(0);
    });

    it('takes its thresholds from the values: the same rule tests fail on rules rendered with other thresholds', async () => {
      const dir = mkdtempSync(join(work, 'rules-'));
      const rules = rulesFileOf(await renderedRule(['--set', 'prometheusRule.alerts.consumerLag.threshold=10000', '--set', 'prometheusRule.alerts.outboxBacklog.for=30m']));
      expect(rules).toContain('> 10000');
      writeFileSync(join(dir, 'rules.yaml'), rules);
      copyFileSync(RULE_TESTS, join(dir, 'tests.yaml'));
      const r = await runCommand(promtool, ['test', 'rules', 'tests.yaml'], { cwd: dir });
      const out = `${r.stdout}${r.stderr}`;
      expect(r.code).not.toBe(0);
      expect(out).toContain('FAILED');
      expect(out).toContain('alertname: LoreConsumerLagHigh');
      expect(out).toContain('alertname: LoreOutboxBacklog');
      expect(out).not.toContain('alertname: LoreDeadLetters');
    });

    it('adds alertLabels to every alert, its labels to the PrometheusRule, and leaves out a disabled alert', async () => {
      const r = await renderedRule([
        '--set', 'prometheusRule.alertLabels.team=lore-oncall',
        '--set', 'prometheusRule.labels.release=prometheus',
        '--set', 'prometheusRule.alerts.deadLetters.enabled=false',
        '--set', 'prometheusRule.alerts.gateway5xx.severity=warning',
      ]); // prettier-ignore
      expect(r).toMatch(/^ {4}release: prometheus$/m);
      const rules = rulesFileOf(r);
      expect(alertNames(rules)).toEqual(ALERTS.filter((a) => a !== 'LoreDeadLetters'));
      expect(rules.match(/^ {10}team: lore-oncall$/gm)).toHaveLength(ALERTS.length - 1);
      expect(rules).toMatch(/- alert: LoreGateway5xx\n(?:.*\n)*? {8}labels:\n {10}severity: warning\n/);
    });

    it('scopes every expression to the release: its namespace and the Services of the enabled components only', async () => {
      const rules = rulesFileOf(await renderedRule(['--set', 'operator.enabled=false', '--set', 'mcp.enabled=false']));
      expect(alertNames(rules)).toEqual(ALERTS.filter((a) => a !== 'LoreReconcileFailing'));
      const selectors = [...rules.matchAll(/\{([^{}]*)\}/g)].map((m) => m[1]!).filter((s) => !s.includes('$labels') && !s.includes('$value'));
      expect(selectors.length).toBeGreaterThan(10);
      for (const s of selectors) {
        expect(s).toContain(`namespace="${NAMESPACE}"`);
        expect(s).toMatch(/job=~?"lore-/);
        expect(s).not.toContain('lore-mcp');
        expect(s).not.toContain('lore-operator');
      }
    });
  });

  describe('Grafana dashboards', () => {
    it('ship as one ConfigMap each with the sidecar label, only when grafanaDashboards.enabled', async () => {
      const off = await template(RELEASE, NAMESPACE, ['-f', MINIMAL]);
      expect(off.yaml).not.toContain('grafana_dashboard');
      const on = await template(RELEASE, NAMESPACE, ['-f', MINIMAL, '--set', 'grafanaDashboards.enabled=true', '--show-only', 'templates/dashboards.yaml']);
      expect(on.code).toBe(0);
      const maps = jsonStream(await kubectlOk(['create', '--dry-run=client', '-o', 'json', '-f', '-'], on.yaml));
      const files = dashboards();
      expect(maps.map((m) => m.metadata.name).sort()).toEqual(files.map((f) => `lore-dashboard-${f.file.replace(/\.json$/, '')}`).sort());
      for (const m of maps) {
        expect(m.kind).toBe('ConfigMap');
        expect(m.metadata.namespace).toBe(NAMESPACE);
        expect(m.metadata.labels.grafana_dashboard).toBe('1');
        expect(m.metadata.annotations.grafana_folder).toBe('Lore');
        const [key] = Object.keys(m.data);
        // The dashboard byte for byte as the chart ships it.
        expect(m.data[key!]).toBe(readFileSync(join(DASHBOARDS, key!), 'utf8').replace(/\n$/, ''));
      }
    });

    it('have a unique uid, a title, a schemaVersion, a Prometheus data source variable, and panels with unique ids, a data source and targets', () => {
      const all = dashboards();
      expect(all.map((d) => d.file)).toEqual(['agents.json', 'memory.json', 'operator.json', 'overview.json', 'webhooks.json']);
      const uids = all.map((d) => d.json.uid);
      expect(new Set(uids).size).toBe(uids.length);
      for (const { file, json: d } of all) {
        const where = (s: string) => `${file}: ${s}`;
        expect([where('uid'), d.uid]).toEqual([where('uid'), expect.stringMatching(/^lore-[a-z-]{1,30}$/)]);
        expect([where('title'), d.title]).toEqual([where('title'), expect.stringMatching(/^Lore \/ \S/)]);
        expect([where('schemaVersion'), d.schemaVersion >= 36]).toEqual([where('schemaVersion'), true]);
        const ds = (d.templating.list as any[]).find((v) => v.name === 'datasource');
        expect([where('datasource variable'), ds?.type, ds?.query]).toEqual([where('datasource variable'), 'datasource', 'prometheus']);
        const panels = panelsOf(d);
        const ids = panels.map((p) => p.id);
        expect([where('panel ids'), ids.every((id) => Number.isInteger(id)), new Set(ids).size]).toEqual([where('panel ids'), true, ids.length]);
        const graphs = panels.filter((p) => p.type !== 'row');
        expect(graphs.length).toBeGreaterThanOrEqual(6);
        for (const p of graphs) {
          const at = where(`panel ${p.id}`);
          expect([at, typeof p.title, p.title.length > 0, ['timeseries', 'stat'].includes(p.type)]).toEqual([at, 'string', true, true]);
          expect([at, p.datasource]).toEqual([at, { type: 'prometheus', uid: '${datasource}' }]);
          expect([at, p.gridPos.x + p.gridPos.w <= 24, p.gridPos.h > 0]).toEqual([at, true, true]);
          expect([at, Array.isArray(p.targets) && p.targets.length > 0]).toEqual([at, true]);
          const refIds = (p.targets as any[]).map((t) => t.refId);
          expect([at, new Set(refIds).size]).toEqual([at, refIds.length]);
          for (const t of p.targets) expect([at, t.datasource, typeof t.expr, t.expr.length > 0]).toEqual([at, p.datasource, 'string', true]);
        }
      }
    });

    it('have queries that all parse as PromQL (promtool check rules on one recording rule per query)', async () => {
      const queries = dashboards().flatMap((d) => queriesOf(d.json).map((q) => ({ ...q, where: `${d.file} ${q.where}` })));
      expect(queries.length).toBeGreaterThan(50);
      const file = join(work, 'dashboard-queries.json');
      writeFileSync(file, recordingRulesOf(queries.map((q) => concreteQuery(q.expr, NAMESPACE))));
      const r = await runCommand(promtool, ['check', 'rules', file]);
      expect(`${r.stdout}${r.stderr}`).toContain(`SUCCESS: ${queries.length} rules found`);
      expect(r.code).toBe(0);
      // And the check can fail: one broken query is refused.
      writeFileSync(file, recordingRulesOf(['sum by (job) (rate(lore_http_requests_total[5m])']));
      const broken = await runCommand(promtool, ['check', 'rules', file]);
      expect(broken.code).not.toBe(0);
    });
  });

  describe('metric names', () => {
    let lore: Embedded | undefined;
    let bus: KafkaBus | undefined;
    let dataDir: string | undefined;
    /** Every name the processes export: scraped from a real process, and read from the Kafka bus's and the operator's registries. */
    const exported = new Set<string>();
    /** What the embedded process's own scrape has. */
    const embeddedNames = new Set<string>();

    beforeAll(async () => {
      // Embedded mode runs every service and worker in one process on one registry: its /metrics, scraped.
      dataDir = mkdtempSync(join(tmpdir(), 'lore-observability-embedded-'));
      const opsPort = await freePort();
      const config = embeddedEnvSchema.parse({ PORT: '0', LORE_OPS_PORT: String(opsPort), LORE_DATA_DIR: dataDir, LORE_LOG_LEVEL: 'silent', LORE_OCR: 'false', LORE_EMBEDDER: 'hashed' });
      lore = await startEmbedded(config, createLogger({ level: 'silent', service: 'observability' }));
      expect(lore.opsUrl).not.toBeNull();
      const scraped = await fetch(`${lore.opsUrl}/metrics`);
      expect(scraped.status).toBe(200);
      for (const n of exposedNames(await scraped.text())) {
        exported.add(n);
        embeddedNames.add(n);
      }
      // The cluster's Kafka bus adds the consumer lag; the operator has metrics of its own.
      const busRegistry = createMetricsRegistry('graph-worker');
      bus = new KafkaBus({ brokers: requireEnv('LORE_TEST_KAFKA_BROKERS').split(','), clientId: 'lore-observability', logger: createLogger({ level: 'silent', service: 'observability' }), metrics: busRegistry });
      for (const n of exposedNames(await busRegistry.metrics())) exported.add(n);
      const operatorRegistry = createMetricsRegistry('operator');
      createOperatorMetrics(operatorRegistry);
      for (const n of exposedNames(await operatorRegistry.metrics())) exported.add(n);
    }, 180_000);

    afterAll(async () => {
      await bus?.close();
      await lore?.stop();
      if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    });

    it('are read from real registries (the scrape has the HTTP, bus, outbox, memory, webhooks, agents and process metrics)', () => {
      for (const n of ['lore_http_requests_total', 'lore_bus_dead_letters_total', 'lore_outbox_backlog_messages', 'lore_memory_documents_ingested_total', 'lore_webhooks_attempts_total', 'lore_agents_workflows_total', 'lore_process_process_resident_memory_bytes', 'lore_bus_consumer_lag_messages', 'lore_operator_reconcile_errors_total']) {
        expect([n, exported.has(n)]).toEqual([n, true]);
      }
      // The in-memory bus counts on the process's registry: in embedded mode its dead-letter counter is the record.
      for (const n of ['lore_bus_messages_published_total', 'lore_bus_messages_consumed_total', 'lore_bus_dead_letters_total']) {
        expect([n, embeddedNames.has(n)]).toEqual([n, true]);
      }
    });

    it('used by every dashboard query and alert are exported by Lore processes, and no query reads another metric', async () => {
      const used: Array<{ where: string; expr: string }> = [];
      for (const d of dashboards()) for (const q of queriesOf(d.json)) used.push({ where: `${d.file} ${q.where}`, expr: q.expr });
      const alerts = alertExprs(rulesFileOf(await renderedRule()));
      expect(alerts.map((a) => a.alert)).toEqual(ALERTS);
      for (const { alert, expr } of alerts) used.push({ where: `alert ${alert}`, expr });
      const missing: string[] = [];
      const foreign: string[] = [];
      for (const { where, expr } of used) {
        const names = metricNames(expr);
        if (names.length === 0) foreign.push(`${where}: reads no Lore metric: ${expr}`);
        for (const n of names) if (!exported.has(n)) missing.push(`${where}: ${n}`);
        for (const n of foreignSelectors(expr)) foreign.push(`${where}: ${n}`);
      }
      expect(missing).toEqual([]);
      expect(foreign).toEqual([]);
      expect(used.length).toBeGreaterThan(50);
    });
  });

  describe('on the real kube-apiserver', () => {
    let ns: string;

    beforeAll(async () => {
      // The Prometheus Operator's own CRDs, generated from its API types by test/infra/promtool/build.sh.
      const crds = await crdDir();
      await kubectlOk(['apply', '--server-side', '--force-conflicts', '-f', join(crds, 'monitoring.coreos.com_prometheusrules.yaml'), '-f', join(crds, 'monitoring.coreos.com_servicemonitors.yaml')]);
      await waitCrdsEstablished(['prometheusrules.monitoring.coreos.com', 'servicemonitors.monitoring.coreos.com']);
      ns = await createNamespace(runId(), { prefix: 'obs' });
    });

    async function rendered(): Promise<string> {
      const r = await template(RELEASE, ns, [
        '-f', MINIMAL,
        '--set', 'prometheusRule.enabled=true', '--set', 'grafanaDashboards.enabled=true', '--set', 'serviceMonitor.enabled=true',
        '--show-only', 'templates/prometheusrule.yaml', '--show-only', 'templates/dashboards.yaml', '--show-only', 'templates/servicemonitor.yaml',
      ]); // prettier-ignore
      expect(r.code).toBe(0);
      return r.yaml;
    }

    it('accepts the PrometheusRule, the ServiceMonitors and the dashboard ConfigMaps (server-side dry run against the Prometheus Operator CRDs)', async () => {
      const applied = await kubectl(['apply', '--server-side', '--dry-run=server', '-n', ns, '-f', '-'], await rendered());
      expect(applied.stderr).toBe('');
      expect(applied.code).toBe(0);
      expect(applied.stdout).toContain('prometheusrule.monitoring.coreos.com/lore serverside-applied (server dry run)');
      expect(applied.stdout.match(/servicemonitor\.monitoring\.coreos\.com\/lore-[a-z-]+ serverside-applied \(server dry run\)/g)).toHaveLength(10);
      expect(applied.stdout.match(/configmap\/lore-dashboard-[a-z]+ serverside-applied \(server dry run\)/g)).toHaveLength(dashboards().length);
    });

    it('is validated by the real CRD: a rule with a malformed duration is refused', async () => {
      const broken = (await rendered()).replace('for: 15m', 'for: fifteen minutes');
      const applied = await kubectl(['apply', '--server-side', '--dry-run=server', '-n', ns, '-f', '-'], broken);
      expect(applied.code).not.toBe(0);
      expect(applied.stderr).toMatch(/PrometheusRule.*is invalid.*spec\.groups\[0\]\.rules\[\d\]\.for/s);
    });
  });
});
