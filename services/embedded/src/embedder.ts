import {
  describeAi,
  EmbedderUpgrade,
  ExtractiveLanguageModel,
  defaultModelDir,
  fetchModel,
  HashedEmbedder,
  hasLocalModel,
  LocalModelEmbedder,
  selectEmbeddedEmbedder,
  SwitchingEmbedder,
  type AiDescription,
  type UpgradeStatus,
} from '@lore/ai';
import { countChunksToReembed, reembedChunks, type MemoryDeps } from '@lore/graph';
import type { Db, Logger } from '@lore/runtime';
import type { EmbeddedConfig } from './config';

/** How `npm start` fetches the model: the fetch script and the environment it runs with. */
export interface ModelFetchSetting {
  script: string;
  env: NodeJS.ProcessEnv;
  /** Default 10 minutes. */
  timeoutMs?: number;
}

export interface EmbeddedEmbedder {
  /** The graph's embedder: queries on one side, indexing on the other (see `SwitchingEmbedder`). */
  switching: SwitchingEmbedder;
  /** For `/readyz` (`checks.graph.embedder`): the embedder that answers queries and the upgrade's progress. */
  describe(): AiDescription['embedder'] & { indexing: string; upgrade?: UpgradeStatus };
  /** Starts the background fetch, load and re-embed, when this start needs it. */
  startUpgrade(memory: MemoryDeps): void;
  stopUpgrade(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Embedded mode's embedder. With the model in the cache (or `hashed`, or `local-model`) it is what
 * `selectEmbeddedEmbedder` gives, as before. With `auto` and no model, the start does not wait: the hashed embedder
 * answers, and once Lore is up the model is fetched, loaded, every chunk re-embedded and queries switched, in that
 * order (docs/ai.md, "Switching to the local model").
 */
export async function embeddedEmbedder(input: { config: EmbeddedConfig; db: Db; logger: Logger; fetch?: ModelFetchSetting }): Promise<EmbeddedEmbedder> {
  const { config, logger } = input;
  const modelDir = config.LORE_EMBEDDER_MODEL_DIR ?? defaultModelDir(input.fetch?.env);
  const upgradeWanted = config.LORE_EMBEDDER === 'auto' && input.fetch !== undefined && !hasLocalModel(modelDir);
  const selected = upgradeWanted
    ? {
        embedder: new HashedEmbedder(384, 'the local model is being fetched in the background; search moves to it once every chunk is re-embedded'),
        close: async () => {},
      }
    : await selectEmbeddedEmbedder({ choice: config.LORE_EMBEDDER, modelDir, logger });
  const switching = new SwitchingEmbedder(selected.embedder);
  const lm = new ExtractiveLanguageModel();
  let upgrade: EmbedderUpgrade | null = null;
  const aborter = new AbortController();

  return {
    switching,
    describe: () => {
      const status = upgrade?.status();
      const answering = describeAi(lm, switching).embedder;
      return {
        ...answering,
        // After a failed upgrade the hashed embedder no longer waits for anything: say why it stays.
        ...(status?.state === 'fallback' && status.detail ? { detail: status.detail } : {}),
        indexing: switching.indexEmbedder.model,
        ...(status ? { upgrade: status } : {}),
      };
    },
    startUpgrade(memory) {
      if (!upgradeWanted || upgrade || !input.fetch) return;
      const fetch = input.fetch;
      upgrade = new EmbedderUpgrade({
        switching,
        logger,
        fetch: () => fetchModel({ script: fetch.script, modelDir, env: fetch.env, timeoutMs: fetch.timeoutMs, signal: aborter.signal }),
        load: () => LocalModelEmbedder.load({ dir: modelDir }),
        // Without pgvector nothing holds vectors: the switch has nothing to re-embed.
        reembed: (embedder, onBatch) => (memory.vectors ? reembedChunks(memory, embedder, onBatch) : Promise.resolve(0)),
        remaining: (model) => (memory.vectors ? countChunksToReembed(input.db, model) : Promise.resolve(0)),
      });
      void upgrade.start();
    },
    async stopUpgrade() {
      aborter.abort();
      await upgrade?.stop();
    },
    async close() {
      await upgrade?.close();
      await selected.close();
    },
  };
}
