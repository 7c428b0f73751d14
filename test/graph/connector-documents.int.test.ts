import { createHash } from 'node:crypto';
import { lexicalSearch, vectorSearch } from '@lore/graph';
import type { Identity } from '@lore/runtime';
import { ADMIN_TOKEN } from '../gateway/harness';
import { eventually, parseSse, startHarness, type Harness } from '../memory/support';
import { uniqueSuffix } from '../support/infra';

jest.setTimeout(240_000);

const PUSH = '/internal/v1/connector-documents';
const DELETE = '/internal/v1/connector-documents/delete';
/** The suite's memories take at most this many characters of a document (the default is 500,000). */
const MAX_CONTENT_CHARS = 20_000;

const sha = (text: string) => createHash('sha256').update(text).digest('hex');

interface PushedDocument {
  id: string;
  title: string;
  text: string;
  link: string;
  source_type: string;
  updated_at: string | null;
  primary_owners: string[] | null;
  secondary_owners: string[] | null;
  metadata: Record<string, string>;
  content_hash: string;
}

/** A document as a connector reads it; the hash follows the text unless given. */
function sourceDocument(id: string, text: string, extra: Partial<PushedDocument> = {}): PushedDocument {
  return {
    id,
    title: `Page ${id.split('/').pop()}`,
    text,
    link: `https://intranet.example.test/${encodeURIComponent(id)}`,
    source_type: 'web',
    updated_at: '2025-03-04T05:06:07.000Z',
    primary_owners: ['ada@example.test'],
    secondary_owners: null,
    metadata: { language: 'en' },
    content_hash: sha(text),
    ...extra,
  };
}

const PUBLIC = { public: true, groups: [] as number[] };
const PRIVATE = { public: false, groups: [12, 7] };

/**
 * The graph-internal connector routes on PostgreSQL and Kafka with the worker indexing, called as core's indexer
 * calls them (straight to the graph with a signed identity); a real gateway in front shows they are not reachable
 * from outside.
 */
