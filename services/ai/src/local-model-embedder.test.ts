import { spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '@lore/runtime';
import { boundTokens, hasLocalModel, InferenceWorker, meanPool, MODEL_MANIFEST, readModelManifest } from './local-model-embedder';
import { selectEmbeddedEmbedder } from './select-embedder';

// The model itself is exercised in test/ai/local-model.int.test.ts (the test command fetches it first); these
// tests cover what needs no model: token bounds, pooling, the manifest and the choice of embedder.

const manifest = {
  name: 'test-model',
  dims: 384,
  max_tokens: 256,
  pooling: 'mean',
  normalize: true,
  model_file: 'model.onnx',
  tokenizer_file: 'tokenizer.json',
  tokenizer_config_file: 'tokenizer_config.json',
};

describe('local model embedder pieces', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'lore-model-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('bounds token ids to the limit and keeps the closing [SEP]', () => {
    expect(boundTokens([101, 5, 6, 102], 8, 102)).toEqual([101, 5, 6, 102]);
    const long = [101, ...Array.from({ length: 500 }, (_, i) => 1000 + i), 102];
    const cut = boundTokens(long, 256, 102);
    expect(cut).toHaveLength(256);
    expect(cut[0]).toBe(101);
    expect(cut[254]).toBe(1000 + 253);
    expect(cut[255]).toBe(102);
  });

  it('mean-pools only the real tokens of a right-padded batch and normalises', () => {
    // batch 2, seqLen 3, dims 2; the second input has one real token less, its padding holds large values.
    const hidden = new Float32Array([1, 0, 3, 0, 2, 0, /* second */ 0, 2, 0, 4, 100, 100]);
    const [a, b] = meanPool(hidden, [3, 2], 3, 2, false);
    expect(a).toEqual([2, 0]);
    expect(b).toEqual([0, 3]);
    const [na, nb] = meanPool(new Float32Array([3, 4, 0, 0, 1, 1, 5, 5]), [1, 2], 2, 2, true);
    expect(na![0]).toBeCloseTo(0.6);
    expect(na![1]).toBeCloseTo(0.8);
    expect(nb![0]).toBeCloseTo(Math.SQRT1_2);
    expect(() => meanPool(new Float32Array(5), [1], 3, 2, true)).toThrow('wrong size');
  });

  it('recognises a complete model folder by its manifest and refuses an incomplete manifest', async () => {
    expect(hasLocalModel(dir)).toBe(false);
    await writeFile(join(dir, MODEL_MANIFEST), JSON.stringify({ ...manifest, dims: 'many' }));
    expect(hasLocalModel(dir)).toBe(true);
    await expect(readModelManifest(dir)).rejects.toThrow('incomplete or not understood');
    await writeFile(join(dir, MODEL_MANIFEST), JSON.stringify(manifest));
    await expect(readModelManifest(dir)).resolves.toMatchObject({ name: 'test-model', dims: 384 });
  });

  const logger = createLogger({ level: 'silent', service: 'test' });

  it('auto: the hashed embedder, saying why, when the cache has no model; local-model: refuses to start', async () => {
    const auto = await selectEmbeddedEmbedder({ choice: 'auto', modelDir: dir, logger });
    expect(auto.embedder).toMatchObject({ kind: 'hashed', dims: 384 });
    expect(auto.embedder.detail).toContain('no local model in the cache');
    await expect(selectEmbeddedEmbedder({ choice: 'local-model', modelDir: dir, logger })).rejects.toThrow('scripts/fetch-model.sh');
    const hashed = await selectEmbeddedEmbedder({ choice: 'hashed', modelDir: dir, logger });
    expect(hashed.embedder.kind).toBe('hashed');
  });

  it('auto: falls back to the hashed embedder when the model in the cache does not load; local-model fails', async () => {
    await writeFile(join(dir, MODEL_MANIFEST), JSON.stringify(manifest));
    await writeFile(join(dir, 'tokenizer.json'), JSON.stringify({ model: { type: 'WordPiece', vocab: { '[UNK]': 0, '[SEP]': 1 }, unk_token: '[UNK]' } }));
    await writeFile(join(dir, 'tokenizer_config.json'), '{}');
    await writeFile(join(dir, 'model.onnx'), 'this is not an ONNX model');
    const auto = await selectEmbeddedEmbedder({ choice: 'auto', modelDir: dir, logger });
    expect(auto.embedder.kind).toBe('hashed');
    expect(auto.embedder.detail).toContain('did not load');
    await expect(selectEmbeddedEmbedder({ choice: 'local-model', modelDir: dir, logger })).rejects.toThrow();
  });
});

