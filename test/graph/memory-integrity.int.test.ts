import { TOPICS } from '@lore/contracts';
import {
  createLogger,
  MemoryBus,
  type BusMessage,
  type EventBus,
  type Identity,
  type OutgoingMessage,
  type SubscribeBatchOptions,
  type SubscribeOptions,
  type Subscription,
} from '@lore/runtime';
import { eventually, startHarness, type Harness } from '../memory/support';
import { uniqueSuffix } from '../support/infra';

jest.setTimeout(120_000);

/**
 * The in-process bus, with the worker's `lore.memory.ingest` handler held for the memories the test names: their
 * documents wait, accepted and `queued`, until the test lets the worker index them.
 */
class GatedBus implements EventBus {
  readonly kind = 'memory' as const;
  private readonly held = new Map<string, { open: Promise<void>; release: () => void }>();
  /** Ingest messages handled (their handler returned), by document id. */
  readonly handled = new Set<string>();
  /** Ingest messages waiting at the gate, by document id. */
  readonly waiting = new Set<string>();

  constructor(private readonly inner: MemoryBus) {}

  hold(memoryId: string): void {
    let release!: () => void;
    const open = new Promise<void>((r) => (release = r));
    this.held.set(memoryId, { open, release });
  }

  release(memoryId: string): void {
    this.held.get(memoryId)?.release();
    this.held.delete(memoryId);
  }

  ensureTopics(topics: string[]): Promise<void> {
    return this.inner.ensureTopics(topics);
  }

  publish(topic: string, messages: OutgoingMessage[]): Promise<void> {
    return this.inner.publish(topic, messages);
  }

  subscribe(options: SubscribeOptions, handler: (message: BusMessage) => Promise<void>): Promise<Subscription> {
    if (!options.topics.includes(TOPICS.memoryIngest)) return this.inner.subscribe(options, handler);
    return this.inner.subscribe(options, async (message) => {
      const msg = JSON.parse(message.value.toString('utf8')) as { memory_id: string; doc_id: string };
      const gate = this.held.get(msg.memory_id);
      if (gate) {
        this.waiting.add(msg.doc_id);
        await gate.open;
        this.waiting.delete(msg.doc_id);
      }
      await handler(message);
      this.handled.add(msg.doc_id);
    });
  }

  subscribeBatch(options: SubscribeBatchOptions, handler: (messages: BusMessage[]) => Promise<void>): Promise<Subscription> {
    return this.inner.subscribeBatch(options, handler);
  }

  ping(): Promise<void> {
    return this.inner.ping();
  }

  /** Opens every gate: a test that failed half-way must not hold back the next one's documents. */
  releaseAll(): void {
    for (const memoryId of [...this.held.keys()]) this.release(memoryId);
  }

  async close(): Promise<void> {
    this.releaseAll();
    await this.inner.close();
  }
}

/**
 * The memory data plane's integrity when requests race the worker and each other, on real PostgreSQL (READ
 * COMMITTED, where transactions do run at once; embedded mode runs one at a time). Each race is made to happen:
 * a transaction of the test holds a row lock that one side needs, so that side waits at a known statement while
 * the other runs; then the lock is released and the end state is checked.
 */
