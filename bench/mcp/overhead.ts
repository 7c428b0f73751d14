/**
 * MCP tool-call overhead: `memory_list_departments` called over MCP (the SDK's client, Streamable HTTP, through the
 * gateway to the tool server, which calls `GET /memory/departments` back through the gateway) against the same
 * `GET /memory/departments` made directly, in one run, the two interleaved so both meet the same machine.
 *
 *   npm run bench:mcp [-- --samples 400 --warmup 50]
 *
 * Embedded mode (`npm start`'s composition on a fresh data directory). Prints p50/p95 of each and the difference
 * (target: the tool call at most 5 ms slower at p50), and the load average before and after: figures from a busy
 * machine (load above the core count) are flagged and are not to be recorded.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createLogger } from '@lore/runtime';
import { embeddedEnvSchema, startEmbedded } from '@lore/embedded';

const argNum = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const SAMPLES = argNum('samples', 400);
const WARMUP = argNum('warmup', 50);
const TARGET_MS = 5;
/**
 * A pair is three admissions by the gateway (the direct call, the MCP request, the tool's call back); one pair per
 * 40 ms stays under the development key's default rate limit (100 a second), whose 429s would end the run.
 */
const PAIR_MS = 40;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
};

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'lore-bench-mcp-'));
  const config = embeddedEnvSchema.parse({ PORT: '0', LORE_OPS_PORT: '0', LORE_DATA_DIR: dataDir, LORE_LOG_LEVEL: 'silent', LORE_OCR: 'false' });
  const lore = await startEmbedded(config, createLogger({ level: 'silent', service: 'bench-mcp' }));
  const key = lore.credentials.api_key;
  const transport = new StreamableHTTPClientTransport(new URL('/mcp', lore.url), { requestInit: { headers: { 'x-api-key': key } } });
  const client = new Client({ name: 'lore-bench', version: '1.0.0' });
  try {
    await client.connect(transport);
    const created = await fetch(`${lore.url}/memory/departments/create`, {
      method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'Bench' }),
    });
    if (created.status !== 200 && created.status !== 201) throw new Error(`creating a graph answered ${created.status}`);

    const direct = async () => {
      const t = performance.now();
      const res = await fetch(`${lore.url}/memory/departments`, { headers: { authorization: `Bearer ${key}` } });
      const body = (await res.json()) as { departments?: unknown[] };
      if (res.status !== 200 || body.departments?.length !== 1) throw new Error(`direct call answered ${res.status}`);
      return performance.now() - t;
    };
    const tool = async () => {
      const t = performance.now();
      const res = (await client.callTool({ name: 'memory_list_departments', arguments: {} })) as { structuredContent?: { success?: boolean; data?: { departments?: unknown[] } } };
      if (!res.structuredContent?.success || res.structuredContent.data?.departments?.length !== 1) throw new Error('the tool call failed');
      return performance.now() - t;
    };

    const paced = async (pair: () => Promise<void>) => {
      const t = performance.now();
      await pair();
      await sleep(Math.max(0, PAIR_MS - (performance.now() - t)));
    };
    for (let i = 0; i < WARMUP; i++) {
      await paced(async () => {
        await direct();
        await tool();
      });
    }
    const before = loadavg()[0]!;
    const d: number[] = [];
    const m: number[] = [];
    for (let i = 0; i < SAMPLES; i++) {
      // Alternate which goes first, so neither always follows the other's garbage or cache state.
      await paced(async () => {
        if (i % 2 === 0) {
          d.push(await direct());
          m.push(await tool());
        } else {
          m.push(await tool());
          d.push(await direct());
        }
      });
    }
    const after = loadavg()[0]!;
    const cores = cpus().length;
    const busy = Math.max(before, after) > cores;
    const f = (x: number) => x.toFixed(2);
    const delta50 = pct(m, 50) - pct(d, 50);
    const lines = [
      `MCP tool-call overhead, embedded mode, ${SAMPLES} samples each (after ${WARMUP} warm-up pairs), interleaved`,
      `  direct GET /memory/departments:        p50 ${f(pct(d, 50))} ms  p95 ${f(pct(d, 95))} ms`,
      `  tool memory_list_departments over MCP: p50 ${f(pct(m, 50))} ms  p95 ${f(pct(m, 95))} ms`,
      `  overhead: p50 +${f(delta50)} ms (target <= +${TARGET_MS} ms: ${delta50 <= TARGET_MS ? 'met' : 'missed'}), p95 +${f(pct(m, 95) - pct(d, 95))} ms`,
      `  load average ${before.toFixed(2)} before, ${after.toFixed(2)} after, ${cores} cores${busy ? ' — BUSY MACHINE: do not record these figures' : ''}`,
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    await transport.terminateSession().catch(() => undefined);
    await client.close().catch(() => undefined);
    await lore.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
  process.exit(1);
});
