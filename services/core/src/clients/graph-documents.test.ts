import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { GraphConnectorDocuments, PUSH_BOUNDS } from './graph-documents';

describe('GraphConnectorDocuments', () => {
  let server: Server;
  let received: any;
  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (c: string) => (body += c));
      req.on('end', () => {
        received = JSON.parse(body);
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ results: received.documents.map((d: { id: string }) => ({ id: d.id, doc_id: 'doc_1', outcome: 'created' })) }));
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  });
  afterAll(() => new Promise((r) => server.close(r)));

  it('drops NUL characters and replaces lone surrogates, so one odd page never refuses its batch', async () => {
    const client = new GraphConnectorDocuments({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, timeoutMs: 5_000 });
    const doc = {
      id: 'https://example.com/a', title: 'Ti\u0000tle \uD800', text: 'a\u0000b \uDC00 c \uD83D\uDE00', link: 'https://example.com/a', source_type: 'web' as const,
      updated_at: null, primary_owners: ['ow\u0000ner'], secondary_owners: null, metadata: { k: 'v\u0000' }, content_hash: 'h',
    };
    const results = await client.push('token', 7, { public: true, groups: [] }, [doc]);
    expect(results).toEqual([{ id: 'https://example.com/a', doc_id: 'doc_1', outcome: 'created' }]);
    const sent = received.documents[0];
    expect(sent.title).toBe('Title \uFFFD');
    expect(sent.text).toBe('ab \uFFFD c \uD83D\uDE00');
    expect(sent.primary_owners).toEqual(['owner']);
    expect(sent.metadata).toEqual({ k: 'v' });
    expect(received.cc_pair_id).toBe(7);
    expect(sent.updated_at).toBeNull();
  });

  it('sends a date the memory can store, and no date for one it cannot', async () => {
    const client = new GraphConnectorDocuments({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, timeoutMs: 5_000 });
    const base = { id: 'x', title: 't', text: 'x', link: 'https://example.com/x', source_type: 'web' as const, primary_owners: null, secondary_owners: null, metadata: {}, content_hash: 'h' };
    const dates: Array<[Date, string | null]> = [
      [new Date('2026-02-05T00:00:00Z'), '2026-02-05T00:00:00.000Z'],
      [new Date('0000-01-01T00:00:00Z'), null],
      [new Date('+010000-01-01T00:00:00Z'), null],
      [new Date('not a date'), null],
    ];
    for (const [date, expected] of dates) {
      await client.push('token', 7, { public: true, groups: [] }, [{ ...base, updated_at: date }]);
      expect(received.documents[0].updated_at).toBe(expected);
    }
  });

  it('cuts every field the graph bounds to its bound, so one odd document never refuses its batch', async () => {
    const client = new GraphConnectorDocuments({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, timeoutMs: 5_000 });
    const long = (n: number) => 'x'.repeat(n);
    // A title whose cut would fall between the halves of an emoji.
    const title = `${long(PUSH_BOUNDS.title - 1)}\uD83D\uDE00 and more`;
    const metadata: Record<string, string> = { [`${long(PUSH_BOUNDS.metadataKey)}-tail`]: long(PUSH_BOUNDS.metadataValue + 10) };
    for (let i = 0; i < PUSH_BOUNDS.metadataEntries + 5; i++) metadata[`k${i}`] = 'v';
    const doc = {
      id: 'https://example.com/long', title, text: long(10), link: `https://example.com/${long(PUSH_BOUNDS.link)}`, source_type: 'web' as const,
      updated_at: null, primary_owners: Array.from({ length: PUSH_BOUNDS.owners + 1 }, () => long(PUSH_BOUNDS.owner + 1)), secondary_owners: ['short'],
      metadata, content_hash: long(PUSH_BOUNDS.contentHash + 1),
    };
    await client.push('token', 7, { public: true, groups: [] }, [doc]);
    const sent = received.documents[0];
    expect(sent.id).toBe(doc.id);
    expect(sent.title).toBe(long(PUSH_BOUNDS.title - 1));
    expect(sent.link).toHaveLength(PUSH_BOUNDS.link);
    expect(sent.primary_owners).toHaveLength(PUSH_BOUNDS.owners);
    expect(sent.primary_owners.every((o: string) => o.length === PUSH_BOUNDS.owner)).toBe(true);
    expect(sent.secondary_owners).toEqual(['short']);
    const entries = Object.entries(sent.metadata as Record<string, string>);
    expect(entries).toHaveLength(PUSH_BOUNDS.metadataEntries);
    expect(entries[0]).toEqual([long(PUSH_BOUNDS.metadataKey), long(PUSH_BOUNDS.metadataValue)]);
    expect(entries.every(([k, v]) => k.length <= PUSH_BOUNDS.metadataKey && v.length <= PUSH_BOUNDS.metadataValue)).toBe(true);
    expect(sent.content_hash).toHaveLength(PUSH_BOUNDS.contentHash);
    expect(sent.text).toBe(long(10));
  });
});
