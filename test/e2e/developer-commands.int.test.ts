import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const ROOT = resolve(__dirname, '..', '..');

/**
 * The README's `make` targets (Makefile), run with stand-ins for `npx` and `bash` that write down each call and the
 * environment it got: `make test-int` builds and prepares what the suites need as `npm test` does, and gives the
 * suites the Kubernetes environment when the test control plane runs (before 2026-11-30 it never did, so the
 * operator and chart suites failed under it, and suites that start processes from dist/ ran an old build).
 */
describe('the Makefile', () => {
  let dir: string;
  let infra: string;
  let calls: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'lore-make-'));
    infra = join(dir, 'infra');
    calls = join(dir, 'calls');
    const bin = join(dir, 'bin');
    mkdirSync(bin);
    mkdirSync(infra);
    for (const tool of ['npx', 'bash', 'npm']) {
      writeFileSync(join(bin, tool), `#!/bin/sh\necho "${tool} $* | pg=$LORE_TEST_PG_URL kube=$LORE_KUBE_SERVER lane=$LORE_TEST_LANE/$LORE_TEST_KUBE onnx=$ONNXRUNTIME_NODE_INSTALL" >> ${calls}\n`);
      chmodSync(join(bin, tool), 0o755);
    }
    writeFileSync(join(infra, 'env'), 'LORE_TEST_PG_URL=postgres://test\n');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  /** `make <target>` without the infrastructure start (`-o infra-up`), with the stand-ins first on the PATH. */
  const make = (target: string): string[] => {
    const res = spawnSync('make', ['-s', '-o', 'infra-up', target], {
      cwd: ROOT,
      env: { PATH: `${join(dir, 'bin')}:${process.env.PATH}`, HOME: dir, LORE_INFRA_DIR: infra },
      encoding: 'utf8',
    });
    expect(res.status).toBe(0);
    return readFileSync(calls, 'utf8').trim().split('\n');
  };

  it('test-int builds, fetches the model and Schemathesis, then runs every suite with the Kubernetes environment when the control plane runs', () => {
    mkdirSync(join(infra, 'k8s'));
    writeFileSync(join(infra, 'k8s', 'env'), 'LORE_KUBE_SERVER=https://127.0.0.1:56443\n');
    // A live pid stands for the kube-apiserver: this test's own.
    writeFileSync(join(infra, 'k8s', 'kube-apiserver.pid'), `${process.pid}\n`);
    expect(make('test-int')).toEqual([
      expect.stringMatching(/^npx tsc -b \|/),
      expect.stringMatching(/^bash scripts\/fetch-model\.sh \|/),
      expect.stringMatching(/^bash test\/infra\/schemathesis\.sh \|/),
      'npx jest --selectProjects integration --runInBand | pg=postgres://test kube=https://127.0.0.1:56443 lane=/ onnx=',
    ]);
  });

  it('test-int leaves the Kubernetes suites out when the control plane is not running', () => {
    mkdirSync(join(infra, 'k8s'));
    writeFileSync(join(infra, 'k8s', 'env'), 'LORE_KUBE_SERVER=https://127.0.0.1:56443\n');
    const lines = make('test-int');
    expect(lines.slice(3)).toEqual([
      'npx jest --selectProjects integration --runInBand --passWithNoTests | pg=postgres://test kube= lane=parallel/without onnx=',
      'npx jest --selectProjects integration --runInBand --passWithNoTests | pg=postgres://test kube= lane=serial/without onnx=',
    ]);
  });

  it('install skips onnxruntime-node\'s download, as the README says', () => {
    expect(make('install')).toEqual(['npm install --no-audit --no-fund | pg= kube= lane=/ onnx=skip']);
  });
});
