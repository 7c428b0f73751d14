import { IdentitySigner, type KnowledgeSearch, type RetrievedChunk } from '@lore/runtime';
import { extractCompanyFactsFromText, extractPersonFactsFromText } from '../domain/company-page';
import { extractCriteriaByRules } from '../domain/criteria';
import type { Criterion } from '../domain/workflow';
import { candidateFromKnowledge, fixedCells, type KnowledgeDocument } from './list-building';
import { directoryScorer, knowledgeSource } from './list-sources';

const NOW = '2026-11-25T10:00:00.000Z';
const SECRET = 'k'.repeat(40);

const FINOVO = [
  '# Finovo',
  'Company: Finovo GmbH',
  'Website: https://www.finovo.example/',
  'Industry: Fintech',
  'Headquarters: Berlin, Germany',
  'Employees: 120',
  'Founded in 2016, Finovo builds payment software for small shops.',
].join('\n');

const doc = (over: Partial<KnowledgeDocument> = {}): KnowledgeDocument => ({
  document_id: 'doc-1',
  title: 'Finovo — company profile',
  link: null,
  source_type: null,
  text: FINOVO,
  snippet: 'Finovo GmbH, Fintech, Berlin',
  ...over,
});

const chunk = (over: Partial<RetrievedChunk>): RetrievedChunk => ({
  index: 1,
  document_id: 'doc-1',
  chunk_id: 'c1',
  chunk_ind: 0,
  title: 'Finovo',
  vault_id: 'v',
  heading: null,
  content: '',
  snippet: '',
  score: 1,
  source: 'ingest',
  updated_at: NOW,
  source_type: null,
  link: null,
  primary_owners: null,
  secondary_owners: null,
  metadata: {},
  ...over,
});

describe('a company or a person from a text document', () => {
  it('reads a company\'s name, website, industry, location, size and founding year from labelled lines and sentences', () => {
    const f = extractCompanyFactsFromText(FINOVO, 'Finovo — company profile');
    expect(f).toMatchObject({ name: 'Finovo GmbH', website: 'https://www.finovo.example/', industry: 'Fintech', headquarters: 'Berlin, Germany', employees: 120, founded: '2016' });
  });

  it('reads the same facts from a chunk whose line breaks retrieval joined', () => {
    const flat = 'Finovo GmbH. Company: Finovo GmbH Website: https://finovo.example/ Industry: Fintech Headquarters: Berlin, Germany Employees: 120 Founded: 2016 Finovo GmbH builds payment software.';
    expect(extractCompanyFactsFromText(flat, 'Finovo GmbH')).toMatchObject({ name: 'Finovo GmbH', website: 'https://finovo.example/', industry: 'Fintech', headquarters: 'Berlin, Germany', employees: 120, founded: '2016' });
    expect(extractPersonFactsFromText('Name: Ada Brook Title: Head of Sales Email: ada@finovo.example', null)).toMatchObject({ name: 'Ada Brook', title: 'Head of Sales', company_domain: 'finovo.example' });
  });

  it('takes the name from the title, else the first heading, and a website from a bare domain or the first address in the text', () => {
    expect(extractCompanyFactsFromText('Industry: Retail\nDomain: shopwell.example', 'Shopwell | notes')).toMatchObject({ name: 'Shopwell', website: 'https://shopwell.example/', industry: 'Retail' });
    expect(extractCompanyFactsFromText('# Brightline\nSee https://brightline.example/about for more.\nThe team is based in Munich, Germany.', null)).toMatchObject({ name: 'Brightline', website: 'https://brightline.example/about', headquarters: 'Munich, Germany' });
    expect(extractCompanyFactsFromText('no facts at all', null)).toMatchObject({ name: null, website: null, industry: null });
  });

  it('reads a person from labelled lines (employer domain from the e-mail) or a name-and-role line; none without a title', () => {
    expect(extractPersonFactsFromText('Name: Ada Brook\nTitle: Chief Financial Officer\nCompany: Finovo GmbH\nEmail: ada@finovo.example\nLocation: Berlin', null)).toEqual({
      name: 'Ada Brook', title: 'Chief Financial Officer', company: 'Finovo GmbH', email: 'ada@finovo.example', location: 'Berlin', company_domain: 'finovo.example',
    });
    expect(extractPersonFactsFromText('Our team\nAda Brook — Chief Executive Officer', null)).toMatchObject({ name: 'Ada Brook', title: 'Chief Executive Officer' });
    expect(extractPersonFactsFromText('Name: Ada Brook\nLikes sailing.', null)).toBeNull();
  });
});

