import { z } from 'zod';
import type { DirectoryPage } from '../../application/directory';

/** The longest offset a search pages to (deeper pages cost a scan of everything before them). */
export const MAX_SEARCH_OFFSET = 100_000;

/** The body of the database-search routes (our design: spec 3 says the searches exist, not their shape). */
export const databaseSearchBody = z.object({
  filter: z
    .record(z.string(), z.unknown())
    .default({})
    .describe('an Atlas-style filter over the record documents: `{ "location.country": "DE", "employees": { "$gte": 50 }, "$or": [...] }` (docs/agents.md lists the operators)'),
  limit: z.number().int().min(1).max(100).default(25).describe('records in this page'),
  offset: z.number().int().min(0).max(MAX_SEARCH_OFFSET).default(0).describe('records skipped before this page'),
});

const recordView = z
  .object({
    id: z.string().describe('the record id, stable within the tenant'),
    source: z.string().describe('where the record came from: `csv:<list_id>`, `list:<list_id>` or a URL'),
    updated_at: z.string().describe('when the record was last written (ISO 8601)'),
  })
  .catchall(z.unknown())
  .describe("the record's document fields, with its id, source and updated_at");

export const databaseSearchView = z.object({
  success: z.literal(true),
  data: z.array(recordView).describe('the matching records, most recently updated first'),
  count: z.number().int().describe('how many records match in all (every page)'),
  limit: z.number().int(),
  offset: z.number().int(),
});

export function presentSearch(page: DirectoryPage, limit: number, offset: number): z.input<typeof databaseSearchView> {
  return {
    success: true,
    data: page.records.map((r) => ({ ...r.data, id: r.id, source: r.source, updated_at: r.updatedAt })),
    count: page.count,
    limit,
    offset,
  };
}
