import { jsonSchemaOf } from '@lore/runtime';
import { z } from 'zod';

export const SearchBodySchema = z.object({
  query: z.string().trim().min(1, 'query is required').max(2_000),
  vault_ids: z.array(z.string().min(1).max(64)).max(50).optional(),
  source_types: z
    .array(z.string().min(1).max(64))
    .max(20)
    .optional()
    .describe('only chunks of documents a connector of these kinds pushed (web, file, google_drive...); ingested and uploaded documents have none'),
  top_k: z.number().int().min(1).max(20).optional(),
});

export const CitationSchema = z.object({ index: z.number().int().min(1), title: z.string(), document_id: z.string() });

export const SearchAnswerSchema = z.object({
  answer: z.string(),
  citations: z.array(CitationSchema),
  chunk_count: z.number().int().min(0),
  suggested_followups: z.array(z.string()),
  retrieval: z.enum(['hybrid', 'lexical']),
});

/** The non-streamed answer, and the `done` frame of the stream. */
export function presentSearchAnswer(
  r: { answer: string; citations: Array<{ index: number; title: string; document_id: string }>; chunk_count: number; suggested_followups: string[] },
  retrieval: 'hybrid' | 'lexical',
): z.input<typeof SearchAnswerSchema> {
  return {
    answer: r.answer,
    citations: r.citations.map((c) => ({ index: c.index, title: c.title, document_id: c.document_id })),
    chunk_count: r.chunk_count,
    suggested_followups: r.suggested_followups,
    retrieval,
  };
}

/** One retrieved chunk, whole: what a client (or core's chat) answers from itself. */
export const RetrievedChunkSchema = z.object({
  index: z.number().int().min(1),
  document_id: z.string(),
  chunk_id: z.string(),
  chunk_ind: z.number().int().min(0).describe('the chunk\'s position in its document'),
  title: z.string(),
  vault_id: z.string(),
  heading: z.string().nullable(),
  content: z.string(),
  snippet: z.string(),
  score: z.number().describe('reciprocal-rank-fusion score; higher is better, comparable within one answer only'),
  source: z.string().describe('how the document arrived: ingest, upload or connector'),
  updated_at: z.string().describe('when the source last changed the document, where a connector said; else when the memory last changed it'),
  source_type: z.string().nullable().describe('the connector\'s kind (web, file, google_drive...); null for ingested and uploaded documents'),
  link: z.string().nullable().describe('where the document lives at its source; null for ingested and uploaded documents'),
  primary_owners: z.array(z.string()).nullable(),
  secondary_owners: z.array(z.string()).nullable(),
  metadata: z.record(z.string(), z.string()).describe('the source\'s attributes of the document; {} when it has none'),
});

export const RetrievalSchema = z.object({ retrieval: z.enum(['hybrid', 'lexical']), chunk_count: z.number().int().min(0), chunks: z.array(RetrievedChunkSchema) });

export function presentRetrieval(r: {
  mode: 'hybrid' | 'lexical';
  sources: Array<{
    index: number; document_id: string; chunk_id: string; chunk_ind: number; title: string; vault_id: string; heading: string | null; content: string; snippet: string;
    score: number; source: string; updated_at: Date; source_type: string | null; link: string | null; primary_owners: string[] | null; secondary_owners: string[] | null;
    metadata: Record<string, string>;
  }>;
}): z.input<typeof RetrievalSchema> {
  return {
    retrieval: r.mode,
    chunk_count: r.sources.length,
    chunks: r.sources.map((c) => ({
      index: c.index, document_id: c.document_id, chunk_id: c.chunk_id, chunk_ind: c.chunk_ind, title: c.title, vault_id: c.vault_id, heading: c.heading,
      content: c.content, snippet: c.snippet, score: c.score, source: c.source, updated_at: c.updated_at.toISOString(),
      source_type: c.source_type, link: c.link, primary_owners: c.primary_owners, secondary_owners: c.secondary_owners, metadata: c.metadata,
    })),
  };
}

export const StreamSourceSchema = z.object({ index: z.number().int().min(1), title: z.string(), document_id: z.string(), vault_id: z.string(), snippet: z.string() });

/** The first frame of the stream: every chunk the answer may cite, with its index. */
export const SourcesFrameSchema = z.object({ retrieval: z.enum(['hybrid', 'lexical']), chunk_count: z.number().int().min(0), sources: z.array(StreamSourceSchema) });

export function presentSources(
  retrieval: 'hybrid' | 'lexical',
  sources: Array<{ index: number; title: string; document_id: string; vault_id: string; snippet: string }>,
): z.input<typeof SourcesFrameSchema> {
  return {
    retrieval,
    chunk_count: sources.length,
    sources: sources.map((s) => ({ index: s.index, title: s.title, document_id: s.document_id, vault_id: s.vault_id, snippet: s.snippet })),
  };
}

/** The stream's media type, with each frame's `data` as its JSON Schema says (docs/memory.md, "Streamed search frames"). */
export function streamContent(): Record<string, { schema?: Record<string, unknown> }> {
  return {
    'text/event-stream': {
      schema: {
        type: 'string',
        description:
          'Frames `id: <n>\\nevent: <name>\\ndata: <one-line JSON>\\n\\n`, ids from 0: one `sources`, then `token` frames ' +
          '(`{"text"}`, citation-checked), then `done` (the same object as POST /search answers) or, after a failure, `error` (`{"code","message"}`).',
        'x-frames': {
          sources: jsonSchemaOf(SourcesFrameSchema),
          token: jsonSchemaOf(z.object({ text: z.string() })),
          done: jsonSchemaOf(SearchAnswerSchema),
          error: jsonSchemaOf(z.object({ code: z.literal('INTERNAL'), message: z.string() })),
        },
      },
    },
  };
}