describe('connector documents (graph-internal)', () => {
  let h: Harness;
  const run = uniqueSuffix();
  const tenant = `t_conn_${run}`;
  const memory = `mem_conn_${run}`;
  const otherTenant = `t_conn_other_${run}`;
  let vectors = false;

  /** An administrator (a tenant key) of the memory, as core's indexer signs it. */
  const admin = (t = tenant, m = memory): Identity => h.identity(t, m, { role: 'tenant_admin' });
  /** A member's session in the same memory, in no user group: sees public documents only. */
  const member = (t = tenant, m = memory): Identity => h.identity(t, m, { role: 'member', credential: 'session', subject: `u_member_${t}` });
  /** A member's session whose identity names these user groups. */
  const memberOf = (groups: number[], t = tenant, m = memory): Identity =>
    h.identity(t, m, { role: 'member', credential: 'session', subject: `u_member_${groups.join('_')}_${t}`, groups });

  const push = (who: Identity | null, body: unknown) => h.callGraph('POST', PUSH, who, body);
  const remove = (who: Identity | null, body: unknown) => h.callGraph('POST', DELETE, who, body);
  const pushOk = async (who: Identity, ccPairId: number, access: { public: boolean; groups: number[] }, documents: PushedDocument[]) => {
    const r = await push(who, { cc_pair_id: ccPairId, access, documents });
    expect({ status: r.status, body: r.status === 200 ? 'ok' : r.body }).toEqual({ status: 200, body: 'ok' });
    return r.body.results as Array<{ id: string; doc_id: string | null; outcome: string; reason?: string }>;
  };
  const retrieve = (who: Identity, query: string, extra: Record<string, unknown> = {}) => h.callGraph('POST', '/api/v1/memory/retrieve', who, { query, top_k: 20, ...extra });

  /** Waits until the worker indexed (or failed) every document given. */
  const indexed = (who: Identity, docIds: string[]) =>
    Promise.all(
      docIds.map((id) =>
        eventually(async () => {
          const r = await h.callGraph('GET', `/api/v1/memory/documents/${id}`, who);
          return r.status === 200 && r.body.status !== 'queued' ? r.body : undefined;
        }, 60_000, `document ${id} indexed`),
      ),
    );

  const rows = <T>(t: string, text: string, params: unknown[]) => h.db.withTenant(t, async (sql) => (await sql.query<T>(text, params)).rows);

  /** Every chunk of the memory (ids, and how many carry an embedding). */
  const chunksOf = async (t: string, m: string) => {
    const r = await rows<{ ids: string[]; embedded: number }>(
      t,
      `SELECT coalesce(array_agg(chunk_id::text ORDER BY chunk_id), '{}') AS ids, ${vectors ? 'count(embedding)' : '0'}::int AS embedded
         FROM graph.chunks WHERE tenant_id = $1 AND memory_id = $2`,
      [t, m],
    );
    return r[0]!;
  };

  /** The memory's BM25 statistics (the corpus row and every term still counted) and its entities' mention counts. */
  const bm25 = async (t: string, m: string) => ({
    corpus: (await rows<{ chunk_count: string; total_dl: string }>(t, `SELECT chunk_count::text, total_dl::text FROM graph.corpus_stats WHERE tenant_id = $1 AND memory_id = $2`, [t, m]))[0] ?? null,
    terms: await rows<{ term: string; df: number }>(t, `SELECT term, df FROM graph.term_stats WHERE tenant_id = $1 AND memory_id = $2 AND df > 0 ORDER BY term`, [t, m]),
    mentions: await rows<{ entity_key: string; mention_count: number }>(
      t,
      `SELECT entity_key, mention_count FROM graph.entities WHERE tenant_id = $1 AND memory_id = $2 AND mention_count > 0 ORDER BY entity_key`,
      [t, m],
    ),
  });

  const connectorRows = (t: string, m: string, ccPairId: number) =>
    rows<{ doc_id: string; external_id: string; access_public: boolean; access_groups: number[]; source: string }>(
      t,
      `SELECT doc_id, external_id, access_public, access_groups, source FROM graph.documents WHERE tenant_id = $1 AND memory_id = $2 AND cc_pair_id = $3 ORDER BY external_id`,
      [t, m, ccPairId],
    );

  beforeAll(async () => {
    h = await startHarness({ backend: 'postgres', via: 'gateway', graph: { config: { maxContentChars: MAX_CONTENT_CHARS } } });
    vectors = h.graph.describe().vectors;
  });
  afterAll(async () => {
    await h?.close();
  });

  describe('pushing', () => {
    it('creates, keeps unchanged (writing no chunk) and replaces documents, answering in input order', async () => {
      const who = admin();
      const a = sourceDocument('https://intranet.example.test/handbook', '# Handbook\n\nThe onboarding checklist covers laptops, badges and the payroll portal.');
      const b = sourceDocument('drive:file-b', 'The Kestrel migration moves billing to the new cluster in April.', { source_type: 'google_drive', title: 'Kestrel plan' });
      const created = await pushOk(who, 1, PUBLIC, [a, b]);
      expect(created.map((r) => [r.id, r.outcome])).toEqual([[a.id, 'created'], [b.id, 'created']]);
      const [docA, docB] = created.map((r) => r.doc_id as string);
      expect(docA).toMatch(/^doc_/);
      const views = await indexed(who, [docA!, docB!]);
      expect(views.map((v) => [v.status, v.source])).toEqual([['indexed', 'connector'], ['indexed', 'connector']]);
      const before = await chunksOf(tenant, memory);
      expect(before.ids.length).toBeGreaterThanOrEqual(2);
      if (vectors) expect(before.embedded).toBe(before.ids.length);

      // The same content again: nothing is accepted, so nothing is indexed again.
      const again = await pushOk(who, 1, PUBLIC, [b, a]);
      expect(again).toEqual([
        { id: b.id, doc_id: docB, outcome: 'unchanged' },
        { id: a.id, doc_id: docA, outcome: 'unchanged' },
      ]);
      await new Promise((r) => setTimeout(r, 1500));
      expect(await chunksOf(tenant, memory)).toEqual(before);
      const stillA = await h.callGraph('GET', `/api/v1/memory/documents/${docA}`, who);
      expect({ status: stillA.body.status, indexed_at: stillA.body.indexed_at }).toEqual({ status: 'indexed', indexed_at: views[0]!.indexed_at });

      // Another content under the same source id: the old copy goes, a new document is accepted and indexed.
      const changed = { ...a, text: '# Handbook\n\nThe onboarding checklist now also covers the security training.', content_hash: sha('v2') };
      const updated = await pushOk(who, 1, PUBLIC, [changed]);
      expect(updated).toEqual([{ id: a.id, doc_id: expect.stringMatching(/^doc_/), outcome: 'updated' }]);
      const newA = updated[0]!.doc_id as string;
      expect(newA).not.toBe(docA);
      expect((await h.callGraph('GET', `/api/v1/memory/documents/${docA}`, who)).status).toBe(404);
      await indexed(who, [newA]);
      expect(await rows(tenant, `SELECT chunk_id FROM graph.chunks WHERE tenant_id = $1 AND doc_id = $2`, [tenant, docA])).toEqual([]);
      // Ordered by source id: `drive:…` before `https:…`.
      expect((await connectorRows(tenant, memory, 1)).map((r) => [r.external_id, r.doc_id])).toEqual([[b.id, docB], [a.id, newA]]);
    });

    it('updates only the access of an unchanged document, re-indexing nothing', async () => {
      const who = admin();
      const d = sourceDocument('https://intranet.example.test/access', 'The Osprey roster lists the weekend on-call engineers.');
      const [first] = await pushOk(who, 2, PUBLIC, [d]);
      await indexed(who, [first!.doc_id as string]);
      const before = await chunksOf(tenant, memory);
      const [second] = await pushOk(who, 2, { public: false, groups: [9, 3, 9] }, [d]);
      expect(second).toEqual({ id: d.id, doc_id: first!.doc_id, outcome: 'unchanged' });
      expect((await connectorRows(tenant, memory, 2)).map((r) => [r.access_public, r.access_groups])).toEqual([[false, [3, 9]]]);
      const [third] = await pushOk(who, 2, PUBLIC, [d]);
      expect(third!.outcome).toBe('unchanged');
      expect((await connectorRows(tenant, memory, 2)).map((r) => [r.access_public, r.access_groups])).toEqual([[true, []]]);
      expect(await chunksOf(tenant, memory)).toEqual(before);
    });

    it('skips an empty text with a reason and cuts a text longer than the memory takes', async () => {
      const who = admin();
      const long = `The Plover archive. ${'Quarterly figures were filed on time. '.repeat(1500)}`;
      expect(long.length).toBeGreaterThan(MAX_CONTENT_CHARS * 2);
      const results = await pushOk(who, 3, PUBLIC, [sourceDocument('empty', ' \n\t '), sourceDocument('long', long)]);
      expect(results[0]).toEqual({ id: 'empty', doc_id: null, outcome: 'skipped', reason: expect.stringMatching(/empty/) });
      expect(results[1]).toMatchObject({ id: 'long', outcome: 'created' });
      const [stored] = await rows<{ n: number }>(tenant, `SELECT length(content) AS n FROM graph.documents WHERE tenant_id = $1 AND doc_id = $2`, [tenant, results[1]!.doc_id]);
      expect(stored!.n).toBeLessThanOrEqual(MAX_CONTENT_CHARS);
      expect(stored!.n).toBeGreaterThan(MAX_CONTENT_CHARS - 100);
      expect(await connectorRows(tenant, memory, 3)).toHaveLength(1);
    });

    it('reads a batch far larger than the memory routes\' body limit (2 MiB)', async () => {
      const docs = Array.from({ length: 6 }, (_, i) => sourceDocument(`big-${i}`, `Big page ${i}. ${'Lorem ipsum dolor sit amet. '.repeat(40_000)}`));
      expect(JSON.stringify(docs).length).toBeGreaterThan(6 * 1024 * 1024);
      const results = await pushOk(admin(), 6, PUBLIC, docs);
      expect(results.map((r) => r.outcome)).toEqual(Array(6).fill('created'));
    });

    it('masks sensitive values of the text and the metadata, keeping owners and the link as given', async () => {
      const who = admin();
      const [r] = await pushOk(who, 4, PUBLIC, [
        sourceDocument('dlp', 'The Falcon vendor card is 4111 1111 1111 1111 for renewals.', { metadata: { note: 'card 4111 1111 1111 1111', team: 'ops' } }),
      ]);
      const [row] = await rows<{ content: string; doc_metadata: Record<string, string>; primary_owners: string[]; link: string; dlp_matches: number }>(
        tenant,
        `SELECT content, doc_metadata, primary_owners, link, dlp_matches FROM graph.documents WHERE tenant_id = $1 AND doc_id = $2`,
        [tenant, r!.doc_id],
      );
      expect(row!.content).not.toContain('4111');
      expect(row!.dlp_matches).toBe(1);
      expect(row!.doc_metadata).toEqual({ note: 'card [REDACTED:card_number]', team: 'ops' });
      expect(row!.primary_owners).toEqual(['ada@example.test']);
      expect(row!.link).toBe('https://intranet.example.test/dlp');
    });

    it('never holds two copies of a document, however concurrently it is pushed', async () => {
      const who = admin();
      const ids = Array.from({ length: 6 }, (_, i) => `https://intranet.example.test/race/${i}`);
      // The same content twice at once: one creates, the other finds it (after its insert lost the race, if it did).
      const same = await Promise.all(ids.flatMap((id) => [0, 1].map(() => pushOk(who, 5, PUBLIC, [sourceDocument(id, `Race page ${id} about the Heron budget.`)]))));
      for (const id of ids) {
        const outcomes = same.flat().filter((r) => r.id === id).map((r) => r.outcome).sort();
        expect({ id, outcomes }).toEqual({ id, outcomes: ['created', 'unchanged'] });
      }
      // Different contents twice at once: one creates, the other replaces it.
      const other = ids.map((id) => `${id}/v2`);
      const different = await Promise.all(other.flatMap((id) => [1, 2].map((n) => pushOk(who, 5, PUBLIC, [sourceDocument(id, `Version ${n} of ${id}: the Heron budget.`)]))));
      for (const id of other) {
        const outcomes = different.flat().filter((r) => r.id === id).map((r) => r.outcome).sort();
        expect({ id, outcomes }).toEqual({ id, outcomes: ['created', 'updated'] });
      }
      const stored = await connectorRows(tenant, memory, 5);
      expect(stored.map((r) => r.external_id)).toEqual([...ids, ...other].sort());
      expect(h.logs.text()).not.toMatch(/"status":5\d\d/);
    });
  });

  describe('a batch is one unit', () => {
    it('takes overlapping batches pushed at once in opposite orders: no deadlock, no second copy, whole batches retried', async () => {
      const who = admin();
      const ids = Array.from({ length: 12 }, (_, i) => `https://intranet.example.test/overlap/${String(i).padStart(2, '0')}`);
      const docs = (n: number) => ids.map((id) => sourceDocument(id, `Version ${n} of ${id}: the Ibis release schedule.`));
      // Version 1 creates every page (the other batch then finds them unchanged), version 2 replaces every one.
      for (const [n, expected] of [[1, ['created', 'unchanged']], [2, ['unchanged', 'updated']]] as const) {
        const [a, b] = await Promise.all([pushOk(who, 8, PUBLIC, docs(n)), pushOk(who, 8, PUBLIC, docs(n).reverse())]);
        for (const id of ids) {
          const outcomes = [...a, ...b].filter((r) => r.id === id).map((r) => r.outcome).sort();
          expect({ n, id, outcomes }).toEqual({ n, id, outcomes: [...expected] });
        }
        const stored = await connectorRows(tenant, memory, 8);
        expect(stored.map((r) => r.external_id)).toEqual(ids);
        // Both answers name the document the memory holds.
        for (const r of [...a, ...b]) expect(stored.find((x) => x.external_id === r.id)!.doc_id).toBe(r.doc_id);
      }
      expect(h.logs.text()).not.toMatch(/"status":5\d\d/);
    });


    it('writes nothing of a batch one of whose documents the database refuses: no document, deletion, access change or message', async () => {
      const who = admin();
      const kept = sourceDocument('https://intranet.example.test/atomic/kept', 'The Gannet rota names the Monday reviewers.');
      const replaced = sourceDocument('https://intranet.example.test/atomic/replaced', 'The Gannet budget stays at four hundred pounds.');
      const first = await pushOk(who, 7, PUBLIC, [kept, replaced]);
      const before = await connectorRows(tenant, memory, 7);
      const [mark] = await rows<{ id: string }>(tenant, `SELECT coalesce(max(id), 0)::text AS id FROM runtime.outbox`, []);
      /** Outbox rows the push writes for this memory since the mark: the worker's messages, the DLP and routing events. */
      const messagesSince = () =>
        rows<{ n: number }>(
          tenant,
          `SELECT count(*)::int AS n FROM runtime.outbox
            WHERE id > $1::bigint AND ((topic = 'lore.memory.ingest' AND key = $2) OR (value->>'event' IN ('memory.ingest.auto_routed', 'memory.ingest.dlp_flagged') AND value->'scope'->>'memory_id' = $2))`,
          [mark!.id, memory],
        );

      // A new document, a replacement, an access change of a kept one, and a date PostgreSQL cannot store (year 0).
      const batch = [
        sourceDocument('https://intranet.example.test/atomic/new', 'The Gannet travel policy covers trains only.'),
        { ...replaced, text: 'The Gannet budget grows to five hundred pounds.', content_hash: sha('replaced v2') },
        kept,
        sourceDocument('https://intranet.example.test/atomic/refused', 'The Gannet archive card 4111 1111 1111 1111.', { updated_at: '0000-01-01T00:00:00Z' }),
      ];
      const refused = await push(who, { cc_pair_id: 7, access: PRIVATE, documents: batch });
      expect(refused.status).toBe(500);
      expect(await connectorRows(tenant, memory, 7)).toEqual(before);
      expect(before.map((r) => [r.access_public, r.access_groups])).toEqual([[true, []], [true, []]]);
      expect((await h.callGraph('GET', `/api/v1/memory/documents/${first[1]!.doc_id}`, who)).status).toBe(200);
      expect((await messagesSince())[0]!.n).toBe(0);

      // Without the refused document the same batch goes through whole.
      const results = await pushOk(who, 7, PRIVATE, batch.slice(0, 3));
      expect(results.map((r) => [r.id, r.outcome])).toEqual([[batch[0]!.id, 'created'], [replaced.id, 'updated'], [kept.id, 'unchanged']]);
      expect(results[2]!.doc_id).toBe(first[0]!.doc_id);
      expect((await connectorRows(tenant, memory, 7)).map((r) => [r.external_id, r.access_public, r.access_groups])).toEqual([
        [kept.id, false, [7, 12]],
        [batch[0]!.id, false, [7, 12]],
        [replaced.id, false, [7, 12]],
      ]);
      expect((await h.callGraph('GET', `/api/v1/memory/documents/${first[1]!.doc_id}`, who)).status).toBe(404);
      // Two documents accepted: each its worker's message and its auto_routed event.
      expect((await messagesSince())[0]!.n).toBe(4);
    });
  });

  describe('deleting', () => {
    it('deletes by source ids and the whole pair in batches, leaving the BM25 statistics as they were', async () => {
      const m = `mem_conn_delete_${run}`;
      const who = admin(tenant, m);
      // What the memory holds besides the pair: its statistics must come back exactly.
      const [base] = await pushOk(who, 90, PUBLIC, [sourceDocument('base', 'The Lapwing report stays: it belongs to another pair.')]);
      await indexed(who, [base!.doc_id as string]);
      const baseline = await bm25(tenant, m);
      expect(baseline.corpus).not.toBeNull();

      const docs = Array.from({ length: 150 }, (_, i) => sourceDocument(`page-${String(i).padStart(3, '0')}`, `Page ${i} of the Merlin wiki describes release ${i} and its rollback plan.`));
      const results = [...(await pushOk(who, 91, PUBLIC, docs.slice(0, 100))), ...(await pushOk(who, 91, PUBLIC, docs.slice(100)))];
      expect(results.every((r) => r.outcome === 'created')).toBe(true);
      await eventually(async () => {
        const [q] = await rows<{ n: number }>(tenant, `SELECT count(*)::int AS n FROM graph.documents WHERE tenant_id = $1 AND memory_id = $2 AND status = 'queued'`, [tenant, m]);
        return q!.n === 0 ? true : undefined;
      }, 120_000, 'the pair indexed');
      const loaded = await bm25(tenant, m);
      expect(loaded.corpus!.chunk_count).not.toBe(baseline.corpus!.chunk_count);
      // Terms and an entity every page shares: deleting many documents at once must subtract each page's count.
      expect(loaded.terms.find((x) => x.term === 'merlin')?.df).toBe(150 + (baseline.terms.find((x) => x.term === 'merlin')?.df ?? 0));
      expect(loaded.mentions.length).toBeGreaterThan(baseline.mentions.length);

      const byIds = await remove(who, { cc_pair_id: 91, ids: ['page-000', 'page-001', 'page-001', 'no-such-page'] });
      expect({ status: byIds.status, body: byIds.body }).toEqual({ status: 200, body: { deleted: 2 } });
      expect((await h.callGraph('GET', `/api/v1/memory/documents/${results[0]!.doc_id}`, who)).status).toBe(404);
      expect(await connectorRows(tenant, m, 91)).toHaveLength(148);

      const all = await remove(who, { cc_pair_id: 91 });
      expect({ status: all.status, body: all.body }).toEqual({ status: 200, body: { deleted: 148 } });
      expect(await connectorRows(tenant, m, 91)).toEqual([]);
      expect(await bm25(tenant, m)).toEqual(baseline);
      expect((await remove(who, { cc_pair_id: 91 })).body).toEqual({ deleted: 0 });
      // The other pair's document is still there and still found.
      expect((await connectorRows(tenant, m, 90)).map((r) => r.doc_id)).toEqual([base!.doc_id]);
      const found = await retrieve(who, 'Lapwing report');
      expect(found.body.chunks.map((c: any) => c.document_id)).toContain(base!.doc_id);
    });
  });

  describe('retrieval', () => {
    const m = `mem_conn_retrieve_${run}`;
    let web: string;
    let drive: string;
    let ingested: string;

    beforeAll(async () => {
      const who = admin(tenant, m);
      const results = await pushOk(who, 20, PUBLIC, [
        sourceDocument('https://intranet.example.test/puffin', 'The Puffin rollout schedule starts with the Lisbon office in May.', {
          primary_owners: ['ada@example.test', 'Grace Hopper'],
          secondary_owners: ['ops@example.test'],
          metadata: { language: 'en', section: 'projects' },
          updated_at: '2024-11-05T10:20:30.000Z',
        }),
      ]);
      web = results[0]!.doc_id as string;
      const [d] = await pushOk(who, 21, PUBLIC, [
        sourceDocument('drive:puffin-budget', 'The Puffin rollout budget was approved by finance in March.', { source_type: 'google_drive', link: 'https://docs.example.test/d/puffin', primary_owners: null, metadata: {} }),
      ]);
      drive = d!.doc_id as string;
      const ingest = await h.callGraph('POST', '/api/v1/memory/ingest', who, { content: 'Puffin rollout notes from the ingest route: Lisbon first.', routing: { mode: 'auto' } });
      expect(ingest.status).toBe(200);
      ingested = ingest.body.doc_id;
      await indexed(who, [web, drive, ingested]);
    });

    it('answers each chunk\'s source type, link, owners, metadata and the source\'s updated time', async () => {
      const r = await retrieve(admin(tenant, m), 'Puffin rollout');
      expect(r.status).toBe(200);
      const byDoc = new Map<string, any>(r.body.chunks.map((c: any) => [c.document_id, c]));
      expect(byDoc.get(web)).toMatchObject({
        source: 'connector',
        source_type: 'web',
        link: 'https://intranet.example.test/https%3A%2F%2Fintranet.example.test%2Fpuffin',
        primary_owners: ['ada@example.test', 'Grace Hopper'],
        secondary_owners: ['ops@example.test'],
        metadata: { language: 'en', section: 'projects' },
        updated_at: '2024-11-05T10:20:30.000Z',
      });
      expect(byDoc.get(drive)).toMatchObject({ source_type: 'google_drive', link: 'https://docs.example.test/d/puffin', primary_owners: null, secondary_owners: null, metadata: {} });
      const own = byDoc.get(ingested);
      expect(own).toMatchObject({ source: 'ingest', source_type: null, link: null, primary_owners: null, secondary_owners: null, metadata: {} });
      expect(Date.parse(own.updated_at)).toBeGreaterThan(Date.parse('2025-01-01T00:00:00Z'));
    });

    it('keeps to the given source types inside both searches', async () => {
      const who = admin(tenant, m);
      const docsOf = async (extra: Record<string, unknown>) => {
        const r = await retrieve(who, 'Puffin rollout', extra);
        expect(r.status).toBe(200);
        return new Set(r.body.chunks.map((c: any) => c.document_id));
      };
      expect(await docsOf({ source_types: ['google_drive'] })).toEqual(new Set([drive]));
      expect(await docsOf({ source_types: ['web', 'google_drive'] })).toEqual(new Set([web, drive]));
      expect(await docsOf({ source_types: ['file'] })).toEqual(new Set());
      expect(await docsOf({})).toEqual(new Set([web, drive, ingested]));
      // Search takes the same body.
      const answer = await h.callGraph('POST', '/api/v1/memory/search', who, { query: 'Puffin rollout budget', source_types: ['web'] });
      expect(answer.status).toBe(200);
      for (const c of answer.body.citations) expect(c.document_id).toBe(web);
      expect((await retrieve(who, 'Puffin', { source_types: Array.from({ length: 21 }, (_, i) => `t${i}`) })).status).toBe(400);
    });
  });

  describe('access', () => {
    const m = `mem_conn_access_${run}`;
    const SECRET_WORDS = 'Zephyrine quokka treasury';
    let privateDoc: string;
    let publicDoc: string;

    beforeAll(async () => {
      const who = admin(tenant, m);
      const [p] = await pushOk(who, 30, PRIVATE, [
        sourceDocument('drive:private-plan', `${SECRET_WORDS}: the acquisition of Marlin Ltd closes on 12 June. Acme Corp is headquartered in Oslo.`, { source_type: 'google_drive' }),
      ]);
      privateDoc = p!.doc_id as string;
      const [q] = await pushOk(who, 31, PUBLIC, [sourceDocument('https://intranet.example.test/public', 'The cafeteria menu changes every Monday. Acme Corp is headquartered in Bergen.')]);
      publicDoc = q!.doc_id as string;
      await indexed(who, [privateDoc, publicDoc]);
      expect((await h.callGraph('POST', '/api/v1/memory/vaults', who, { vault_id: 'v_target', name: 'Target' })).status).toBe(201);
    });

    it('never gives a non-administrator outside its groups a private document, even for a query that matches only it', async () => {
      const who = member(tenant, m);
      // Nearest neighbours always answer something: the public document, never the private one.
      const r = await retrieve(who, SECRET_WORDS);
      expect(r.status).toBe(200);
      expect(r.body.chunks.map((c: any) => c.document_id)).not.toContain(privateDoc);
      expect(JSON.stringify(r.body)).not.toMatch(/Zephyrine|Marlin|Oslo/);
      const broad = await retrieve(who, `${SECRET_WORDS} cafeteria menu Acme acquisition Marlin`);
      expect(broad.body.chunks.map((c: any) => c.document_id)).toEqual([publicDoc]);
      expect(JSON.stringify(broad.body)).not.toMatch(/Zephyrine|Marlin|Oslo/);

      // Only the private document says these (the query's own words may come back in follow-up suggestions).
      const PRIVATE_ONLY = /Marlin|Oslo|12 June/;
      const answer = await h.callGraph('POST', '/api/v1/memory/search', who, { query: SECRET_WORDS });
      expect(answer.status).toBe(200);
      expect(answer.body.citations.map((c: any) => c.document_id)).not.toContain(privateDoc);
      expect(JSON.stringify(answer.body)).not.toMatch(PRIVATE_ONLY);

      const stream = await h.callGraph('POST', '/api/v1/memory/search/stream', who, { query: SECRET_WORDS });
      expect(stream.status).toBe(200);
      expect(stream.text).not.toMatch(PRIVATE_ONLY);
      const [sources] = parseSse(stream.text);
      expect(sources!.event).toBe('sources');
      expect(sources!.data.sources.map((x: any) => x.document_id)).not.toContain(privateDoc);

      const list = await h.callGraph('GET', '/api/v1/memory/documents?limit=200', who);
      expect(list.body.documents.map((d: any) => d.doc_id)).toEqual([publicDoc]);
      const review = await h.callGraph('GET', '/api/v1/memory/review', who);
      expect(review.body.documents.map((d: any) => d.doc_id)).not.toContain(privateDoc);
      expect((await h.callGraph('GET', `/api/v1/memory/documents/${privateDoc}`, who)).status).toBe(404);
      expect((await h.callGraph('POST', `/api/v1/memory/review/${privateDoc}/file`, who, { vault_id: 'v_target' })).status).toBe(404);
      expect((await h.callGraph('DELETE', `/api/v1/memory/documents/${privateDoc}`, who)).status).toBe(404);
      // The contradiction between the two documents quotes the private one: not for this caller.
      const contradictions = await h.callGraph('GET', '/api/v1/memory/contradictions', who);
      expect(contradictions.status).toBe(200);
      expect(JSON.stringify(contradictions.body)).not.toContain(privateDoc);

      // An mk_ key's identity is no administrator either, nor is a member of other groups than the document's (12, 7).
      expect((await retrieve(h.identity(tenant, m, { role: 'memory', credential: 'mk' }), SECRET_WORDS)).body.chunks.map((c: any) => c.document_id)).not.toContain(privateDoc);
      const outsideM = memberOf([3, 8, 120], tenant, m);
      expect((await retrieve(outsideM, SECRET_WORDS)).body.chunks.map((c: any) => c.document_id)).not.toContain(privateDoc);
      expect((await h.callGraph('GET', `/api/v1/memory/documents/${privateDoc}`, outsideM)).status).toBe(404);
      expect(JSON.stringify((await h.callGraph('POST', '/api/v1/memory/search', outsideM, { query: SECRET_WORDS })).body)).not.toMatch(PRIVATE_ONLY);
    });

    it('gives a member in one of the document\'s groups what an administrator gets of it', async () => {
      // The document's groups are 12 and 7: a member of 7 (and of an unrelated 3) sees it everywhere it is listed.
      const who = memberOf([3, 7], tenant, m);
      const r = await retrieve(who, SECRET_WORDS);
      expect(r.status).toBe(200);
      expect(r.body.chunks.map((c: any) => c.document_id)).toContain(privateDoc);
      const answer = await h.callGraph('POST', '/api/v1/memory/search', who, { query: SECRET_WORDS });
      expect(answer.body.citations.map((c: any) => c.document_id)).toContain(privateDoc);
      const stream = await h.callGraph('POST', '/api/v1/memory/search/stream', who, { query: SECRET_WORDS });
      expect(parseSse(stream.text)[0]!.data.sources.map((x: any) => x.document_id)).toContain(privateDoc);
      const list = await h.callGraph('GET', '/api/v1/memory/documents?limit=200', who);
      expect(new Set(list.body.documents.map((d: any) => d.doc_id))).toEqual(new Set([privateDoc, publicDoc]));
      expect((await h.callGraph('GET', `/api/v1/memory/documents/${privateDoc}`, who)).status).toBe(200);
      const contradictions = await h.callGraph('GET', '/api/v1/memory/contradictions', who);
      expect(JSON.stringify(contradictions.body)).toContain(privateDoc);
      // Group 12 alone is enough too; the same member without groups gets nothing of it.
      expect((await retrieve(memberOf([12], tenant, m), SECRET_WORDS)).body.chunks.map((c: any) => c.document_id)).toContain(privateDoc);
      expect((await retrieve(memberOf([], tenant, m), SECRET_WORDS)).body.chunks.map((c: any) => c.document_id)).not.toContain(privateDoc);
      // The same group id in another tenant names another group: nothing of this tenant's.
      const foreign = await retrieve(memberOf([7], otherTenant, m), SECRET_WORDS);
      expect(foreign.body.chunks.map((c: any) => c.document_id)).not.toContain(privateDoc);
      expect(JSON.stringify(foreign.body)).not.toMatch(/Zephyrine|Marlin|Oslo/);
    });

    it('filters inside the full-text and the vector SQL, not after them', async () => {
      const s = { tenantId: tenant, memoryId: m };
      const chunkIdsOf = async (docId: string) => (await rows<{ id: string }>(tenant, `SELECT chunk_id::text AS id FROM graph.chunks WHERE tenant_id = $1 AND doc_id = $2`, [tenant, docId])).map((r) => r.id);
      const privateChunks = await chunkIdsOf(privateDoc);
      expect(privateChunks.length).toBeGreaterThan(0);
      // `visibleGroups`: absent, every document; else the public ones and those of the groups given (the document's: 12, 7).
      const lexical = (visibleGroups?: number[]) => h.db.withTenant(tenant, (sql) => lexicalSearch(sql, { ...s, ...(visibleGroups ? { visibleGroups } : {}) }, SECRET_WORDS, 40));
      expect((await lexical()).map((x) => x.chunk_id)).toEqual(expect.arrayContaining(privateChunks));
      expect((await lexical([])).map((x) => x.chunk_id)).toEqual([]);
      expect((await lexical([3, 120])).map((x) => x.chunk_id)).toEqual([]);
      expect((await lexical([3, 7])).map((x) => x.chunk_id)).toEqual(expect.arrayContaining(privateChunks));
      if (vectors) {
        const [embedding] = await h.graph.memory.embedder.embed([SECRET_WORDS]);
        const vector = (visibleGroups?: number[]) =>
          h.db.withTenant(tenant, (sql) => vectorSearch(sql, { ...s, ...(visibleGroups ? { visibleGroups } : {}) }, embedding!, h.graph.memory.embedder.model, 40));
        expect((await vector()).map((x) => x.chunk_id)).toEqual(expect.arrayContaining(privateChunks));
        for (const outside of [[], [3, 120]]) {
          const visible = (await vector(outside)).map((x) => x.chunk_id);
          expect(visible.length).toBeGreaterThan(0);
          for (const id of privateChunks) expect(visible).not.toContain(id);
        }
        expect((await vector([12])).map((x) => x.chunk_id)).toEqual(expect.arrayContaining(privateChunks));
      }
    });

    it('gives an administrator every document', async () => {
      const who = admin(tenant, m);
      const r = await retrieve(who, SECRET_WORDS);
      expect(r.body.chunks.map((c: any) => c.document_id)).toContain(privateDoc);
      expect((await h.callGraph('GET', `/api/v1/memory/documents/${privateDoc}`, who)).status).toBe(200);
      const list = await h.callGraph('GET', '/api/v1/memory/documents?limit=200', who);
      expect(new Set(list.body.documents.map((d: any) => d.doc_id))).toEqual(new Set([privateDoc, publicDoc]));
      const answer = await h.callGraph('POST', '/api/v1/memory/search', who, { query: SECRET_WORDS });
      expect(answer.body.citations.map((c: any) => c.document_id)).toContain(privateDoc);
      // The contradiction the non-administrator was not shown.
      const contradictions = await h.callGraph('GET', '/api/v1/memory/contradictions', who);
      expect(JSON.stringify(contradictions.body)).toContain(privateDoc);
      // An admin user's session is an administrator too.
      expect((await retrieve(h.identity(tenant, m, { role: 'admin', credential: 'session' }), SECRET_WORDS)).body.chunks.length).toBeGreaterThan(0);
    });

    it('follows an access change of an unchanged document at once', async () => {
      const who = admin(tenant, m);
      const doc = sourceDocument('drive:private-plan', `${SECRET_WORDS}: the acquisition of Marlin Ltd closes on 12 June. Acme Corp is headquartered in Oslo.`, { source_type: 'google_drive' });
      expect((await pushOk(who, 30, PUBLIC, [doc]))[0]!.outcome).toBe('unchanged');
      expect((await retrieve(member(tenant, m), SECRET_WORDS)).body.chunks.map((c: any) => c.document_id)).toContain(privateDoc);
      expect((await pushOk(who, 30, PRIVATE, [doc]))[0]!.outcome).toBe('unchanged');
      expect((await retrieve(member(tenant, m), SECRET_WORDS)).body.chunks.map((c: any) => c.document_id)).not.toContain(privateDoc);
    });
  });

  describe('tenants', () => {
    it('keeps another tenant with the same memory id and pair apart: it sees and deletes nothing of this one', async () => {
      const mine = admin();
      const theirs = admin(otherTenant, memory);
      const id = 'https://intranet.example.test/shared-id';
      const [a] = await pushOk(mine, 40, PUBLIC, [sourceDocument(id, 'The Avocet ledger belongs to the first tenant.')]);
      const [b] = await pushOk(theirs, 40, PUBLIC, [sourceDocument(id, 'The Avocet ledger belongs to the first tenant.')]);
      expect([a!.outcome, b!.outcome]).toEqual(['created', 'created']);
      expect(b!.doc_id).not.toBe(a!.doc_id);
      await indexed(mine, [a!.doc_id as string]);
      await indexed(theirs, [b!.doc_id as string]);
      const seen = await retrieve(theirs, 'Avocet ledger');
      expect(seen.body.chunks.map((c: any) => c.document_id)).toEqual([b!.doc_id]);
      expect((await h.callGraph('GET', `/api/v1/memory/documents/${a!.doc_id}`, theirs)).status).toBe(404);
      expect((await remove(theirs, { cc_pair_id: 40, ids: [id] })).body).toEqual({ deleted: 1 });
      expect((await remove(theirs, { cc_pair_id: 40 })).body).toEqual({ deleted: 0 });
      expect((await connectorRows(tenant, memory, 40)).map((r) => r.doc_id)).toEqual([a!.doc_id]);
      expect((await h.callGraph('GET', `/api/v1/memory/documents/${a!.doc_id}`, mine)).status).toBe(200);
    });
  });

  describe('refusals', () => {
    const body = { cc_pair_id: 50, access: PUBLIC, documents: [sourceDocument('refused', 'Never stored.')] };

    it('answers 401 without a valid identity, 404 without a memory, 403 to anyone but an administrator', async () => {
      for (const path of [PUSH, DELETE]) {
        const b = path === PUSH ? body : { cc_pair_id: 50 };
        const none = await h.callGraph('POST', path, null, b);
        expect({ path, status: none.status, code: none.body?.error?.code }).toEqual({ path, status: 401, code: 'UNAUTHORIZED' });
        expect((await h.callGraph('POST', path, admin(tenant, ''), b)).status).toBe(404);
        for (const who of [member(), h.identity(tenant, memory, { role: 'memory', credential: 'mk' }), h.identity(tenant, memory, { role: 'integration', credential: 'oauth' })]) {
          const r = await h.callGraph('POST', path, who, b);
          expect({ path, role: who.role, status: r.status, code: r.body?.error?.code }).toEqual({ path, role: who.role, status: 403, code: 'FORBIDDEN' });
        }
        expect((await h.callGraph('POST', path, h.identity(tenant, memory, { role: 'tenant_admin', scopes: { access: 'read' } }), b)).status).toBe(403);
      }
      expect(await connectorRows(tenant, memory, 50)).toEqual([]);
    });

    it('answers 422 with every issue to a body that breaks the schema', async () => {
      const bad = await push(admin(), {
        cc_pair_id: 0,
        access: { public: 'yes', groups: Array.from({ length: 101 }, (_, i) => i) },
        documents: [{ ...sourceDocument('x'.repeat(2049), 'text'), updated_at: 'yesterday', surprise: true }],
      });
      expect(bad.status).toBe(422);
      expect(bad.body.error).toMatchObject({ code: 'UNPROCESSABLE', request_id: expect.any(String) });
      const paths = bad.body.error.details.map((d: any) => d.path);
      expect(paths).toEqual(expect.arrayContaining(['cc_pair_id', 'access.public', 'access.groups', 'documents.0.id', 'documents.0.updated_at', 'documents.0']));
      const many = await push(admin(), { ...body, documents: Array.from({ length: 101 }, (_, i) => sourceDocument(`d${i}`, 'x')) });
      expect({ status: many.status, paths: many.body.error.details.map((d: any) => d.path) }).toEqual({ status: 422, paths: ['documents'] });
      expect((await push(admin(), { ...body, documents: [{ ...sourceDocument('a', 'b'), content_hash: 'h'.repeat(129) }] })).status).toBe(422);
      expect((await push(admin(), { ...body, extra: 1 })).status).toBe(422);
      expect((await push(admin(), { access: PUBLIC, documents: [] })).status).toBe(422);
      for (const b of [{ cc_pair_id: 50, ids: [] }, { cc_pair_id: 50, ids: Array.from({ length: 1001 }, (_, i) => `i${i}`) }, { ids: ['a'] }, { cc_pair_id: 50, ids: [''] }, { cc_pair_id: 1.5 }, { cc_pair_id: 50, all: true }]) {
        const r = await remove(admin(), b);
        expect({ body: b, status: r.status, code: r.body?.error?.code, details: Array.isArray(r.body?.error?.details) }).toEqual({ body: b, status: 422, code: 'UNPROCESSABLE', details: true });
      }
      // Bytes that are not clean JSON are the reader's 400, as on every route.
      const nul = await h.callGraph('POST', PUSH, admin(), { ...body, documents: [sourceDocument('nul', 'a\u0000b')] });
      expect({ status: nul.status, code: nul.body.error.code }).toEqual({ status: 400, code: 'BAD_REQUEST' });
      expect(await connectorRows(tenant, memory, 50)).toEqual([]);
    });

    it('is not reachable through the gateway (it never forwards /internal to the graph)', async () => {
      const who = admin();
      for (const path of [PUSH, DELETE]) {
        const target = await h.authorize(who, path);
        const r = await fetch(target.url, { method: 'POST', headers: { ...target.headers, 'content-type': 'application/json' }, body: JSON.stringify(body) });
        expect({ path, status: r.status }).toEqual({ path, status: 404 });
        // Nor on its admin listener, which serves its own /internal/v1 routes.
        const adminListener = await fetch(`${h.gateway!.adminUrl}${path}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
        expect({ path, status: adminListener.status }).toEqual({ path, status: 404 });
      }
      // The same key reaches the graph's memory routes through the gateway.
      expect((await h.call('GET', '/api/v1/memory/documents', who)).status).toBe(200);
      expect(await connectorRows(tenant, memory, 50)).toEqual([]);
    });
  });
});
