import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '@lore/runtime';
import { boundTokens, hasLocalModel, meanPool, MODEL_MANIFEST, readModelManifest } from './local-model-embedder';
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
