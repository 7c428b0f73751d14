import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { Embedder } from './ports';

/** The cache folder `scripts/fetch-model.sh` fills (name and version of the model package). */
export const LOCAL_MODEL_FOLDER = 'all-minilm-l6-v2-int8-1.0.0';
/** The file that marks a complete model folder (written last by the fetch script). */
export const MODEL_MANIFEST = 'lore-model.json';

/** `$LORE_CACHE_DIR/models/<name>-<version>` (`LORE_CACHE_DIR` defaults to `~/.cache/lore`). */
export function defaultModelDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(env.LORE_CACHE_DIR || join(homedir(), '.cache', 'lore'), 'models', LOCAL_MODEL_FOLDER);
}

export function hasLocalModel(dir: string): boolean {
  return existsSync(join(dir, MODEL_MANIFEST));
}

/** What the fetch script writes beside the model: how to run it. */
export interface ModelManifest {
  name: string;
  dims: number;
  /** Word pieces per input, [CLS] and [SEP] included; longer inputs are cut (the model was trained on 256). */
  max_tokens: number;
  pooling: 'mean';
  normalize: boolean;
  model_file: string;
  tokenizer_file: string;
  tokenizer_config_file: string;
  sources?: string[];
}

export async function readModelManifest(dir: string): Promise<ModelManifest> {
  const raw = JSON.parse(await readFile(join(dir, MODEL_MANIFEST), 'utf8')) as Partial<ModelManifest>;
  const str = (v: unknown) => typeof v === 'string' && v.length > 0;
  const int = (v: unknown, lo: number, hi: number) => Number.isInteger(v) && (v as number) >= lo && (v as number) <= hi;
  if (
    !str(raw.name) ||
    !int(raw.dims, 16, 4096) ||
    !int(raw.max_tokens, 8, 8192) ||
    raw.pooling !== 'mean' ||
    typeof raw.normalize !== 'boolean' ||
    !str(raw.model_file) ||
    !str(raw.tokenizer_file) ||
    !str(raw.tokenizer_config_file)
  ) {
    throw new Error(`${MODEL_MANIFEST} in the model folder is incomplete or not understood`);
  }
  return raw as ModelManifest;
}

/**
 * Keeps at most `maxTokens` ids of a tokenised input that starts with [CLS] and ends with [SEP]: the head of the
 * text, then [SEP] again (what the model saw in training for long inputs).
 */
export function boundTokens(ids: number[], maxTokens: number, sepId: number): number[] {
  if (ids.length <= maxTokens) return ids;
  const out = ids.slice(0, maxTokens - 1);
  out.push(sepId);
  return out;
}

/**
 * Mean pooling over each input's real tokens (the first `lengths[b]` positions of a right-padded batch, [CLS] and
 * [SEP] included, as sentence-transformers pools), then optionally L2 normalisation.
 * `hidden` is the flat `[batch, seqLen, dims]` last hidden state.
 */
export function meanPool(hidden: Float32Array, lengths: number[], seqLen: number, dims: number, normalize: boolean): number[][] {
  if (hidden.length !== lengths.length * seqLen * dims) throw new Error('hidden state has the wrong size for the batch');
  return lengths.map((len, b) => {
    const v = new Float64Array(dims);
    const n = Math.max(1, Math.min(len, seqLen));
    for (let j = 0; j < n; j += 1) {
      const base = (b * seqLen + j) * dims;
      for (let d = 0; d < dims; d += 1) v[d] = (v[d] ?? 0) + (hidden[base + d] ?? 0);
    }
    let norm = 0;
    for (let d = 0; d < dims; d += 1) {
      v[d] = (v[d] ?? 0) / n;
      norm += (v[d] ?? 0) ** 2;
    }
    const scale = normalize && norm > 0 ? 1 / Math.sqrt(norm) : 1;
    return Array.from(v, (x) => x * scale);
  });
}

interface WorkerReply {
  id: number;
  ok: boolean;
  error?: string;
  hidden?: Float32Array;
  dims?: number[];
}