/** A stand-in for onnxruntime-node: a session whose hidden state is all ones; an input of 13 tokens ends the thread. */
const STUB_ORT = `
exports.Tensor = class { constructor(type, data, dims) { this.type = type; this.data = data; this.dims = dims; } };
exports.InferenceSession = { create: async () => ({
  inputNames: ['input_ids', 'attention_mask'],
  outputNames: ['last_hidden_state'],
  run: async (feeds) => {
    const [batch, seqLen] = feeds.input_ids.dims;
    if (seqLen === 13) process.exit(7);
    return { last_hidden_state: { data: new Float32Array(batch * seqLen * 4).fill(1), dims: [batch, seqLen, 4] } };
  },
}) };
`;

describe('the inference thread', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'lore-ort-'));
    await writeFile(join(dir, 'ort-stub.cjs'), STUB_ORT);
    await writeFile(join(dir, 'ort-broken.cjs'), "throw new Error('this runtime does not load');");
    // Fail only inside the inference thread (not in the loader's own thread): they show whether the parent's flags
    // and preloads reach it.
    await writeFile(join(dir, 'worker-poison.mjs'), "import { workerData } from 'node:worker_threads';\nif (workerData?.ortPath) throw new Error('inherited --import ran in the inference thread');\n");
    await writeFile(join(dir, 'worker-poison.cjs'), "if (require('node:worker_threads').workerData?.ortPath) throw new Error('NODE_OPTIONS preload ran in the inference thread');\n");
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('runs inference off the main thread and returns the hidden state', async () => {
    const worker = new InferenceWorker('model.onnx', 1, join(dir, 'ort-stub.cjs'));
    try {
      await worker.load();
      const out = await worker.run(new Int32Array([101, 7, 102]), [3], 3);
      expect(out.dims).toEqual([1, 3, 4]);
      expect(Array.from(out.hidden)).toEqual(new Array(12).fill(1));
    } finally {
      await worker.close();
    }
  });

  it('a thread that dies mid-inference rejects the waiting call, and the next call starts a new thread', async () => {
    const worker = new InferenceWorker('model.onnx', 1, join(dir, 'ort-stub.cjs'));
    try {
      await expect(worker.run(new Int32Array(13), [13], 13)).rejects.toThrow('local embedding model worker exited (7)');
      const out = await worker.run(new Int32Array([101, 102]), [2], 2);
      expect(out.dims).toEqual([1, 2, 4]);
    } finally {
      await worker.close();
    }
  });

  it('a runtime that throws while loading rejects the load and every later call, without reaching the process', async () => {
    const worker = new InferenceWorker('model.onnx', 1, join(dir, 'ort-broken.cjs'));
    await expect(worker.load()).rejects.toThrow('local embedding model worker failed: this runtime does not load');
    await expect(worker.run(new Int32Array([101, 102]), [2], 2)).rejects.toThrow('this runtime does not load');
    await worker.close();
  });

  it("starts clean when the process was started with a TypeScript --import and NODE_OPTIONS preloads", async () => {
    const script = join(dir, 'start-worker.ts');
    await writeFile(
      script,
      [
        `import { InferenceWorker } from ${JSON.stringify(join(__dirname, 'local-model-embedder.ts'))};`,
        `const worker = new InferenceWorker('model.onnx', 1, ${JSON.stringify(join(dir, 'ort-stub.cjs'))});`,
        "worker.load().then(() => worker.run(new Int32Array([101, 102]), [2], 2)).then(",
        "  (out) => { process.stdout.write(`ok ${out.dims.join('x')}`); return worker.close(); },",
        "  (err) => { process.stdout.write(`failed: ${err.message}`); process.exitCode = 1; },",
        ');',
      ].join('\n'),
    );
    const result = spawnSync(process.execPath, ['--import', 'tsx', '--import', join(dir, 'worker-poison.mjs'), script], {
      cwd: join(__dirname, '..', '..', '..'),
      env: { ...process.env, NODE_OPTIONS: `--require=${join(dir, 'worker-poison.cjs')}` },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(`${result.stdout}${result.stderr}`).toBe('ok 1x2x4');
    expect(result.status).toBe(0);
  });
});
