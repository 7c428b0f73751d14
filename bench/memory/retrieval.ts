/**
 * Retrieval quality on a BEIR-layout dataset: ingests the corpus through the service, then ranks every query
 * with full text only, vectors only and hybrid (RRF), next to a plain BM25 computed here (whitespace tokens, no
 * stemming, no stop words) as the baseline. Prints nDCG@10 and recall@10 and each method's ratio to BM25.
 * Vectors and hybrid are measured for each embedder: the hashed one, and the local model (all-MiniLM-L6-v2)
 * when `scripts/fetch-model.sh` has put it in the cache; each indexes the corpus in its own database.
 *
 *   npx tsx bench/memory/retrieval.ts [--data bench/memory/data/lore-kb] [--embedders hashed,local-model]
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { defaultModelDir, hasLocalModel, LocalModelEmbedder, type Embedder } from '@lore/ai';
import { lexicalSearch, retrieve, vectorSearch } from '@lore/graph';
import { ndcgAtK, recallAtK } from '../../services/graph/src/domain/ranking';
import { arg, benchIdentity, get, post, startStack } from './common';

interface Doc {
  _id: string;
  title?: string;
  text: string;
}

function readJsonl<T>(file: string): T[] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as T);
}

function readQrels(file: string): Map<string, Map<string, number>> {
  const out = new Map<string, Map<string, number>>();
  const lines = readFileSync(file, 'utf8').split('\n').filter((l) => l.trim());
  for (const line of lines.slice(1)) {
    const [q, d, s] = line.split('\t');
    if (!q || !d) continue;
    const m = out.get(q) ?? new Map<string, number>();
    m.set(d, Number(s));
    out.set(q, m);
  }
  return out;
}

/** The plain BM25 baseline: lower-cased alphanumeric tokens, nothing else. */
function bm25Ranker(docs: Doc[], k1 = 1.2, b = 0.75): (query: string) => string[] {
  const tok = (t: string) => t.toLowerCase().match(/[a-z0-9]+/g) ?? [];
  const tfs = docs.map((d) => {
    const m = new Map<string, number>();
    for (const t of tok(`${d.title ?? ''} ${d.text}`)) m.set(t, (m.get(t) ?? 0) + 1);
    return m;
  });
  const lens = docs.map((d) => tok(`${d.title ?? ''} ${d.text}`).length);
  const avgdl = lens.reduce((s, x) => s + x, 0) / Math.max(1, docs.length);
  const df = new Map<string, number>();
  for (const tf of tfs) for (const t of tf.keys()) df.set(t, (df.get(t) ?? 0) + 1);
  const n = docs.length;
  return (query) => {
    const q = [...new Set(tok(query))];
    return docs
      .map((d, i) => {
        let s = 0;
        for (const t of q) {
          const f = tfs[i]?.get(t) ?? 0;
          if (f === 0) continue;
          const idf = Math.log(1 + (n - (df.get(t) ?? 0) + 0.5) / ((df.get(t) ?? 0) + 0.5));
          s += (idf * f * (k1 + 1)) / (f + k1 * (1 - b + (b * (lens[i] ?? 0)) / avgdl));
        }
        return { id: d._id, s };
      })
      .filter((x) => x.s > 0)
      .sort((a, c) => c.s - a.s)
      .slice(0, 10)
      .map((x) => x.id);
  };
}

interface Variant {
  label: string;
  embedder?: Embedder;
  close(): Promise<void>;
}

/** The embedders to compare: the hashed default, and the local model when `scripts/fetch-model.sh` fetched it. */
async function variants(): Promise<Variant[]> {
  const wanted = arg('embedders', 'hashed,local-model').split(',');
  const out: Variant[] = [];
  if (wanted.includes('hashed')) out.push({ label: 'hashed', close: async () => {} });
  if (wanted.includes('local-model')) {
    const dir = defaultModelDir();
    if (hasLocalModel(dir)) {
      const embedder = await LocalModelEmbedder.load({ dir });
      out.push({ label: embedder.model, embedder, close: () => embedder.close() });
    } else {
      console.log('local embedding model not in the cache (bash scripts/fetch-model.sh fetches it): its rows are missing');
    }
  }
  return out;
}

