import type { Logger } from '@lore/runtime';
import type { Embedder } from './ports';

/** What indexing holds while it embeds chunks and writes them: the embedder to use, released after the commit. */
export interface IndexLease {
  embedder: Embedder;
  release(): void;
}

/** An embedder that hands indexing its own (possibly newer) embedder through leases. */
export interface LeasingEmbedder extends Embedder {
  leaseForIndexing(): IndexLease;
}

/**
 * The embedder an indexer should use for one document: a switching embedder's current indexing side (held until
 * `release`, which the indexer calls after its write transaction), or the embedder itself.
 */
export function indexingLease(embedder: Embedder): IndexLease {
  const leasing = embedder as Partial<LeasingEmbedder>;
  return typeof leasing.leaseForIndexing === 'function' ? leasing.leaseForIndexing() : { embedder, release: () => {} };
}

/**
 * Two sides of one embedder: queries and indexing. Both start on the same embedder; `indexWith` moves indexing to
 * a new one first, `switchQueries` moves queries after it (when every chunk has the new model's vectors). Between
 * the two, queries keep the old model, so a query never compares with a model whose vectors are not all written.
 * Leases count the documents being indexed with each embedder, so the switch can wait until no document embedded
 * with the old model is still on its way to the database.
 */
export class SwitchingEmbedder implements LeasingEmbedder {
  private queries: Embedder;
  private indexing: Embedder;
  private readonly leases = new Map<Embedder, number>();
  private readonly drainWaiters: Array<{ embedder: Embedder; done: () => void }> = [];

  constructor(initial: Embedder) {
    this.queries = initial;
    this.indexing = initial;
  }

  get kind(): Embedder['kind'] {
    return this.queries.kind;
  }
  get model(): string {
    return this.queries.model;
  }
  get dims(): number {
    return this.queries.dims;
  }
  get detail(): string | undefined {
    return this.queries.detail;
  }

  /** Query embeddings: always the side that answers searches. */
  embed(texts: string[], signal?: AbortSignal): Promise<number[][]> {
    return this.queries.embed(texts, signal);
  }

  get queryEmbedder(): Embedder {
    return this.queries;
  }
  get indexEmbedder(): Embedder {
    return this.indexing;
  }

  leaseForIndexing(): IndexLease {
    const embedder = this.indexing;
    this.leases.set(embedder, (this.leases.get(embedder) ?? 0) + 1);
    let released = false;
    return {
      embedder,
      release: () => {
        if (released) return;
        released = true;
        const left = (this.leases.get(embedder) ?? 1) - 1;
        if (left > 0) this.leases.set(embedder, left);
        else this.leases.delete(embedder);
        this.wake();
      },
    };
  }

  /** From now on documents are indexed with `embedder`; queries stay where they are. */
  indexWith(embedder: Embedder): void {
    if (embedder.dims !== this.queries.dims) throw new Error(`the new embedder has ${embedder.dims} dimensions, the index ${this.queries.dims}`);
    this.indexing = embedder;
  }

  /** Resolves once no document is being indexed with an embedder other than the indexing one. */
  drained(): Promise<void> {
    if (!this.othersLeased()) return Promise.resolve();
    return new Promise((done) => this.drainWaiters.push({ embedder: this.indexing, done }));
  }

  /** Queries move to the indexing embedder. */
  switchQueries(): void {
    this.queries = this.indexing;
  }

  private othersLeased(): boolean {
    for (const [embedder, n] of this.leases) if (embedder !== this.indexing && n > 0) return true;
    return false;
  }

  private wake(): void {
    if (this.othersLeased()) return;
    for (const w of this.drainWaiters.splice(0)) w.done();
  }
}

/** Where the background upgrade to the local model stands, for `/readyz` and the start banner. */
export type UpgradeState = 'fetching' | 'loading' | 're-embedding' | 'done' | 'fallback';

export interface UpgradeStatus {
  state: UpgradeState;
  /** Chunks re-embedded with the model so far. */
  reembedded: number;
  /** Chunks still carrying another model's vectors, as of the last count (null before the first). */
  remaining: number | null;
  /** Why the hashed embedder stays (fallback), or what was fetched. */
  detail?: string;
}

export interface EmbedderUpgradeDeps {
  switching: SwitchingEmbedder;
  /** Puts the model in its folder (the fetch script as a child process); rejects with the reason. */
  fetch(): Promise<void>;
  /** Loads the fetched model (and checks it with a probe). */
  load(): Promise<Embedder & { close?(): Promise<void> }>;
  /**
   * Re-embeds, with `embedder`, every chunk whose vectors come from another model; returns how many it changed.
   * `onBatch` reports each batch written.
   */
  reembed(embedder: Embedder, onBatch: (written: number) => void): Promise<number>;
  /** Chunks whose vectors do not come from `model`. */
  remaining(model: string): Promise<number>;
  logger: Logger;
  /** How many times a failing re-embed is tried again before indexing goes back to the old embedder. Default 2. */
  retries?: number;
  retryDelayMs?: number;
}

