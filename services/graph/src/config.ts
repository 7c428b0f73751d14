import { OpenAiEmbedder, languageModelFromEnv, selectEmbeddedEmbedder, type Embedder, type LanguageModel } from '@lore/ai';
import { DEFAULT_PORTS, blobStoreEnv, checkBlobStoreEnv, envBool, envInt, envKafkaPrefix, envSecret, type Logger } from '@lore/runtime';
import { z } from 'zod';

const optionalUrl = z
  .string()
  .optional()
  .transform((v) => (v === '' ? undefined : v))
  .refine((v) => v === undefined || /^https?:\/\/\S+$/.test(v), { message: 'must be an http(s) URL' });
const optionalString = z
  .string()
  .optional()
  .transform((v) => (v === '' ? undefined : v));

/**
 * The environment of the graph processes (api and worker share it), parsed once by `main.ts` /
 * `worker-main.ts`. Secrets have no default. The AI variables are optional: without a base URL the embedded
 * extractive answerer and the local embedder (the fetched model, else the hashed one) are used.
 */
export const graphConfigSchema = z
  .object({
    LORE_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    LORE_GRAPH_HOST: z.string().default('0.0.0.0'),
    LORE_GRAPH_PORT: envInt(DEFAULT_PORTS.graph, 0, 65535),
    /** The worker's probes and metrics: its own default so the API and the worker can run on one host. */
    LORE_GRAPH_WORKER_PORT: envInt(DEFAULT_PORTS.graphWorker, 0, 65535),
    LORE_DATABASE_URL: z.string({ error: 'is required' }).min(1),
    LORE_DATABASE_OWNER_URL: optionalString,
    LORE_KAFKA_BROKERS: z.string({ error: 'is required' }).min(1),
    LORE_KAFKA_PREFIX: envKafkaPrefix(),
    LORE_IDENTITY_SECRET: envSecret(32),
    LORE_GRAPH_MIGRATE: envBool(false),
    LORE_GRAPH_VECTORS: envBool(true),
    LORE_GRAPH_OCR: envBool(true),
    LORE_GRAPH_UPLOAD_MAX_BYTES: envInt(25 * 1024 * 1024, 1024, 256 * 1024 * 1024),
    LORE_GRAPH_BODY_LIMIT_BYTES: envInt(2 * 1024 * 1024, 1024, 64 * 1024 * 1024),
    LORE_GRAPH_RELAY: envBool(true),
    LORE_GRAPH_CONSUMER_GROUP: z.string().regex(/^[A-Za-z0-9._-]{1,100}$/).default('graph-worker'),
    LORE_AI_LLM_BASE_URL: optionalUrl,
    LORE_AI_LLM_MODEL: optionalString,
    LORE_AI_LLM_API_KEY: optionalString,
    LORE_AI_LLM_TIMEOUT_MS: envInt(60_000, 100, 600_000),
    LORE_AI_LLM_RETRIES: envInt(2, 0, 10),
    LORE_AI_EMBEDDINGS_BASE_URL: optionalUrl,
    LORE_AI_EMBEDDINGS_MODEL: optionalString,
    LORE_AI_EMBEDDINGS_API_KEY: optionalString,
    LORE_AI_EMBEDDINGS_DIMS: envInt(384, 16, 4096),
    LORE_AI_EMBEDDINGS_TIMEOUT_MS: envInt(30_000, 100, 600_000),
    LORE_AI_EMBEDDINGS_RETRIES: envInt(2, 0, 10),
    /** Without LORE_AI_EMBEDDINGS_BASE_URL: `auto` (local model if fetched, else hashed), `hashed`, `local-model`. */
    LORE_EMBEDDER: z.enum(['auto', 'hashed', 'local-model']).default('auto'),
    LORE_EMBEDDER_MODEL_DIR: optionalString,
    LORE_EMBEDDER_THREADS: envInt(1, 1, 64),
    /** Inputs per local-model inference: a query waits behind at most one batch. */
    LORE_EMBEDDER_BATCH_SIZE: envInt(8, 1, 256),
    /** Where uploads are kept until extracted: PostgreSQL (default) or an S3-compatible bucket. */
    ...blobStoreEnv,
  })
  .superRefine((c, ctx) => {
    checkBlobStoreEnv(c, ctx);
    if (c.LORE_AI_LLM_BASE_URL && !c.LORE_AI_LLM_MODEL) ctx.addIssue({ code: 'custom', path: ['LORE_AI_LLM_MODEL'], message: 'is required with LORE_AI_LLM_BASE_URL' });
    if (c.LORE_AI_EMBEDDINGS_BASE_URL && !c.LORE_AI_EMBEDDINGS_MODEL) {
      ctx.addIssue({ code: 'custom', path: ['LORE_AI_EMBEDDINGS_MODEL'], message: 'is required with LORE_AI_EMBEDDINGS_BASE_URL' });
    }
  });

export type GraphConfig = z.infer<typeof graphConfigSchema>;

/**
 * The AI ports a configuration asks for: OpenAI-compatible providers when configured, embedded defaults otherwise
 * (the local embedding model when LORE_EMBEDDER allows and it is in the cache). `close` stops what they run.
 */
export async function buildAi(c: GraphConfig, logger: Logger): Promise<{ languageModel: LanguageModel; embedder: Embedder; close(): Promise<void> }> {
  const languageModel = languageModelFromEnv(c, logger);
  if (c.LORE_AI_EMBEDDINGS_BASE_URL) {
    const embedder = new OpenAiEmbedder({
      baseUrl: c.LORE_AI_EMBEDDINGS_BASE_URL,
      model: c.LORE_AI_EMBEDDINGS_MODEL ?? '',
      apiKey: c.LORE_AI_EMBEDDINGS_API_KEY,
      dims: c.LORE_AI_EMBEDDINGS_DIMS,
      timeoutMs: c.LORE_AI_EMBEDDINGS_TIMEOUT_MS,
      retries: c.LORE_AI_EMBEDDINGS_RETRIES,
      logger,
    });
    return { languageModel, embedder, close: async () => {} };
  }
  const selected = await selectEmbeddedEmbedder({
    choice: c.LORE_EMBEDDER,
    modelDir: c.LORE_EMBEDDER_MODEL_DIR,
    hashedDims: c.LORE_AI_EMBEDDINGS_DIMS,
    threads: c.LORE_EMBEDDER_THREADS,
    batchSize: c.LORE_EMBEDDER_BATCH_SIZE,
    logger,
  });
  return { languageModel, embedder: selected.embedder, close: selected.close };
}