async function main(): Promise<void> {
  const dir = arg('data', join(__dirname, 'data', 'lore-kb'));
  const corpus = readJsonl<Doc>(join(dir, 'corpus.jsonl'));
  const queries = readJsonl<{ _id: string; text: string }>(join(dir, 'queries.jsonl'));
  const qrels = readQrels(join(dir, 'qrels.tsv'));
  if (corpus.length > 20_000) throw new Error('this benchmark ingests through the API: keep the corpus below 20,000 documents');
  const bm25 = bm25Ranker(corpus);
  const score = async (name: string, rank: (q: string) => Promise<string[]>) => {
    let ndcg = 0;
    let recall = 0;
    let n = 0;
    for (const q of queries) {
      const rel = qrels.get(q._id);
      if (!rel) continue;
      const ranked = await rank(q.text);
      ndcg += ndcgAtK(ranked, rel, 10);
      recall += recallAtK(ranked, rel, 10);
      n += 1;
    }
    return { name, ndcg: ndcg / n, recall: recall / n };
  };
  const results: Array<{ name: string; ndcg: number; recall: number }> = [await score('BM25 (plain baseline)', async (q) => bm25(q))];
  const notes: string[] = [];

  for (const variant of await variants()) {
    // Each embedder indexes the corpus itself, through the service, in its own fresh database.
    const stack = await startStack({ embedder: variant.embedder });
    try {
      const who = benchIdentity(`bench_retrieval_${Date.now()}`);
      const scope = { tenantId: who.tenant_id, workspaceId: who.workspace_id, memoryId: who.memory_id };
      const docIdToCorpus = new Map<string, string>();
      const started = Date.now();
      for (const d of corpus) {
        const r = await post(stack, '/api/v1/memory/ingest', who, { content: d.text, title: d.title || d._id, content_type: 'text', routing: { mode: 'review' } });
        docIdToCorpus.set(r.doc_id, d._id);
      }
      for (const docId of docIdToCorpus.keys()) {
        for (let i = 0; i < 600; i += 1) {
          const s = await get(stack, `/api/v1/memory/documents/${docId}`, who);
          if (s.status !== 'queued') break;
          await new Promise((r) => setTimeout(r, 50));
        }
      }
      notes.push(`embedder ${variant.label}: ingested and indexed in ${((Date.now() - started) / 1000).toFixed(1)} s; stack: ${stack.kind}`);

      const memory = stack.graph.memory;
      const toDocs = async (chunkIds: string[]) => {
        const rows = await memory.db.withTenant(scope.tenantId, (sql) =>
          sql.query<{ chunk_id: string; doc_id: string }>(`SELECT chunk_id::text AS chunk_id, doc_id FROM graph.chunks WHERE tenant_id = $1 AND chunk_id = ANY($2::bigint[])`, [
            scope.tenantId,
            chunkIds,
          ]),
        );
        const byChunk = new Map(rows.rows.map((r) => [r.chunk_id, r.doc_id]));
        const out: string[] = [];
        for (const id of chunkIds) {
          const c = docIdToCorpus.get(byChunk.get(id) ?? '');
          if (c && !out.includes(c)) out.push(c);
        }
        return out.slice(0, 10);
      };
      const s = { tenantId: scope.tenantId, memoryId: scope.memoryId };
      // Full text does not depend on the embedder: measured once.
      if (results.length === 1) {
        results.push(
          await score('full text (PostgreSQL BM25)', async (q) =>
            toDocs((await memory.db.withTenant(s.tenantId, (sql) => lexicalSearch(sql, s, q, 40))).map((h) => h.chunk_id)),
          ),
        );
      }
      results.push(
        await score(`vectors (${variant.label})`, async (q) => {
          if (!memory.vectors) return [];
          const [e] = await memory.embedder.embed([q]);
          return toDocs((await memory.db.withTenant(s.tenantId, (sql) => vectorSearch(sql, s, e ?? [], memory.embedder.model, 40))).map((h) => h.chunk_id));
        }),
      );
      results.push(await score(`hybrid RRF (${variant.label})`, async (q) => toDocs((await retrieve(memory, scope, q, { topK: 20 })).sources.map((x) => x.chunk_id))));
    } finally {
      await stack.close();
      await variant.close();
    }
  }

  const base = results[0] as { ndcg: number; recall: number };
  console.log(`dataset ${dir}: ${corpus.length} documents, ${queries.length} queries`);
  for (const note of notes) console.log(note);
  console.log('method                                 nDCG@10  recall@10  nDCG vs BM25  recall vs BM25');
  for (const r of results) {
    console.log(
      `${r.name.padEnd(38)} ${r.ndcg.toFixed(4).padStart(7)}  ${r.recall.toFixed(4).padStart(9)}  ${(r.ndcg / base.ndcg).toFixed(3).padStart(11)}x  ${(r.recall / base.recall).toFixed(3).padStart(13)}x`,
    );
  }
  for (const hybrid of results.filter((r) => r.name.startsWith('hybrid'))) {
    if (hybrid.ndcg <= base.ndcg) {
      console.log(`FAIL: ${hybrid.name} does not beat the BM25 baseline on nDCG@10`);
      process.exitCode = 1;
    } else {
      console.log(`OK: ${hybrid.name} beats BM25 by ${((hybrid.ndcg / base.ndcg - 1) * 100).toFixed(1)}% nDCG@10`);
    }
  }
}

void main().catch((err) => {
  console.error(err);
  process.exit(1);
});