/**
 * The ONNX session runs in a worker thread: onnxruntime-node's `run` occupies the calling thread for the whole
 * inference (about 2 s for 32 inputs of 256 word pieces on one core), which on the main thread would stall every
 * request of the process. The worker receives padded token ids and returns the last hidden state; tokenising and
 * pooling stay here. Plain JavaScript, evaluated as the worker's source; `ortPath` is resolved by this module.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const ort = require(workerData.ortPath);
let session = null;
async function handle(msg) {
  if (msg.type === 'load') {
    session = await ort.InferenceSession.create(msg.modelPath, {
      intraOpNumThreads: msg.threads, interOpNumThreads: 1, executionMode: 'sequential', graphOptimizationLevel: 'all',
    });
    return {};
  }
  const { ids, lengths, seqLen } = msg;
  const batch = lengths.length;
  const inputIds = new BigInt64Array(batch * seqLen);
  const mask = new BigInt64Array(batch * seqLen);
  for (let b = 0; b < batch; b += 1) {
    for (let j = 0; j < lengths[b]; j += 1) {
      inputIds[b * seqLen + j] = BigInt(ids[b * seqLen + j]);
      mask[b * seqLen + j] = 1n;
    }
  }
  const shape = [batch, seqLen];
  const feeds = { input_ids: new ort.Tensor('int64', inputIds, shape), attention_mask: new ort.Tensor('int64', mask, shape) };
  if (session.inputNames.includes('token_type_ids')) feeds.token_type_ids = new ort.Tensor('int64', new BigInt64Array(batch * seqLen), shape);
  const out = await session.run(feeds);
  const name = session.outputNames.includes('last_hidden_state') ? 'last_hidden_state' : session.outputNames[0];
  const t = out[name];
  return { hidden: Float32Array.from(t.data), dims: t.dims.map(Number) };
}
parentPort.on('message', (msg) => {
  handle(msg).then(
    (r) => parentPort.postMessage({ id: msg.id, ok: true, ...r }, r.hidden ? [r.hidden.buffer] : []),
    (err) => parentPort.postMessage({ id: msg.id, ok: false, error: String((err && err.message) || err) }),
  );
});
`;

/**
 * How the inference thread starts: no inherited flags (a parent started with `--import` of a TypeScript file or a
 * telemetry preload would make the thread fail before our code runs), and an empty environment, which also keeps
 * `NODE_OPTIONS` preloads and the process's secrets out of it. The thread's source is plain JavaScript and needs
 * neither.
 */
export const INFERENCE_WORKER_OPTIONS = { execArgv: [] as string[], env: {} as Record<string, string> };

/**
 * The inference thread and the calls waiting on it. A thread that fails (an `error` event, an exit, a message that
 * cannot be decoded) rejects every pending call with the reason and is forgotten; the next call starts a new one.
 * Nothing the thread does can reach the process.
 */
export class InferenceWorker {
  private worker: Worker | null = null;
  private nextId = 1;
  /** Calls waiting for a reply, with the thread that owes it (a dying thread fails only its own calls). */
  private readonly pending = new Map<number, { worker: Worker; resolve: (r: WorkerReply) => void; reject: (e: Error) => void }>();
  private loading: Promise<void> | null = null;

  /** `ortPath`: the module the thread loads as ONNX Runtime (default onnxruntime-node; tests give a stand-in). */
  constructor(
    private readonly modelPath: string,
    private readonly threads: number,
    private readonly ortPath: string = require.resolve('onnxruntime-node'),
  ) {}

