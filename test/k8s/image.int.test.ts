import { execFileSync, spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { REPO_ROOT } from '../../operator/test/support/kube';
import { envPairs, runtimeStageEnv, stageInstructions } from '../support/dockerfile';
import { freshDatabase, type TestDatabase } from '../support/infra';
import { MINIMAL, renderObjects } from './support';

jest.setTimeout(900_000);

/**
 * The Dockerfile, exercised without a container engine (these machines have none): the files its build stage
 * copies from the context (less what .dockerignore keeps out) go into a fresh folder, its RUN steps run there
 * exactly as written, and the result is then treated as the runtime stage's /app: every entry point the chart
 * starts loads all its modules from the pruned tree under the image's NODE_OPTIONS, every production dependency
 * of every workspace resolves, and the migrations Job's script migrates a real PostgreSQL from it.
 */

/** Tracked files below `sources` that a build context would carry (.dockerignore's patterns that apply here). */
function contextFiles(sources: string[]): string[] {
  const listed = execFileSync('git', ['ls-files', '-z', '--', ...sources], { cwd: REPO_ROOT, encoding: 'utf8' }).split('\0').filter(Boolean);
  return listed.filter((f) => !/(^|\/)(node_modules|dist|coverage)\//.test(f) && !f.endsWith('.md') && !f.endsWith('.tsbuildinfo') && !f.endsWith('.env'));
}

/** Whether a package resolves (by its manifest, or by its entry point where its exports hide the manifest). */
function resolves(req: NodeJS.Require, dep: string): boolean {
  for (const spec of [`${dep}/package.json`, dep]) {
    try {
      req.resolve(spec);
      return true;
    } catch {
      // try the next form
    }
  }
  return false;
}

function run(cmd: string, cwd: string, env: NodeJS.ProcessEnv): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn('bash', ['-c', cmd], { cwd, env });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.on('close', (code) => resolve({ code, output }));
  });
}

describe('the Dockerfile', () => {
  const dockerfile = readFileSync(join(REPO_ROOT, 'Dockerfile'), 'utf8');
  const root = mkdtempSync(join(tmpdir(), 'lore-image-'));
  const app = join(root, 'src');
  let runtimeEnv: Record<string, string>;
  let db: TestDatabase | undefined;

  beforeAll(async () => {
    const build = stageInstructions(dockerfile, 'build');
    let env: NodeJS.ProcessEnv = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root' };
    mkdirSync(app, { recursive: true });
    for (const step of build) {
      if (step.op === 'ENV') env = { ...env, ...envPairs(step.args) };
      else if (step.op === 'COPY') {
        const parts = step.args.split(/\s+/);
        if (parts.some((p) => p.startsWith('--from'))) throw new Error(`the build stage copies from another stage: ${step.args}`);
        for (const file of contextFiles(parts.slice(0, -1))) {
          mkdirSync(dirname(join(app, file)), { recursive: true });
          copyFileSync(join(REPO_ROOT, file), join(app, file));
        }
      } else if (step.op === 'RUN') {
        // BuildKit's cache mounts only speed a build up; the command is what matters.
        const cmd = step.args.replace(/--mount=\S+\s*/g, '');
        const r = await run(cmd, app, env);
        if (r.code !== 0) throw new Error(`RUN ${cmd} failed (${r.code}):\n${r.output.slice(-4000)}`);
      } else if (step.op !== 'WORKDIR' && step.op !== 'ARG') {
        throw new Error(`the build stage has an instruction this test does not model: ${step.op}`);
      }
    }
    // The runtime stage's environment, its /app being this folder.
    runtimeEnv = runtimeStageEnv(dockerfile, app);
  });

  afterAll(async () => {
    await db?.drop();
    rmSync(root, { recursive: true, force: true });
  });

  it('leaves compiled code and production dependencies only, and preloads telemetry from the tree it ships', () => {
    expect(existsSync(join(app, 'services', 'gateway', 'src'))).toBe(false);
    expect(existsSync(join(app, 'node_modules', 'typescript'))).toBe(false);
    expect(existsSync(join(app, 'node_modules', 'jest'))).toBe(false);
    expect(runtimeEnv.NODE_OPTIONS).toContain(`--require=${app}/services/runtime/dist/telemetry/register.js`);
    expect(existsSync(join(app, 'services', 'runtime', 'dist', 'telemetry', 'register.js'))).toBe(true);
  });

  it('resolves every production dependency of every workspace from the pruned tree', () => {
    const workspaces = ['services/runtime', 'services/contracts', 'services/gateway', 'services/graph', 'operator'];
    for (const ws of workspaces) {
      const manifest = JSON.parse(readFileSync(join(app, ws, 'package.json'), 'utf8')) as { dependencies?: Record<string, string> };
      const req = createRequire(join(app, ws, 'package.json'));
      for (const dep of Object.keys(manifest.dependencies ?? {})) {
        expect({ ws, dep, resolved: resolves(req, dep) }).toEqual({ ws, dep, resolved: true });
      }
    }
  });

  it('starts every entry point the chart runs: all modules load, and the process stops at its configuration check', async () => {
    const deployments = (await renderObjects('lore', 'default', ['-f', MINIMAL])).filter((o) => o.kind === 'Deployment');
    const entries = deployments.map((d) => d.spec.template.spec.containers[0].args[0] as string).sort();
    expect(entries).toEqual([
      'operator/dist/main.js',
      'services/gateway/dist/main.js',
      'services/gateway/dist/webhooks-main.js',
      'services/graph/dist/main.js',
      'services/graph/dist/worker-main.js',
    ]);
    for (const entry of entries) {
      // No configuration at all: a process whose modules all load says what is missing and exits 1.
      const r = await run(`node ${entry}`, app, { PATH: process.env.PATH ?? '', ...runtimeEnv });
      expect({ entry, code: r.code }).toEqual({ entry, code: 1 });
      expect(r.output).toContain('invalid configuration');
      expect(r.output).not.toMatch(/Cannot find module|MODULE_NOT_FOUND/);
    }
  });

  it('runs the migrations Job script against the tree it ships: every schema migrated on a fresh PostgreSQL', async () => {
    db = await freshDatabase('lore_img');
    const script = join(REPO_ROOT, 'charts', 'lore', 'files', 'migrate.js');
    const r = await run(`node ${script}`, root, {
      PATH: process.env.PATH ?? '',
      ...runtimeEnv,
      LORE_APP_DIR: app,
      LORE_DATABASE_URL: db.url,
      LORE_DATABASE_OWNER_URL: db.ownerUrl,
    });
    expect(r.code).toBe(0);
    const applied = r.output.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { msg: string; schema?: string });
    expect(applied.filter((l) => l.msg === 'migrations applied').map((l) => l.schema).sort()).toEqual(['gateway', 'graph', 'runtime']);
  });
});
