import type { Logger } from '@lore/runtime';
import { HashedEmbedder } from './hashed-embedder';
import { defaultModelDir, hasLocalModel, LocalModelEmbedder } from './local-model-embedder';
import type { Embedder } from './ports';

/** `auto`: the local model when its folder is complete, else the hashed embedder. */
export type EmbedderChoice = 'auto' | 'hashed' | 'local-model';

export interface EmbeddedEmbedderOptions {
  choice: EmbedderChoice;
  /** Default: `defaultModelDir()` (`$LORE_CACHE_DIR/models/…`, filled by `scripts/fetch-model.sh`). */
  modelDir?: string;
  /** Dimensions of the hashed embedder. */
  hashedDims?: number;
  threads?: number;
  batchSize?: number;
  logger: Logger;
}

export interface SelectedEmbedder {
  embedder: Embedder;
  /** Stops what the embedder runs (the local model's worker thread); a no-op for the hashed one. */
  close(): Promise<void>;
}

/**
 * The embedder that needs no network. Never downloads anything: `auto` uses the local model only if a previous
 * `scripts/fetch-model.sh` left it in the cache, and falls back to the hashed embedder (saying why) when it is
 * absent or does not load. `local-model` insists: a missing or broken model fails the start.
 */
export async function selectEmbeddedEmbedder(options: EmbeddedEmbedderOptions): Promise<SelectedEmbedder> {
  const dir = options.modelDir ?? defaultModelDir();
  const hashed = (detail: string): SelectedEmbedder => ({ embedder: new HashedEmbedder(options.hashedDims ?? 384, detail), close: async () => {} });
  if (options.choice === 'hashed') return hashed('chosen by configuration');
  if (!hasLocalModel(dir)) {
    if (options.choice === 'local-model') {
      throw new Error(`LORE_EMBEDDER=local-model but the model folder ${dir} is incomplete: run scripts/fetch-model.sh`);
    }
    options.logger.info({ model_dir: dir }, 'no local embedding model in the cache (scripts/fetch-model.sh fetches it): hashed embedder');
    return hashed('no local model in the cache; bash scripts/fetch-model.sh fetches it');
  }
  try {
    const started = Date.now();
    const embedder = await LocalModelEmbedder.load({ dir, threads: options.threads, batchSize: options.batchSize });
    options.logger.info({ model: embedder.model, dims: embedder.dims, model_dir: dir, ms: Date.now() - started }, 'local embedding model loaded');
    return { embedder, close: () => embedder.close() };
  } catch (err) {
    if (options.choice === 'local-model') throw err;
    options.logger.warn({ err, model_dir: dir }, 'local embedding model did not load: hashed embedder');
    return hashed(`local model did not load: ${(err as Error).message}`);
  }
}
