/**
 * Reads a V8 CPU profile of the benchmark's server process and says where its CPU went, per request: self time by
 * area of Lore (and of the libraries and Node internals it calls), plus the heaviest functions. Native frames
 * without a script (a hash's digest, a JSON parse) count for the area of the script that called them, except the
 * socket writes, the garbage collector and V8's own work, which are areas of their own.
 *
 *   npx tsx bench/gateway/profile.ts FILE.cpuprofile REQUESTS
 */
import { readFileSync } from 'node:fs';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}

export interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** Areas in the order they are tested: the first pattern that matches a script's address names its area. */
const AREAS: Array<[RegExp, string]> = [
  [/services\/gateway\/src\/auth\//, 'gateway: authentication'],
  [/services\/gateway\/src\/domain\/credentials/, 'gateway: key parsing and checksum'],
  [/services\/gateway\/src\/state\//, 'gateway: shared-state port'],
  [/services\/gateway\/src\/http\/guards/, 'gateway: guard'],
  [/services\/gateway\/src\//, 'gateway: other (host, pipeline, handler)'],
  [/services\/runtime\/src\/cache\//, 'runtime: rate limit (GCRA)'],
  [/services\/runtime\/src\/http\/routes/, 'runtime: route table endpoint'],
  [/services\/runtime\/src\/(http|errors|telemetry)\//, 'runtime: HTTP app'],
  [/services\/runtime\/src\/log\/|node_modules\/(pino|sonic-boom|fast-redact|quick-format|atomic-sleep|thread-stream)/, 'logging'],
  [/services\/runtime\/src\/metrics\/|node_modules\/prom-client/, 'metrics'],
  [/node_modules\/(ioredis|redis-parser|redis-errors|standard-as-callback|cluster-key-slot|denque)/, 'ioredis'],
  [/node_modules\/(koa|@koa|koa-compose|on-finished|statuses|content-type|mime-types|type-is|cookies|accepts|encodeurl|escape-html|http-errors|delegates|vary|only|parseurl|fresh|depd|path-to-regexp|ee-first)/, 'Koa and router'],
  [/node:internal\/crypto|node:crypto/, 'crypto (SHA-256, digest compare, UUIDs)'],
  [/node:_http|node:http|node:internal\/http/, 'node:http'],
  [/node:net|node:internal\/(stream_base|net|streams|stream)|node:stream|node:internal\/process\/task_queues|node:internal\/timers|node:timers|node:events|node:internal\/async_hooks/, 'node: sockets, streams, timers, ticks'],
  [/node:/, 'node: other'],
  [/services\/|bench\//, 'other Lore code'],
  [/node_modules\//, 'other libraries'],
];

const SOCKET_WRITES = new Set(['writev', 'writeUtf8String', 'writeLatin1String', 'writeBuffer', 'writeAsciiString']);

function areaOfScript(url: string): string | undefined {
  if (url === '') return undefined;
  for (const [re, area] of AREAS) if (re.test(url)) return area;
  return 'other';
}

export interface ProfileSummary {
  /** CPU time sampled (idle excluded), microseconds. */
  busyUs: number;
  areas: Array<{ area: string; us: number }>;
  functions: Array<{ name: string; area: string; us: number }>;
}

export function summarise(profile: CpuProfile): ProfileSummary {
  const byId = new Map<number, ProfileNode>();
  const parent = new Map<number, number>();
  for (const n of profile.nodes) {
    byId.set(n.id, n);
    for (const c of n.children ?? []) parent.set(c, n.id);
  }
  const areaOf = new Map<number, string>();
  const resolve = (id: number): string => {
    const known = areaOf.get(id);
    if (known !== undefined) return known;
    const node = byId.get(id)!;
    const { functionName, url } = node.callFrame;
    let area: string;
    // The profiler's own stop call carries the time since the last sample: not the server's work.
    if (functionName === '(idle)' || url === 'node:inspector') area = 'idle';
    else if (functionName === '(garbage collector)') area = 'garbage collector';
    else if (functionName === '(program)') area = 'V8 and libuv outside any script';
    else if (url === '' && SOCKET_WRITES.has(functionName)) area = 'socket writes (syscall)';
    else {
      const own = areaOfScript(url);
      const up = parent.get(id);
      area = own ?? (up !== undefined ? resolve(up) : 'V8 and libuv outside any script');
    }
    areaOf.set(id, area);
    return area;
  };
  const selfUs = new Map<number, number>();
  // timeDeltas[i] is the time between sample i-1 and sample i: it belongs to what ran at sample i.
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i]!;
    selfUs.set(id, (selfUs.get(id) ?? 0) + Math.max(0, profile.timeDeltas[i] ?? 0));
  }
  const areas = new Map<string, number>();
  const functions = new Map<string, { area: string; us: number }>();
  let busyUs = 0;
  for (const [id, us] of selfUs) {
    const area = resolve(id);
    if (area === 'idle') continue;
    busyUs += us;
    areas.set(area, (areas.get(area) ?? 0) + us);
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    const where = url === '' ? '' : ` ${url.replace(/^.*\/(services|node_modules|bench)\//, '$1/')}:${lineNumber + 1}`;
    const name = `${functionName || '(anonymous)'}${where}`;
    const f = functions.get(name) ?? { area, us: 0 };
    f.us += us;
    functions.set(name, f);
  }
  return {
    busyUs,
    areas: [...areas].map(([area, us]) => ({ area, us })).sort((a, b) => b.us - a.us),
    functions: [...functions].map(([name, f]) => ({ name, ...f })).sort((a, b) => b.us - a.us),
  };
}

/** The summary as text, in microseconds per request. */
export function formatSummary(title: string, summary: ProfileSummary, requests: number, topFunctions = 15): string {
  const per = (us: number) => (us / requests).toFixed(1).padStart(7);
  const lines = [`${title}: ${requests} requests, ${per(summary.busyUs).trim()} us of sampled non-idle time per request`];
  for (const a of summary.areas) lines.push(`  ${per(a.us)} us  ${a.area}`);
  lines.push(`  heaviest functions (self time):`);
  for (const f of summary.functions.slice(0, topFunctions)) lines.push(`  ${per(f.us)} us  ${f.name}  [${f.area}]`);
  return lines.join('\n');
}

if (require.main === module) {
  const [file, requests] = process.argv.slice(2);
  if (!file || !requests) {
    process.stderr.write('usage: profile.ts FILE.cpuprofile REQUESTS\n');
    process.exit(2);
  }
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  process.stdout.write(`${formatSummary(file, summarise(profile), Number(requests), 30)}\n`);
}
