import { z } from 'zod';
import { additive, defineRoute, serverTools, open, read, text } from './route-tools';

/**
 * Tools beyond spec 3's table: spec 1's memory search and ingest, at MEMORY_URL (docs/mcp.md, "Memory").
 * Names of our design: memory_search and memory_ingest. Spec 1's routes take the key only as `x-api-key`.
 */

/** The largest text `memory_ingest` takes: the memory API's own limit on a document's content (500,000 characters). */
export const MAX_INGEST_CHARS = 500_000;

export const memoryRoutes = [
  defineRoute({
    name: 'memory_search',
    description: 'Search the memory: an answer written from the best passages, with numbered citations and follow-up questions.',
    module: 'memory',
    write: false,
    input: {
      query: text(2_000),
      vault_ids: z.array(text(64)).min(1).max(50).optional().describe('only these vaults'),
      source_types: z.array(text(64)).min(1).max(20).optional().describe('only documents connectors of these kinds pushed (web, file, google_drive...)'),
      top_k: z.number().int('must be an integer').min(1).max(20).optional().describe('passages to answer from'),
    },
    data: open({
      answer: z.string(),
      citations: z.array(open({ index: z.number(), title: z.string(), document_id: z.string() })),
      chunk_count: z.number(),
      suggested_followups: z.array(z.string()),
    }),
    annotations: read('Search the memory'),
    request: (a) => ({ base: 'memory', method: 'POST', path: '/api/v1/memory/search', keyHeader: 'x-api-key', json: { query: a.query, vault_ids: a.vault_ids, source_types: a.source_types, top_k: a.top_k } }),
  }),
  defineRoute({
    name: 'memory_ingest',
    description: 'Store a text in the memory. Routed to a vault automatically (needs_review when unsure), or into the named vault.',
    module: 'memory',
    write: true,
    input: {
      content: text(MAX_INGEST_CHARS).describe('the text, stored as given (not trimmed), as POST /api/v1/memory/ingest stores it'),
      content_type: z.enum(['text', 'markdown', 'html']).optional().describe('text (the default), markdown or html'),
      title: text(500).optional(),
      vault_id: text(64).optional().describe('store in this vault instead of routing automatically'),
    },
    data: open({ doc_id: z.string(), vault_id: z.string(), routing_confidence: z.number(), needs_review: z.boolean(), dlp_matches: z.number() }),
    annotations: additive('Ingest into the memory'),
    request: (a) => ({
      base: 'memory', method: 'POST', path: '/api/v1/memory/ingest', keyHeader: 'x-api-key',
      json: { content: a.content, content_type: a.content_type, title: a.title, routing: a.vault_id ? { mode: 'manual', vault_id: a.vault_id } : { mode: 'auto' } },
    }),
  }),
];

/** The tools as the server registers them. */
export const memoryTools = serverTools(memoryRoutes);