describe('memory integrity under concurrency (PostgreSQL)', () => {
  let h: Harness;
  let bus: GatedBus;
  const run = uniqueSuffix();
  const tenant = `t_integrity_${run}`;
  let memories = 0;

  /** A fresh memory of the suite's tenant. */
  const memory = (): Identity => h.identity(tenant, `mem_integrity_${run}_${++memories}`);

  const rows = async <T>(text: string, params: unknown[]): Promise<T[]> => h.db.withTenant(tenant, async (sql) => (await sql.query<T>(text, params)).rows);

  const ingest = async (who: Identity, content: string, routing: Record<string, unknown> = { mode: 'review' }) => {
    const r = await h.call('POST', '/api/v1/memory/ingest', who, { content, routing });
    expect({ status: r.status, body: r.status === 200 ? 'ok' : r.body }).toEqual({ status: 200, body: 'ok' });
    return r.body.doc_id as string;
  };

  const indexed = (who: Identity, docId: string) =>
    eventually(async () => {
      const r = await h.call('GET', `/api/v1/memory/documents/${docId}`, who);
      return r.status === 200 && r.body.status === 'indexed' ? r.body : undefined;
    }, 60_000, `document ${docId} indexed`);

  /**
   * Runs `text` (a statement locking one row) in a transaction of its own and keeps it open, the row locked, until
   * `release` is called.
   */
  const holdLock = async (text: string, params: unknown[]): Promise<{ release: () => Promise<void> }> => {
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let locked!: () => void;
    let failed!: (err: unknown) => void;
    const ready = new Promise<void>((resolve, reject) => {
      locked = resolve;
      failed = reject;
    });
    const tx = h.db.withTenant(tenant, async (sql) => {
      const r = await sql.query(text, params);
      if (r.rowCount !== 1) throw new Error(`the lock found ${r.rowCount} rows: ${text}`);
      locked();
      await released;
    });
    tx.catch(failed);
    await ready;
    return {
      release: async () => {
        release();
        await tx;
      },
    };
  };

  /** Sessions of this database waiting for a lock (whose statement contains `pattern`, when given). */
  const waitingForLocks = async (pattern = ''): Promise<number> => {
    const r = await rows<{ n: string }>(
      `SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND position($1 in query) > 0`,
      [pattern],
    );
    return Number(r[0]?.n);
  };

  /**
   * Until each request either answered or waits for a lock: `already` sessions were waiting before they were sent.
   * (Without the locks under test the requests answer at once; with them they wait for the held transaction.)
   */
  const answeredOrWaiting = async (requests: Array<Promise<unknown>>, already: number) => {
    const done = requests.map(() => false);
    requests.forEach((p, i) => void p.then(() => (done[i] = true), () => (done[i] = true)));
    await eventually(async () => ((await waitingForLocks()) >= already + done.filter((d) => !d).length ? true : undefined), 20_000, 'the requests answered or waiting');
  };

  /** The memory's BM25 statistics that differ from a recount of its chunks (none when they are true). */
  const statisticsDrift = async (who: Identity) => {
    const corpus = await rows<{ chunk_count: string; total_dl: string; real_count: string; real_dl: string }>(
      `SELECT cs.chunk_count::text, cs.total_dl::text,
              (SELECT count(*) FROM graph.chunks c WHERE c.tenant_id = $1 AND c.memory_id = $2)::text AS real_count,
              (SELECT coalesce(sum(dl), 0) FROM graph.chunks c WHERE c.tenant_id = $1 AND c.memory_id = $2)::text AS real_dl
         FROM graph.corpus_stats cs WHERE cs.tenant_id = $1 AND cs.memory_id = $2`,
      [tenant, who.memory_id],
    );
    const terms = await rows<{ term: string; df: number; real: number }>(
      `SELECT ts.term, ts.df, coalesce(r.n, 0)::int AS real
         FROM graph.term_stats ts
         LEFT JOIN (SELECT l.lexeme AS term, count(*) AS n FROM graph.chunks c, unnest(c.tsv) l
                     WHERE c.tenant_id = $1 AND c.memory_id = $2 GROUP BY l.lexeme) r ON r.term = ts.term
        WHERE ts.tenant_id = $1 AND ts.memory_id = $2 AND ts.df <> coalesce(r.n, 0)
        ORDER BY ts.term LIMIT 10`,
      [tenant, who.memory_id],
    );
    return { corpus: corpus.filter((c) => c.chunk_count !== c.real_count || c.total_dl !== c.real_dl), terms };
  };

  /** Holds the memory's BM25 corpus row: the worker indexing a document waits there, its chunks written. */
  const holdCorpusRow = (who: Identity) =>
    holdLock(`SELECT 1 FROM graph.corpus_stats WHERE tenant_id = $1 AND memory_id = $2 FOR UPDATE`, [tenant, who.memory_id]);

  /** Accepts a document and waits until the worker indexing it waits for the held corpus row. */
  const ingestUntilIndexerWaits = async (who: Identity, content: string) => {
    const before = await waitingForLocks('graph.corpus_stats');
    const docId = await ingest(who, content);
    await eventually(async () => ((await waitingForLocks('graph.corpus_stats')) > before ? true : undefined), 30_000, 'the worker waiting on the corpus row');
    return docId;
  };

  const upload = async (who: Identity, filename: string, text: string): Promise<string> => {
    const target = await h.authorize(who, '/api/v1/memory/uploads');
    const form = new FormData();
    form.append('file', new Blob([text], { type: 'text/plain' }), filename);
    const res = await fetch(target.url, { method: 'POST', headers: target.headers, body: form });
    expect(res.status).toBe(202);
    return ((await res.json()) as { upload_id: string }).upload_id;
  };

  beforeAll(async () => {
    bus = new GatedBus(new MemoryBus({ logger: createLogger({ level: 'silent', service: 'integrity-bus' }) }));
    // Every indexing updates the memory's row last (its health slot): a test holding that row pauses the worker
    // after everything else it writes.
    h = await startHarness({ backend: 'postgres', bus: 'memory', graph: { bus, config: { healthIntervalMs: 0 } } });
  });
  afterEach(() => bus.releaseAll());
  afterAll(async () => {
    await h?.close();
    await bus?.close();
  });

  describe('an upload whose document is deleted before it is indexed', () => {
    /** An upload whose document is accepted (`indexing`) and whose ingest message waits at the gate. */
    const uploadWaitingForTheWorker = async (who: Identity) => {
      bus.hold(who.memory_id);
      const uploadId = await upload(who, 'zephyr.txt', 'The Zephyr turbine ships from the Bergen plant in March.');
      const u = await eventually(async () => {
        const r = await h.call('GET', `/api/v1/memory/uploads/${uploadId}`, who);
        return r.body?.status === 'indexing' && bus.waiting.has(r.body.doc_id) ? r.body : undefined;
      }, 30_000, 'the upload indexing, its document waiting for the worker');
      return { uploadId, docId: u.doc_id as string };
    };

    it('ends failed, saying why, as soon as the document is deleted; the worker then leaves it so', async () => {
      const who = memory();
      const { uploadId, docId } = await uploadWaitingForTheWorker(who);
      expect((await h.call('DELETE', `/api/v1/memory/documents/${docId}`, who)).status).toBe(204);
      const failed = await h.call('GET', `/api/v1/memory/uploads/${uploadId}`, who);
      expect(failed.body).toMatchObject({ status: 'failed', doc_id: docId, error: 'the document was deleted before it was indexed' });

      bus.release(who.memory_id);
      await eventually(async () => (bus.handled.has(docId) ? true : undefined), 30_000, 'the ingest message handled');
      expect((await h.call('GET', `/api/v1/memory/uploads/${uploadId}`, who)).body).toMatchObject({ status: 'failed', error: 'the document was deleted before it was indexed' });
    });

    it('ends failed when the worker finds the document gone, whatever removed it', async () => {
      const who = memory();
      const { uploadId, docId } = await uploadWaitingForTheWorker(who);
      // Not through the document route: the row goes alone (as a deletion outside `deleteDocuments` would).
      await rows(`DELETE FROM graph.documents WHERE tenant_id = $1 AND doc_id = $2`, [tenant, docId]);
      expect((await h.call('GET', `/api/v1/memory/uploads/${uploadId}`, who)).body.status).toBe('indexing');

      bus.release(who.memory_id);
      const settled = await eventually(async () => {
        const r = await h.call('GET', `/api/v1/memory/uploads/${uploadId}`, who);
        return r.body?.status !== 'indexing' ? r.body : undefined;
      }, 30_000, 'the upload settled');
      expect(settled).toMatchObject({ status: 'failed', doc_id: docId, error: 'the document was deleted before it was indexed' });
    });
  });

  describe('deleting a document while the worker indexes it', () => {
    it('waits for the worker and then takes its chunks out of the BM25 statistics: they equal a recount', async () => {
      const who = memory();
      await indexed(who, await ingest(who, 'The Heron alloy foundry casts turbine blades. Its furnace runs at night.'));
      const corpus = await holdCorpusRow(who);
      const docId = await ingestUntilIndexerWaits(
        who,
        'Deleted alloy notes. The Quenby alloy is forged in Bergen. Quenby alloy blades are polished by hand and shipped to Oslo every week.',
      );
      const deletion = h.call('DELETE', `/api/v1/memory/documents/${docId}`, who);
      await answeredOrWaiting([deletion], 1);
      await corpus.release();
      expect((await deletion).status).toBe(204);
      await eventually(async () => (bus.handled.has(docId) ? true : undefined), 30_000, 'the ingest message handled');

      expect((await h.call('GET', `/api/v1/memory/documents/${docId}`, who)).status).toBe(404);
      expect(await rows(`SELECT chunk_id FROM graph.chunks WHERE tenant_id = $1 AND doc_id = $2`, [tenant, docId])).toEqual([]);
      expect(await statisticsDrift(who)).toEqual({ corpus: [], terms: [] });
    });
  });

  describe('deleting a document while the worker records a contradiction with it', () => {
    // The deletion waits for the worker at the term and entity rows the two documents share (both name the entity),
    // so it always sees the contradiction the worker recorded.
    it('waits for the worker and then deletes the contradiction too: none names a deleted document', async () => {
      const who = memory();
      const first = await ingest(who, 'Acme Corp was founded in 1990.');
      await indexed(who, first);
      // The worker indexing the second document waits at its last statement, its contradiction with the first written.
      const memoryRow = await holdLock(`SELECT 1 FROM graph.memories WHERE tenant_id = $1 AND memory_id = $2 FOR NO KEY UPDATE`, [tenant, who.memory_id]);
      const second = await ingest(who, 'Acme Corp was founded in 1985.');
      await eventually(async () => ((await waitingForLocks('UPDATE graph.memories')) > 0 ? true : undefined), 30_000, 'the worker waiting on the memory row');
      const deletion = h.call('DELETE', `/api/v1/memory/documents/${first}`, who);
      await answeredOrWaiting([deletion], 1);
      await memoryRow.release();
      expect((await deletion).status).toBe(204);
      await indexed(who, second);

      // The worker did record one (its event is in the outbox), and the deletion removed it.
      const detected = await rows(
        `SELECT event_id FROM runtime.outbox WHERE value->>'event' = 'memory.entity.contradiction_detected' AND position($1 in value::text) > 0 AND position($2 in value::text) > 0`,
        [first, second],
      );
      expect(detected).toHaveLength(1);
      const named = await rows(`SELECT contradiction_id, status FROM graph.contradictions WHERE tenant_id = $1 AND (doc_a = $2 OR doc_b = $2)`, [tenant, first]);
      expect(named).toEqual([]);
      expect((await h.call('GET', '/api/v1/memory/contradictions?status=open', who)).body.count).toBe(0);
    });
  });

  describe('filing a document into a vault while the worker indexes it', () => {
    it('waits for the worker and then moves its chunks too: they carry the document\'s vault', async () => {
      const who = memory();
      expect((await h.call('POST', '/api/v1/memory/vaults', who, { vault_id: 'v_target', name: 'Target', description: 'filed here' })).status).toBe(201);
      await indexed(who, await ingest(who, 'The Heron alloy foundry casts turbine blades.'));
      const corpus = await holdCorpusRow(who);
      const docId = await ingestUntilIndexerWaits(who, 'File race four. Quenby Halvorsen signs the Kestrel supply contract in Tromso.');
      const filing = h.call('POST', `/api/v1/memory/review/${docId}/file`, who, { vault_id: 'v_target' });
      await answeredOrWaiting([filing], 1);
      await corpus.release();
      expect((await filing).status).toBe(200);
      const doc = await indexed(who, docId);
      expect(doc).toMatchObject({ vault_id: 'v_target', needs_review: false });

      const vaults = await rows<{ vault_id: string; n: number }>(
        `SELECT vault_id, count(*)::int AS n FROM graph.chunks WHERE tenant_id = $1 AND doc_id = $2 GROUP BY vault_id`,
        [tenant, docId],
      );
      expect(vaults).toEqual([{ vault_id: 'v_target', n: doc.chunk_count }]);
      const found = await h.call('POST', '/api/v1/memory/retrieve', who, { query: 'Quenby Halvorsen Kestrel', vault_ids: ['v_target'], top_k: 5 });
      expect(found.body.chunks.map((c: { document_id: string }) => c.document_id)).toContain(docId);
    });
  });

  describe('deleting a vault while documents are filed or ingested into it', () => {
    /** Documents (and chunks) of the memory that name a vault it does not have. */
    const orphans = (who: Identity) =>
      rows<{ doc_id: string; vault_id: string }>(
        `SELECT d.doc_id, d.vault_id FROM graph.documents d
          WHERE d.tenant_id = $1 AND d.memory_id = $2
            AND NOT EXISTS (SELECT 1 FROM graph.vaults v WHERE v.tenant_id = d.tenant_id AND v.memory_id = d.memory_id AND v.vault_id = d.vault_id)
         UNION ALL
         SELECT DISTINCT c.doc_id, c.vault_id FROM graph.chunks c
          WHERE c.tenant_id = $1 AND c.memory_id = $2
            AND NOT EXISTS (SELECT 1 FROM graph.vaults v WHERE v.tenant_id = c.tenant_id AND v.memory_id = c.memory_id AND v.vault_id = c.vault_id)`,
        [tenant, who.memory_id],
      );

    const createVault = async (who: Identity) => {
      const r = await h.call('POST', '/api/v1/memory/vaults', who, {
        vault_id: 'v_astronomy',
        name: 'Astronomy',
        description: 'telescopes galaxies stars observatory',
        examples: ['the telescope observed a distant galaxy', 'stars and galaxies seen from the observatory'],
      });
      expect(r.status).toBe(201);
    };

    it('a deletion under way makes filing and manual ingest into the vault answer 404 and routes automatic ingest elsewhere', async () => {
      const who = memory();
      await createVault(who);
      const inVault = await ingest(who, 'The observatory telescope observed a distant galaxy.', { mode: 'manual', vault_id: 'v_astronomy' });
      const waiting = await ingest(who, 'Star notes waiting for review: a telescope observed a galaxy.');
      await indexed(who, inVault);
      await indexed(who, waiting);

      // The deletion locks the vault, then waits at its move of the vault's documents (one of them is held).
      const held = await holdLock(`SELECT 1 FROM graph.documents WHERE tenant_id = $1 AND doc_id = $2 FOR SHARE`, [tenant, inVault]);
      const deletion = h.call('DELETE', '/api/v1/memory/vaults/v_astronomy', who);
      await eventually(async () => ((await waitingForLocks('UPDATE graph.documents')) > 0 ? true : undefined), 30_000, 'the deletion waiting');

      const filing = h.call('POST', `/api/v1/memory/review/${waiting}/file`, who, { vault_id: 'v_astronomy' });
      const manual = h.call('POST', '/api/v1/memory/ingest', who, { content: 'Star notes: the telescope observed a distant galaxy.', routing: { mode: 'manual', vault_id: 'v_astronomy' } });
      const auto = h.call('POST', '/api/v1/memory/ingest', who, {
        content: 'Telescope galaxies stars observatory: the telescope observed a distant galaxy from the observatory.',
        routing: { mode: 'auto' },
      });
      const text = 'Telescope galaxies stars observatory: the telescope observed a distant galaxy from the observatory.';
      const pushed = h.call('POST', '/internal/v1/connector-documents', who, {
        cc_pair_id: 1,
        access: { public: true, groups: [] },
        documents: [{ id: 'page-1', title: 'Telescope notes', text, link: 'https://wiki.example.test/page-1', source_type: 'web', updated_at: null, primary_owners: null, secondary_owners: null, metadata: {}, content_hash: 'h1' }],
      });
      await answeredOrWaiting([filing, manual, auto, pushed], 1);
      await held.release();

      const [f, m, a, p] = [await filing, await manual, await auto, await pushed];
      expect({
        deletion: (await deletion).body,
        filing: [f.status, f.body.error?.message],
        manual: [m.status, m.body.error?.message],
        auto: a.status,
        pushed: p.status,
      }).toEqual({ deletion: { moved_documents: 1 }, filing: [404, 'vault not found'], manual: [404, 'vault not found'], auto: 200, pushed: 200 });
      const routed = [a.body.doc_id as string, p.body.results[0].doc_id as string];
      for (const docId of routed) expect((await indexed(who, docId)).vault_id).not.toBe('v_astronomy');
      expect(await orphans(who)).toEqual([]);
      expect((await h.call('GET', `/api/v1/memory/documents/${waiting}`, who)).body).toMatchObject({ vault_id: 'v_unassigned', needs_review: true });
      expect((await h.call('GET', `/api/v1/memory/documents/${inVault}`, who)).body).toMatchObject({ vault_id: 'v_unassigned', needs_review: true });
    });

    it('a filing under way makes the deletion wait, then move the filed document and its chunks back to review', async () => {
      const who = memory();
      await createVault(who);
      const waiting = await ingest(who, 'Star notes waiting for review: a telescope observed a galaxy.');
      await indexed(who, waiting);

      // The filing checks the vault, then waits at its update of the document (held).
      const held = await holdLock(`SELECT 1 FROM graph.documents WHERE tenant_id = $1 AND doc_id = $2 FOR SHARE`, [tenant, waiting]);
      const filing = h.call('POST', `/api/v1/memory/review/${waiting}/file`, who, { vault_id: 'v_astronomy' });
      await eventually(async () => ((await waitingForLocks('UPDATE graph.documents')) > 0 ? true : undefined), 30_000, 'the filing waiting');
      const deletion = h.call('DELETE', '/api/v1/memory/vaults/v_astronomy', who);
      await answeredOrWaiting([deletion], 1);
      await held.release();

      expect((await filing).status).toBe(200);
      expect((await deletion).body).toEqual({ moved_documents: 1 });
      expect(await orphans(who)).toEqual([]);
      expect((await h.call('GET', `/api/v1/memory/documents/${waiting}`, who)).body).toMatchObject({ vault_id: 'v_unassigned', needs_review: true });
      const review = await h.call('GET', '/api/v1/memory/review', who);
      expect(review.body.documents.map((d: { doc_id: string }) => d.doc_id)).toContain(waiting);
    });
  });
});
