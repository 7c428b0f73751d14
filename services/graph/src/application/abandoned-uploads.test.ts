import { IDENTITY_HEADER, announceBlob, type Identity } from '@lore/runtime';
import { connect } from 'node:net';
import { startGraphTestStack } from '../test-stack';
import { GRAPH_BLOB_OWNER } from './blob-owner';

/**
 * An upload's bytes are written before its row commits. A process stopped in between left them for good; now the
 * upload announces its key first and settles it with the row, and the graph worker deletes what stayed unsettled
 * for an hour (runtime's blob intents, docs/runtime.md).
 */
describe('upload bytes whose record was never written (PGlite)', () => {
  it('are deleted by the worker once abandoned; an accepted upload\'s are settled; an upload its client left halfway ends (499)', async () => {
    const stack = await startGraphTestStack('abandoned-uploads', { worker: false });
    const { db, graph, server, metrics } = stack;
    const blobs = graph.memory.blobs;
    try {
      const who: Identity = { tenant_id: 't_ab', workspace_id: 'ws_ab', memory_id: 'm_ab', credential: 'ck_test', subject: 'key_ab', role: 'admin' };
      // An upload accepted through the route: its key is settled in the transaction that records it.
      const form = new FormData();
      form.append('file', new Blob(['The Heron depot stores spare turbine blades.'], { type: 'text/plain' }), 'notes.txt');
      const res = await fetch(`${server.url}/api/v1/memory/uploads`, { method: 'POST', headers: await stack.identify(who), body: form });
      expect(res.status).toBe(202);
      expect((await db.query(`SELECT 1 FROM runtime.blob_intents`)).rows).toHaveLength(0);
      // What a process stopped between the bytes and the row leaves: an announced key and its bytes, no upload row.
      await announceBlob(db, GRAPH_BLOB_OWNER, 't_ab', 't_ab/uploads/upl_stopped');
      await blobs.put('t_ab', 't_ab/uploads/upl_stopped', Buffer.from('unmasked: jane@example.com'), 'text/plain');
      await db.query(`UPDATE runtime.blob_intents SET created_at = now() - interval '2 hours'`);
      await graph.worker.start();
      for (const deadline = Date.now() + 10_000; (await blobs.get('t_ab', 't_ab/uploads/upl_stopped')) !== null; ) {
        if (Date.now() > deadline) throw new Error('the abandoned bytes are still there');
        await new Promise((r) => setTimeout(r, 25));
      }
      expect((await db.query(`SELECT 1 FROM runtime.blob_intents`)).rows).toHaveLength(0);

      // A client that leaves halfway through its file: the route ends (a 499), instead of waiting for good.
      const boundary = 'lore-abandoned';
      const head = `--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="half.txt"\r\ncontent-type: text/plain\r\n\r\nthe first half of a file`;
      const identity = (await stack.identify(who))[IDENTITY_HEADER];
      await new Promise<void>((resolve) => {
        const socket = connect(Number(new URL(server.url).port), '127.0.0.1', () => {
          socket.write(`POST /api/v1/memory/uploads HTTP/1.1\r\nhost: x\r\n${IDENTITY_HEADER}: ${identity}\r\ncontent-type: multipart/form-data; boundary=${boundary}\r\ncontent-length: 100000\r\n\r\n${head}`);
          setTimeout(() => socket.destroy(), 200);
        });
        socket.on('close', () => resolve());
        socket.on('error', () => resolve());
      });
      const leftCounted = async () => /lore_http_requests_total\{[^}]*route="\/api\/v1\/memory\/uploads"[^}]*status="499"/.test(await metrics.metrics());
      for (const deadline = Date.now() + 10_000; !(await leftCounted()); ) {
        if (Date.now() > deadline) throw new Error('the abandoned upload never ended');
        await new Promise((r) => setTimeout(r, 25));
      }
    } finally {
      await stack.close();
    }
  }, 60_000);
});