/**
 * The switch protocol (docs/ai.md, "Switching to the local model"):
 * 1. fetch and load the model in the background; queries and indexing keep the hashed embedder;
 * 2. indexing moves to the model (every document indexed from now on gets its vectors);
 * 3. every chunk with another model's vectors is re-embedded, in batches, while queries stay on the old model;
 * 4. once no document embedded with the old model is still being written and no such chunk remains, queries move.
 * A failure before step 2 leaves everything on the hashed embedder (one warning); a failure in step 3 moves indexing
 * back and re-embeds what the model wrote with the old embedder, so queries never lose vector matches for good.
 */
export class EmbedderUpgrade {
  private current: UpgradeStatus = { state: 'fetching', reembedded: 0, remaining: null };
  private loaded: (Embedder & { close?(): Promise<void> }) | null = null;
  private stopped = false;
  private running: Promise<UpgradeStatus> | null = null;

  constructor(private readonly deps: EmbedderUpgradeDeps) {}

  /** Runs the protocol in the background; never rejects (a failure ends in `fallback`). */
  start(): Promise<UpgradeStatus> {
    this.running ??= this.run().catch((err: unknown) => this.fallback(`the upgrade stopped: ${(err as Error).message}`));
    return this.running;
  }

  status(): UpgradeStatus {
    return { ...this.current };
  }

  private async run(): Promise<UpgradeStatus> {
    const { logger, switching } = this.deps;
    const old = switching.indexEmbedder;
    const started = Date.now();
    logger.info('fetching the local embedding model in the background (search answers with the hashed embedder meanwhile)');
    try {
      await this.deps.fetch();
    } catch (err) {
      if (this.stopped) return this.status();
      return this.fallback(`the local model could not be fetched: ${(err as Error).message}`);
    }
    if (this.stopped) return this.status();
    this.set({ state: 'loading' });
    let model: Embedder & { close?(): Promise<void> };
    try {
      model = await this.deps.load();
    } catch (err) {
      return this.fallback(`the local model did not load: ${(err as Error).message}`);
    }
    this.loaded = model;
    if (this.stopped) return this.status();
    switching.indexWith(model);
    this.set({ state: 're-embedding', detail: model.detail });
    logger.info({ model: model.model, ms: Date.now() - started }, 'local embedding model fetched and loaded: new documents use it, re-embedding what the hashed embedder indexed');
    const retries = this.deps.retries ?? 2;
    for (let attempt = 0; ; attempt += 1) {
      try {
        await this.reembedUntilComplete(model);
        break;
      } catch (err) {
        if (this.stopped) return this.status();
        if (attempt < retries) {
          await new Promise((r) => setTimeout(r, this.deps.retryDelayMs ?? 1_000));
          continue;
        }
        switching.indexWith(old);
        const reason = `re-embedding with the local model failed: ${(err as Error).message}`;
        // What the model already wrote goes back to the old embedder, which queries still use.
        try {
          await switching.drained();
          await this.deps.reembed(old, () => {});
        } catch (undoErr) {
          logger.warn({ err: undoErr }, 'could not give the chunks back their hashed vectors: they are found by full text only');
        }
        return this.fallback(reason);
      }
    }
    if (this.stopped) return this.status();
    switching.switchQueries();
    this.set({ state: 'done', remaining: 0 });
    logger.info(
      { model: model.model, reembedded: this.current.reembedded, ms: Date.now() - started },
      'local embedding model fetched and every chunk re-embedded: search now answers with it',
    );
    return this.status();
  }

  /** Stops after the batch in hand (shutdown) and waits for it. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.running;
  }

  /** Closes the model it loaded (after `stop`, once nothing embeds any more). */
  async close(): Promise<void> {
    await this.loaded?.close?.();
  }

  private async reembedUntilComplete(model: Embedder): Promise<void> {
    for (;;) {
      if (this.stopped) throw new Error('stopped');
      await this.deps.reembed(model, (written) => {
        this.set({ reembedded: this.current.reembedded + written });
        if (this.stopped) throw new Error('stopped');
      });
      // Documents embedded with the old model before indexing moved may still be committing: wait for them, then
      // count. Nothing new can carry the old model after that, so zero here is final.
      await this.deps.switching.drained();
      const remaining = await this.deps.remaining(model.model);
      this.set({ remaining });
      if (remaining === 0) return;
    }
  }

  private fallback(reason: string): UpgradeStatus {
    this.set({ state: 'fallback', detail: reason });
    // Said once: requests never log it again; /readyz keeps the reason.
    this.deps.logger.warn({ reason }, 'the local embedding model is not available: search keeps the hashed embedder');
    return this.status();
  }

  private set(patch: Partial<UpgradeStatus>): void {
    this.current = { ...this.current, ...patch };
  }
}
