/**
 * Ingest-to-searchable latency under a steady load: documents are posted open-loop at --rate per second for
 * --seconds, and each one's latency runs from just before its POST until its `memory.ingest.completed` event
 * arrives (published after the indexing transaction committed, so the document was searchable by then).
 * Baseline in the same run: the same measurement for documents sent one at a time on an idle service.
 * Target: p95 ≤ 2 s at 20 documents/s for 60 s.
 *
 *   npx tsx --conditions=lore-src bench/memory/ingest.ts [--rate 20] [--seconds 60] [--embedder hashed|local-model]
 *
 * `--embedder local-model` indexes with the local model (fetched by `scripts/fetch-model.sh`) instead of the
 * hashed embedder.
 */
import { TOPICS } from '@lore/contracts';
import { defaultModelDir, LocalModelEmbedder } from '@lore/ai';
import { arg, benchIdentity, percentile, post, startStack } from './common';

const TARGET_P95_S = 2;

function documentText(i: number): string {
  const topics = ['billing', 'deployment', 'onboarding', 'incident', 'pricing', 'security', 'travel', 'payroll'];
  const t = topics[i % topics.length];
  return [
    `# Note ${i} about ${t}`,
    `This note records decision ${i} on ${t}. The owner reviewed the ${t} process with the team on day ${i % 28}.`,
    `Action items: update the ${t} runbook, inform the Lisbon office, and schedule a follow-up in ${(i % 6) + 1} weeks.`,
    `Context: the previous ${t} change caused ${i % 5} support tickets and a short delay for customers in the Rotterdam region.`,
  ].join('\n\n');
}

async function main(): Promise<void> {
  const rate = Number(arg('rate', '20'));
  const seconds = Number(arg('seconds', '60'));
  const total = Math.round(rate * seconds);
  if (!(rate > 0 && rate <= 500 && seconds > 0 && seconds <= 600)) throw new Error('rate must be in (0, 500] and seconds in (0, 600]');
  const embedder = arg('embedder', 'hashed') === 'local-model' ? await LocalModelEmbedder.load({ dir: defaultModelDir() }) : undefined;
  const stack = await startStack({ embedder });
  const completed = new Map<string, number>();
  const sub = await stack.bus.subscribe({ groupId: `bench-ingest-${Date.now()}`, topics: [TOPICS.events] }, async (m) => {
    const e = JSON.parse(m.value.toString('utf8'));
    if (e.event === 'memory.ingest.completed') completed.set(e.payload.doc_id, performance.now());
  });
  const who = benchIdentity(`bench_ingest_${Date.now()}`);
  const waitFor = async (ids: string[], timeoutMs: number) => {
    const deadline = performance.now() + timeoutMs;
    while (ids.some((id) => !completed.has(id))) {
      if (performance.now() > deadline) throw new Error(`${ids.filter((id) => !completed.has(id)).length} documents never completed`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  try {
    // Warm-up (JIT, connections, consumer assignment), not measured.
    const warm = await post(stack, '/api/v1/memory/ingest', who, { content: documentText(0), routing: { mode: 'auto' } });
    await waitFor([warm.doc_id], 60_000);

    const idle: number[] = [];
    for (let i = 0; i < 10; i += 1) {
      const t0 = performance.now();
      const r = await post(stack, '/api/v1/memory/ingest', who, { content: documentText(i + 1), routing: { mode: 'auto' } });
      await waitFor([r.doc_id], 30_000);
      idle.push(((completed.get(r.doc_id) as number) - t0) / 1000);
    }

    const sent: Array<{ id: Promise<string>; t0: number }> = [];
    const start = performance.now();
    let failures = 0;
    for (let i = 0; i < total; i += 1) {
      const due = start + (i * 1000) / rate;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const t0 = performance.now();
      sent.push({
        t0,
        id: post(stack, '/api/v1/memory/ingest', who, { content: documentText(100 + i), routing: { mode: 'auto' } }).then(
          (r) => r.doc_id as string,
          () => {
            failures += 1;
            return '';
          },
        ),
      });
    }
    const sendSeconds = (performance.now() - start) / 1000;
    const ids = await Promise.all(sent.map((s) => s.id));
    await waitFor(ids.filter(Boolean), 180_000);
    const latencies = ids.map((id, i) => (id ? ((completed.get(id) as number) - (sent[i]?.t0 ?? 0)) / 1000 : NaN)).filter((x) => !Number.isNaN(x));

    const idleP95 = percentile(idle, 95);
    const p95 = percentile(latencies, 95);
    console.log(`stack: ${stack.kind}`);
    console.log(`load: ${total} documents at ${rate}/s (sent in ${sendSeconds.toFixed(1)} s, ${failures} failed requests)`);
    console.log(`idle baseline (one at a time): p50 ${percentile(idle, 50).toFixed(3)} s  p95 ${idleP95.toFixed(3)} s`);
    console.log(
      `under load: p50 ${percentile(latencies, 50).toFixed(3)} s  p95 ${p95.toFixed(3)} s  p99 ${percentile(latencies, 99).toFixed(3)} s  max ${Math.max(...latencies).toFixed(3)} s`,
    );
    console.log(`ratio p95 load / idle baseline: ${(p95 / idleP95).toFixed(2)}x;  p95 / target ${TARGET_P95_S} s: ${(p95 / TARGET_P95_S).toFixed(2)}`);
    console.log(p95 <= TARGET_P95_S && failures === 0 ? 'OK: within target' : 'FAIL: above target');
    if (p95 > TARGET_P95_S || failures > 0) process.exitCode = 1;
  } finally {
    await sub.stop();
    await stack.close();
    await embedder?.close();
  }
}

void main().catch((err) => {
  console.error(err);
  process.exit(1);
});
