/**
 * CPU of the gateway process per shared-state admission (`RedisGatewayState.admit`, the one Redis script of an
 * authenticated request), by how many admissions are in flight at once: with one in flight, every reply wakes
 * the event loop by itself; with many, one wake-up reads several replies.
 *
 *   bash test/infra/up.sh redis && set -a && . ~/.cache/lore/run/env && set +a
 *   node --conditions=lore-src --import tsx bench/gateway/admit-cpu.ts [--in-flight 1,4,32] [--calls 500]
 */
import { Redis } from 'ioredis';
import { RedisGatewayState } from '@lore/gateway';
import { requireEnv } from '../../test/support/infra';

const arg = (name: string, fallback: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1]! : fallback;
};

async function main(): Promise<void> {
  requireEnv('LORE_TEST_REDIS_URL');
  const state = new RedisGatewayState(new Redis(process.env.LORE_TEST_REDIS_URL!), { prefix: `bench:admit:${process.pid}:` });
  const input = { subject: 'key_bench', consume: true, rate: { perSecond: 1_000_000, burst: 1_000_000 }, quota: null };
  const calls = Number(arg('calls', '500'));
  const run = async (inFlight: number, each: number) => {
    await Promise.all(Array.from({ length: inFlight }, async () => {
      for (let i = 0; i < each; i++) await state.admit(input);
    }));
  };
  try {
    for (const inFlight of arg('in-flight', '1,4,32').split(',').map(Number)) {
      await run(inFlight, 100); // warm-up
      const rounds: string[] = [];
      for (let round = 0; round < 3; round++) {
        const before = process.cpuUsage();
        await run(inFlight, calls);
        const used = process.cpuUsage(before);
        const n = inFlight * calls;
        rounds.push(`user ${(used.user / n).toFixed(1)} + system ${(used.system / n).toFixed(1)} us`);
      }
      process.stdout.write(`${String(inFlight).padStart(3)} in flight: ${rounds.join(';  ')} per admission\n`);
    }
  } finally {
    await state.close();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
