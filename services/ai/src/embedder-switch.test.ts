import { createLogger } from '@lore/runtime';
import { EmbedderUpgrade, indexingLease, SwitchingEmbedder } from './embedder-switch';
import { HashedEmbedder } from './hashed-embedder';
import type { Embedder } from './ports';

// The protocol's order with in-memory stand-ins; services/embedded/src/embedder.test.ts runs it over a real index.
const logger = createLogger({ level: 'silent', service: 'embedder-switch-unit' });

function standIn(model: string): Embedder {
  const inner = new HashedEmbedder(384);
  return { kind: 'local-model', model, dims: 384, embed: (texts) => inner.embed(texts.map((t) => `${model}:${t}`)) };
}

describe('SwitchingEmbedder and EmbedderUpgrade', () => {
  it('gives a plain embedder a lease of itself', () => {
    const hashed = new HashedEmbedder(384);
    const lease = indexingLease(hashed);
    expect(lease.embedder).toBe(hashed);
    lease.release();
  });

  it('refuses a model of other dimensions', () => {
    const s = new SwitchingEmbedder(new HashedEmbedder(384));
    expect(() => s.indexWith(new HashedEmbedder(256))).toThrow('dimensions');
  });

  it('moves indexing, then re-embeds until nothing is left, and only then moves queries', async () => {
    const hashed = new HashedEmbedder(384);
    const model = standIn('m1');
    const s = new SwitchingEmbedder(hashed);
    const seen: string[] = [];
    // The first count still finds a chunk (written by a document that was being indexed): a second pass runs.
    const counts = [1, 0];
    const upgrade = new EmbedderUpgrade({
      switching: s,
      logger,
      fetch: async () => void seen.push('fetch'),
      load: async () => {
        seen.push('load');
        return model;
      },
      reembed: async (embedder, onBatch) => {
        seen.push(`reembed:${embedder.model}:queries=${s.model}:indexing=${s.indexEmbedder.model}`);
        onBatch(3);
        return 3;
      },
      remaining: async () => counts.shift() ?? 0,
    });
    const status = await upgrade.start();
    expect(seen).toEqual(['fetch', 'load', `reembed:m1:queries=${hashed.model}:indexing=m1`, `reembed:m1:queries=${hashed.model}:indexing=m1`]);
    expect(status).toMatchObject({ state: 'done', reembedded: 6, remaining: 0 });
    expect(s.model).toBe('m1');
  });

  it('after a re-embed that keeps failing, indexes with the old embedder again and gives chunks back its vectors', async () => {
    const hashed = new HashedEmbedder(384);
    const s = new SwitchingEmbedder(hashed);
    const reembeds: string[] = [];
    const upgrade = new EmbedderUpgrade({
      switching: s,
      logger,
      retries: 1,
      retryDelayMs: 1,
      fetch: async () => {},
      load: async () => standIn('m2'),
      reembed: async (embedder) => {
        reembeds.push(embedder.model);
        if (embedder.model === 'm2') throw new Error('inference thread died');
        return 2;
      },
      remaining: async () => 0,
    });
    const status = await upgrade.start();
    expect(status.state).toBe('fallback');
    expect(status.detail).toContain('inference thread died');
    expect(reembeds).toEqual(['m2', 'm2', hashed.model]);
    expect(s.model).toBe(hashed.model);
    expect(s.indexEmbedder).toBe(hashed);
  });

  it('keeps the hashed embedder when the fetch fails', async () => {
    const hashed = new HashedEmbedder(384);
    const s = new SwitchingEmbedder(hashed);
    let loaded = false;
    const upgrade = new EmbedderUpgrade({
      switching: s,
      logger,
      fetch: async () => {
        throw new Error('fetch script exited 1: python3 with pip is needed');
      },
      load: async () => {
        loaded = true;
        return standIn('m3');
      },
      reembed: async () => 0,
      remaining: async () => 0,
    });
    const status = await upgrade.start();
    expect(status).toMatchObject({ state: 'fallback' });
    expect(status.detail).toContain('python3 with pip is needed');
    expect(loaded).toBe(false);
    expect(s.indexEmbedder).toBe(hashed);
  });
});
