/**
 * Loaded into a Lore process by a benchmark (`node --expose-gc --import <this> <entry point>`), never into a
 * deployment: on SIGUSR2 it runs a full garbage collection and prints one line,
 * `lore-gc-probe {"heap":…,"rss":…,"at":…}` — the bytes of V8 heap in use and the resident set right after it, the
 * memory the process still holds without the garbage a busy heap carries between collections.
 *
 * Plain JavaScript so that it loads into the compiled entry points (`dist/`) as they are deployed, with no
 * TypeScript loader beside them. Used by bench/agents/concurrency.ts (memory per workflow) and bench/soak/mixed.ts
 * (heap and RSS growth).
 */
const gc = globalThis.gc;
process.on('SIGUSR2', () => {
  if (!gc) return void process.stdout.write('lore-gc-probe {"error":"run with --expose-gc"}\n');
  gc();
  const m = process.memoryUsage();
  process.stdout.write(`lore-gc-probe ${JSON.stringify({ heap: m.heapUsed, rss: m.rss, at: Date.now() })}\n`);
});
