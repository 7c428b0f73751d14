/**
 * Loaded into the agents-worker child of the concurrency benchmark (`node --expose-gc --import <this>`), never into
 * a deployment: on SIGUSR2 it runs a full garbage collection and prints one line, `lore-gc-probe {"heap":…,"rss":…}`,
 * the bytes of V8 heap in use and the resident set right after it — the memory the process still holds, without
 * the garbage a busy heap carries between collections.
 */
const gc = (globalThis as { gc?: () => void }).gc;
process.on('SIGUSR2', () => {
  if (!gc) return void process.stdout.write('lore-gc-probe {"error":"run with --expose-gc"}\n');
  gc();
  const m = process.memoryUsage();
  process.stdout.write(`lore-gc-probe ${JSON.stringify({ heap: m.heapUsed, rss: m.rss, at: Date.now() })}\n`);
});
