/**
 * The benchmark's HTTPS receiver in its own process, as a real receiver would be: it answers 204 at once and reports
 * the arrival time of each delivery's first attempt to the parent over IPC.
 */
import { readFileSync } from 'node:fs';
import { startReceiver, type TestPki } from '../../test/webhooks/support';

async function main(): Promise<void> {
  const dir = process.env.BENCH_PKI_DIR;
  if (!dir || !process.send) throw new Error('run by delivery-latency.ts with BENCH_PKI_DIR and an IPC channel');
  const pki: TestPki = {
    dir,
    caFile: `${dir}/ca.pem`,
    caPem: readFileSync(`${dir}/ca.pem`, 'utf8'),
    keyPem: readFileSync(`${dir}/server.key`, 'utf8'),
    certPem: readFileSync(`${dir}/server.pem`, 'utf8'),
    cleanup: () => undefined,
  };
  const seen = new Set<string>();
  const receiver = await startReceiver(pki, (_i, req) => {
    const id = req.headers['webhook-id'];
    if (typeof id === 'string' && !seen.has(id)) {
      seen.add(id);
      process.send!({ id, at: performance.timeOrigin + performance.now() });
    }
    return { status: 204 };
  });
  // The receiver keeps every request for tests; a benchmark run only needs the arrival times it already sent.
  setInterval(() => receiver.requests.splice(0), 1000).unref();
  process.send({ ready: receiver.url });
  process.on('disconnect', () => void receiver.close().then(() => process.exit(0)));
}

main().catch((err: unknown) => {
  process.stderr.write(`receiver failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
