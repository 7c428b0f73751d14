import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { TurnBatchedDestination } from './destination';

function target() {
  const writes: string[] = [];
  return { writes, sink: { write: (data: string) => (writes.push(data), true) } };
}

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

describe('TurnBatchedDestination', () => {
  it("writes one turn's lines together, in order, at the end of the turn", async () => {
    const { writes, sink } = target();
    const d = new TurnBatchedDestination(sink);
    d.write('a\n');
    d.write('b\n');
    d.write('c\n');
    expect(writes).toEqual([]);
    await nextTurn();
    expect(writes).toEqual(['a\nb\nc\n']);
    d.write('d\n');
    await nextTurn();
    expect(writes).toEqual(['a\nb\nc\n', 'd\n']);
  });

  it('writes at once when a turn has written 64 KiB, and keeps the rest for the end of the turn', async () => {
    const { writes, sink } = target();
    const d = new TurnBatchedDestination(sink);
    const line = `${'x'.repeat(1023)}\n`;
    for (let i = 0; i < 70; i++) d.write(line);
    expect(writes).toHaveLength(1);
    expect(writes[0]!.length).toBe(64 * 1024);
    await nextTurn();
    expect(writes.join('')).toBe(line.repeat(70));
  });

  it('flushes what is pending on flushSync and flush, and writes nothing for an empty turn', async () => {
    const { writes, sink } = target();
    const d = new TurnBatchedDestination(sink);
    d.flushSync();
    expect(writes).toEqual([]);
    d.write('a\n');
    d.flushSync();
    expect(writes).toEqual(['a\n']);
    d.write('b\n');
    await new Promise<void>((resolve) => d.flush(() => resolve()));
    expect(writes).toEqual(['a\n', 'b\n']);
    await nextTurn();
    expect(writes).toEqual(['a\n', 'b\n']);
  });

  it("keeps a process's last lines when it exits at once or dies of an uncaught error", () => {
    const script = (last: string) =>
      `const { createLogger } = require(${JSON.stringify(join(__dirname, 'logger'))});
       const log = createLogger({ level: 'info', service: 'exit-test' });
       for (let i = 0; i < 3; i++) log.info({ i }, 'line');
       ${last}`;
    for (const last of ['process.exit(3)', "throw new Error('boom')"]) {
      const r = spawnSync(process.execPath, ['--import', 'tsx', '-e', script(last)], { encoding: 'utf8', timeout: 30_000 });
      const lines = r.stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l) as { i: number; msg: string });
      expect(lines.map((l) => l.i)).toEqual([0, 1, 2]);
      expect(r.status).not.toBe(0);
    }
  });
});