  /** Starts the worker and loads the model; after a crash the next call starts a new one. */
  private ensure(): Promise<void> {
    if (this.worker && this.loading) return this.loading;
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { ortPath: this.ortPath }, ...INFERENCE_WORKER_OPTIONS });
    // An idle model never keeps the process alive; a request in flight does (see `send`).
    worker.unref();
    worker.on('message', (reply: WorkerReply) => {
      const p = this.pending.get(reply.id);
      if (!p) return;
      this.pending.delete(reply.id);
      if (!this.waitsOn(worker)) worker.unref();
      if (reply.ok) p.resolve(reply);
      else p.reject(new Error(`local embedding model: ${reply.error ?? 'inference failed'}`));
    });
    const fail = (err: Error) => {
      if (this.worker === worker) {
        this.worker = null;
        this.loading = null;
      }
      for (const [id, p] of this.pending) {
        if (p.worker !== worker) continue;
        this.pending.delete(id);
        p.reject(err);
      }
    };
    worker.on('error', (err) => fail(new Error(`local embedding model worker failed: ${err.message}`)));
    worker.on('messageerror', (err) => {
      fail(new Error(`local embedding model worker sent an unreadable message: ${err.message}`));
      void worker.terminate();
    });
    worker.on('exit', (code) => fail(new Error(`local embedding model worker exited (${code})`)));
    this.worker = worker;
    const loading = this.send(worker, { type: 'load', modelPath: this.modelPath, threads: this.threads }).then(() => undefined);
    // A failed load forgets the thread (it may still run): the next call starts over instead of reusing it.
    loading.catch(() => {
      if (this.worker === worker) {
        this.worker = null;
        this.loading = null;
        void worker.terminate();
      }
    });
    this.loading = loading;
    return loading;
  }

  private send(worker: Worker, msg: Record<string, unknown>, transfer: ArrayBuffer[] = []): Promise<WorkerReply> {
    const id = this.nextId++;
    return new Promise<WorkerReply>((resolve, reject) => {
      this.pending.set(id, { worker, resolve, reject });
      worker.ref();
      try {
        worker.postMessage({ ...msg, id }, transfer);
      } catch (err) {
        this.pending.delete(id);
        if (!this.waitsOn(worker)) worker.unref();
        reject(new Error(`local embedding model worker could not be reached: ${(err as Error).message}`));
      }
    });
  }

  private waitsOn(worker: Worker): boolean {
    for (const p of this.pending.values()) if (p.worker === worker) return true;
    return false;
  }

  async load(): Promise<void> {
    await this.ensure();
  }

  async run(ids: Int32Array, lengths: number[], seqLen: number): Promise<{ hidden: Float32Array; dims: number[] }> {
    await this.ensure();
    const worker = this.worker;
    if (!worker) throw new Error('local embedding model worker is not running');
    const reply = await this.send(worker, { type: 'run', ids, lengths, seqLen }, [ids.buffer as ArrayBuffer]);
    if (!reply.hidden || !reply.dims) throw new Error('local embedding model returned no output');
    return { hidden: reply.hidden, dims: reply.dims };
  }

  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = null;
    this.loading = null;
    if (worker) await worker.terminate();
  }
}

interface WordPieceTokenizer {
  encode(text: string): { ids: number[] };
  token_to_id(token: string): number | undefined;
}

export interface LocalModelEmbedderOptions {
  /** The folder `scripts/fetch-model.sh` fills: model, tokenizer and `lore-model.json`. */
  dir: string;
  /** Inputs per inference (default 8: a query waits behind at most one batch of chunks). */
  batchSize?: number;
  /** Cap on word pieces per input, at most the manifest's `max_tokens`. */
  maxTokens?: number;
  /** ONNX Runtime intra-op threads (default 1: the other core stays with the service). */
  threads?: number;
}

/**
 * A real sentence-embedding model run in-process with no network: all-MiniLM-L6-v2 (int8 ONNX) from the model
 * folder, WordPiece tokenisation by `@huggingface/tokenizers` from the shipped `tokenizer.json`, inference by
 * onnxruntime-node in a worker thread, mean pooling over the real tokens and L2 normalisation, as the model card
 * prescribes. Inputs are cut to 256 word pieces; batches are formed from inputs of similar length.
 */
export class LocalModelEmbedder implements Embedder {
  readonly kind = 'local-model' as const;
  readonly model: string;
  readonly dims: number;
  readonly detail: string;
  private readonly maxTokens: number;
  private readonly batchSize: number;
  private readonly normalize: boolean;

