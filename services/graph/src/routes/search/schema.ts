import { z } from 'zod';

export const SearchBodySchema = z.object({
  query: z.string().trim().min(1, 'query is required').max(2_000),
  vault_ids: z.array(z.string().min(1).max(64)).max(50).optional(),
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
