import type { Db } from '@lore/runtime';
import {
  closeEdgesOfSources,
  insertGraph,
  listEdges,
  nodeRef,
  nodesByIds,
  openEdges,
  upsertNodes,
  type EdgeRow,
  type NodeInput,
  type NodeRow,
} from '../../services/graph/src/store/knowledge-graphs';
import type { Harness } from '../memory/support';

export interface SeededGraph {
  graphId: string;
  ids: Record<'acme' | 'zoe' | 'ada' | 'cto' | 'zurich' | 'region' | 'alps' | 'globex', string>;
}

/**
 * A small knowledge graph written through the knowledge-graph store (as a job writes one): Acme Corp (domain
 * acme.example) with Zoë Brook working there now as its CTO, Ada Park who worked there (an edge closed since),
 * Zürich → Swiss Region → Alps (one, two and three hops from Acme), and Globex elsewhere.
 */
export async function seedChatGraph(db: Db, tenant: string, graphId: string): Promise<SeededGraph> {
  return db.withTenant(tenant, async (sql) => {
    await insertGraph(sql, tenant, { graph_id: graphId, name: 'Chat test graph', description: '', source_type: 'list' });
    const row = (id: string) => ({ kind: 'row' as const, id: `seed:${id}` });
    const nodes: NodeInput[] = [
      { label: 'Company', key: 'domain:acme.example', name: 'Acme Corp', properties: { name: 'Acme Corp', domain: 'acme.example', industry: 'Software' }, source: row('1') },
      { label: 'Person', key: 'profile:linkedin.com/in/zoe-brook', name: 'Zoë Brook', properties: { name: 'Zoë Brook', linkedin_url: 'https://www.linkedin.com/in/zoe-brook' }, source: row('1') },
      { label: 'Person', key: 'profile:linkedin.com/in/ada-park', name: 'Ada Park', properties: { name: 'Ada Park', linkedin_url: 'https://www.linkedin.com/in/ada-park' }, source: row('2') },
      { label: 'Position', key: 'title:chief technology officer|acme.example', name: 'Chief Technology Officer', properties: { name: 'Chief Technology Officer', title: 'Chief Technology Officer', aliases: ['CTO'] }, source: row('1') },
      { label: 'Location', key: 'name:zurich', name: 'Zürich', properties: { name: 'Zürich' }, source: row('1') },
      { label: 'Location', key: 'name:swiss region', name: 'Swiss Region', properties: { name: 'Swiss Region' }, source: row('3') },
      { label: 'Location', key: 'name:alps', name: 'Alps', properties: { name: 'Alps' }, source: row('3') },
      { label: 'Company', key: 'domain:globex.example', name: 'Globex', properties: { name: 'Globex', domain: 'globex.example' }, source: row('4') },
    ];
    const { ids } = await upsertNodes(sql, tenant, graphId, nodes);
    const id = (label: NodeInput['label'], key: string) => ids.get(nodeRef(label, key)) as string;
    const n = {
      acme: id('Company', 'domain:acme.example'),
      zoe: id('Person', 'profile:linkedin.com/in/zoe-brook'),
      ada: id('Person', 'profile:linkedin.com/in/ada-park'),
      cto: id('Position', 'title:chief technology officer|acme.example'),
      zurich: id('Location', 'name:zurich'),
      region: id('Location', 'name:swiss region'),
      alps: id('Location', 'name:alps'),
      globex: id('Company', 'domain:globex.example'),
    };
    await openEdges(sql, tenant, graphId, 'seed-job', [
      { from: n.zoe, to: n.acme, label: 'WORKS_AT', source: row('1') },
      { from: n.zoe, to: n.cto, label: 'HOLDS_POSITION', source: row('1') },
      { from: n.cto, to: n.acme, label: 'POSITION_AT', source: row('1') },
      { from: n.acme, to: n.zurich, label: 'LOCATED_IN', source: row('1') },
      { from: n.ada, to: n.acme, label: 'WORKS_AT', source: row('2') },
      { from: n.zurich, to: n.region, label: 'LOCATED_IN', source: row('3') },
      { from: n.region, to: n.alps, label: 'LOCATED_IN', source: row('3') },
      { from: n.ada, to: n.globex, label: 'WORKS_AT', source: row('4') },
    ]);
    // Ada left Acme: the row that said so no longer does, so its edge is closed (kept as history).
    await closeEdgesOfSources(sql, tenant, graphId, 'row', ['seed:2'], new Set());
    return { graphId, ids: n };
  });
}

export async function storedNodes(db: Db, tenant: string, graphId: string, ids: string[]): Promise<NodeRow[]> {
  return db.withTenant(tenant, (sql) => nodesByIds(sql, tenant, graphId, ids));
}

export async function storedEdges(db: Db, tenant: string, graphId: string): Promise<EdgeRow[]> {
  return db.withTenant(tenant, (sql) => listEdges(sql, tenant, graphId, { limit: 10_000 }));
}

/** Ingests a text document and returns its id. */
export async function ingestOk(h: Harness, who: ReturnType<Harness['identity']>, content: string): Promise<string> {
  const r = await h.call('POST', '/api/v1/memory/ingest', who, { content, content_type: 'text', routing: { mode: 'review' } });
  if (r.status !== 200) throw new Error(`ingest failed: ${r.status} ${r.text}`);
  return r.body.doc_id as string;
}