  private constructor(
    manifest: ModelManifest,
    private readonly tokenizer: WordPieceTokenizer,
    private readonly worker: InferenceWorker,
    private readonly sepId: number,
    options: LocalModelEmbedderOptions,
  ) {
    this.model = manifest.name;
    this.dims = manifest.dims;
    this.normalize = manifest.normalize;
    this.maxTokens = Math.max(8, Math.min(options.maxTokens ?? manifest.max_tokens, manifest.max_tokens));
    this.batchSize = Math.max(1, Math.min(options.batchSize ?? 8, 256));
    this.detail = `onnx, ${manifest.sources?.join(' + ') ?? 'local model folder'}, ${this.maxTokens} word pieces per input`;
  }

  /** Reads the manifest and tokenizer, starts the inference worker and checks the model's output size. */
  static async load(options: LocalModelEmbedderOptions): Promise<LocalModelEmbedder> {
    const manifest = await readModelManifest(options.dir);
    const [tokenizerJson, tokenizerConfig] = await Promise.all([
      readFile(join(options.dir, manifest.tokenizer_file), 'utf8').then((t) => JSON.parse(t) as object),
      readFile(join(options.dir, manifest.tokenizer_config_file), 'utf8').then((t) => JSON.parse(t) as object),
    ]);
    const { Tokenizer } = await import('@huggingface/tokenizers');
    const tokenizer = new Tokenizer(tokenizerJson, tokenizerConfig);
    const sepId = tokenizer.token_to_id('[SEP]');
    if (sepId === undefined) throw new Error('the tokenizer has no [SEP] token');
    const threads = Math.max(1, Math.min(options.threads ?? 1, 64));
    const worker = new InferenceWorker(join(options.dir, manifest.model_file), threads);
    const embedder = new LocalModelEmbedder(manifest, tokenizer, worker, sepId, options);
    try {
      await worker.load();
      const [probe] = await embedder.embed(['Lore checks the model once at start.']);
      if (probe?.length !== manifest.dims) throw new Error(`the model returns ${probe?.length ?? 0} dimensions, the manifest says ${manifest.dims}`);
    } catch (err) {
      await worker.close();
      throw err;
    }
    return embedder;
  }

  /** Word-piece ids of one input, [CLS] … [SEP], at most `maxTokens` of them. */
  tokenize(text: string): number[] {
    // Tokenising a huge input only to cut it would waste time: no word piece is shorter than one character,
    // and 32 characters per piece leaves room for long words that become one [UNK].
    const ids = this.tokenizer.encode(text.slice(0, this.maxTokens * 32)).ids;
    return boundTokens(ids, this.maxTokens, this.sepId);
  }

  async embed(texts: string[], signal?: AbortSignal): Promise<number[][]> {
    const tokenized = texts.map((t, i) => ({ i, ids: this.tokenize(t) }));
    // Similar lengths together: less padding computed for nothing.
    const order = [...tokenized].sort((a, b) => a.ids.length - b.ids.length);
    const out = new Array<number[]>(texts.length);
    for (let start = 0; start < order.length; start += this.batchSize) {
      signal?.throwIfAborted();
      const batch = order.slice(start, start + this.batchSize);
      const seqLen = Math.max(...batch.map((x) => x.ids.length));
      const ids = new Int32Array(batch.length * seqLen);
      batch.forEach((x, b) => ids.set(x.ids, b * seqLen));
      const lengths = batch.map((x) => x.ids.length);
      const { hidden, dims } = await this.worker.run(ids, lengths, seqLen);
      if (dims.length !== 3 || dims[0] !== batch.length || dims[1] !== seqLen || dims[2] !== this.dims) {
        throw new Error(`local embedding model returned shape [${dims.join(', ')}], expected [${batch.length}, ${seqLen}, ${this.dims}]`);
      }
      const vectors = meanPool(hidden, lengths, seqLen, this.dims, this.normalize);
      batch.forEach((x, b) => {
        out[x.i] = vectors[b] as number[];
      });
    }
    return out;
  }

  /** Stops the inference worker (a later `embed` would start it again). */
  close(): Promise<void> {
    return this.worker.close();
  }
}
