import { Agent, request } from 'node:http';

export interface Target {
  url: string;
  headers: Record<string, string>;
}

function once(agent: Agent, target: Target, path: string): Promise<number> {
  const u = new URL(target.url);
  return new Promise((resolve) => {
    const req = request({ host: u.hostname, port: u.port, path, method: 'GET', headers: target.headers, agent }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
      res.on('error', () => resolve(0));
    });
    req.on('error', () => resolve(0));
    req.end();
  });
}

/** Closed loop: `connections` callers each send the next request when the last one answered. */
export async function throughput(target: Target, path: string, connections: number, durationMs: number): Promise<{ rps: number; ok: number; failed: number }> {
  const agent = new Agent({ keepAlive: true, maxSockets: connections });
  let ok = 0;
  let failed = 0;
  const start = performance.now();
  const deadline = start + durationMs;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (performance.now() < deadline) {
        const status = await once(agent, target, path);
        if (status === 200) ok++;
        else failed++;
      }
    }),
  );
  const seconds = (performance.now() - start) / 1000;
  agent.destroy();
  return { rps: ok / seconds, ok, failed };
}

/**
 * Open loop: requests start on a fixed schedule whatever the answers do, and each latency is measured from its
 * scheduled start, so queueing behind a slow answer counts (no coordinated omission).
 */
export async function openLoop(target: Target, path: string, ratePerSecond: number, durationMs: number): Promise<{ latenciesMs: number[]; failed: number; sent: number }> {
  const agent = new Agent({ keepAlive: true, maxSockets: 512 });
  const interval = 1000 / ratePerSecond;
  const total = Math.floor((durationMs / 1000) * ratePerSecond);
  const latencies: number[] = [];
  let failed = 0;
  const inflight: Array<Promise<void>> = [];
  const start = performance.now();
  let next = 0;
  await new Promise<void>((resolve) => {
    const tick = () => {
      const now = performance.now();
      while (next < total && start + next * interval <= now) {
        const scheduled = start + next * interval;
        next++;
        inflight.push(
          once(agent, target, path).then((status) => {
            if (status === 200) latencies.push(performance.now() - scheduled);
            else failed++;
          }),
        );
      }
      if (next >= total) resolve();
      // Sleep until the next start is due rather than spinning: a busy loop would steal a core from the server.
      else setTimeout(tick, Math.max(0, start + next * interval - performance.now()));
    };
    tick();
  });
  await Promise.all(inflight);
  agent.destroy();
  return { latenciesMs: latencies, failed, sent: total };
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i]!;
}