describe('candidates from the tenant\'s knowledge', () => {
  it('makes a company keyed by its domain whose every fixed cell names the document, its link, the snippet and when it was read', () => {
    const c = candidateFromKnowledge('company_search', doc({ link: 'https://wiki.example/finovo', source_type: 'web' }), NOW)!;
    expect(c.entityKey).toBe('finovo.example');
    expect(c.data).toMatchObject({ name: 'Finovo GmbH', domain: 'finovo.example', industry: 'Fintech', location: 'Berlin, Germany', employees: 120, founded: 2016 });
    const cells = fixedCells('company_search', 'r1', c);
    for (const id of ['name', 'domain', 'industry', 'location']) {
      expect(cells[id]).toMatchObject({ status: 'completed', metadata: { source: 'knowledge', document_id: 'doc-1', source_url: 'https://wiki.example/finovo', snippet: 'Finovo GmbH, Fintech, Berlin', fetched_at: NOW } });
    }
    // An ingested document has no link: its source is named by its id.
    expect(candidateFromKnowledge('company_search', doc(), NOW)!.provenance.source_url).toBe('knowledge:doc-1');
  });

  it('makes no company of a document that names one but states nothing about it, and no person without a title', () => {
    expect(candidateFromKnowledge('company_search', doc({ title: 'Meeting notes', text: 'We talked about the roadmap.' }), NOW)).toBeNull();
    expect(candidateFromKnowledge('people_search', doc(), NOW)).toBeNull();
    const p = candidateFromKnowledge('people_search', doc({ text: 'Name: Ada Brook\nRole: Head of Sales\nEmail: ada@finovo.example' }), NOW)!;
    expect(p).toMatchObject({ entityKey: 'ada brook@finovo.example', data: { name: 'Ada Brook', title: 'Head of Sales' }, provenance: { source: 'knowledge', document_id: 'doc-1' } });
  });

  it('scores a knowledge candidate like the others: a hard filter it fails excludes it', async () => {
    const criteria = extractCriteriaByRules('fintech companies in Berlin', 'company').criteria as unknown as Criterion[];
    const scorer = directoryScorer(undefined);
    const berlin = candidateFromKnowledge('company_search', doc(), NOW)!;
    const munich = candidateFromKnowledge('company_search', doc({ document_id: 'doc-2', text: FINOVO.replace('Berlin, Germany', 'Munich, Germany').replace('finovo', 'paymuc') }), NOW)!;
    const [a, b] = await scorer.score('t', 'company_search', [berlin, munich], criteria);
    expect(a!.accepted).toBe(true);
    expect(b!.accepted).toBe(false);
  });
});

describe('the knowledge source', () => {
  it('retrieves as the starter (tenant, workspace, memory, role, groups; read-only) and joins each document\'s chunks in order', async () => {
    const signer = new IdentitySigner(SECRET);
    const seen: Array<{ token: string; query: string; topK: number | undefined }> = [];
    const search: KnowledgeSearch = {
      async retrieve(token, query, topK) {
        seen.push({ token, query, topK });
        return [
          chunk({ document_id: 'd1', chunk_ind: 1, content: 'Industry: Fintech', snippet: 'best', link: 'https://drive.example/d1', source_type: 'google_drive' }),
          chunk({ document_id: 'd2', chunk_ind: 0, content: 'other', title: 'Other' }),
          chunk({ document_id: 'd1', chunk_ind: 0, content: 'Company: Finovo' }),
        ];
      },
    };
    const docs = await knowledgeSource(search, signer).documents('t-1', { workspace_id: 'w-1', memory_id: 'm-1', credential: 'session', subject: 'u-1', role: 'member', groups: [3] }, 'fintech Berlin', new AbortController().signal);
    expect(docs).toEqual([
      { document_id: 'd1', title: 'Finovo', link: 'https://drive.example/d1', source_type: 'google_drive', text: 'Company: Finovo\nIndustry: Fintech', snippet: 'best' },
      { document_id: 'd2', title: 'Other', link: null, source_type: null, text: 'other', snippet: '' },
    ]);
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ query: 'fintech Berlin', topK: 20 });
    expect(await signer.verify(seen[0]!.token)).toMatchObject({ tenant_id: 't-1', workspace_id: 'w-1', memory_id: 'm-1', credential: 'session', subject: 'u-1', role: 'member', groups: [3], scopes: { access: 'read' } });
  });
});
