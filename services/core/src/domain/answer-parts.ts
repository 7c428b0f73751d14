/**
 * The search document of spec 2 (exactly its fields), built from a chunk that retrieval found. Memory documents
 * have source type `memory`; connector documents will carry their connector's source.
 */
export interface SearchDoc {
  document_id: string;
  chunk_ind: number;
  semantic_identifier: string;
  link: string;
  blurb: string;
  source_type: string;
  boost: number;
  hidden: boolean;
  metadata: Record<string, string>;
  score: number;
  is_relevant: boolean | null;
  relevance_explanation: string | null;
  match_highlights: string[];
  updated_at: string;
  primary_owners: string[] | null;
  secondary_owners: string[] | null;
  is_internet: boolean;
}

export interface ToolCallRecord {
  tool_name: string;
  tool_arguments: Record<string, unknown>;
  tool_result: string;
  search_docs: SearchDoc[];
  generated_images: null;
  pre_reasoning: string | null;
}

export interface CitationInfo {
  citation_num: number;
  document_id: string;
}

/**
 * One part of a streamed answer (spec 2's AnswerStreamPart; its fields are ours, docs/core.md): each part is one
 * JSON object on its own line, in this order: `message_start`, then (a session in a chat project with files) a
 * `search_documents` of the project's file passages, then per tool call `tool_call` and (for a search)
 * `search_documents`, then `answer_delta`s, then one `citation_info` per citation used, then `stop` — or `error`
 * then `stop` when the answer failed.
 */
export type AnswerStreamPart =
  | { type: 'message_start'; chat_session_id: string; user_message_id: number; parent_message_id: number | null }
  | { type: 'tool_call'; tool_name: string; tool_arguments: Record<string, unknown> }
  | { type: 'search_documents'; top_documents: SearchDoc[] }
  | { type: 'answer_delta'; text: string }
  | { type: 'citation_info'; citation_num: number; document_id: string }
  | { type: 'error'; error: string }
  | { type: 'stop'; message_id: number | null; chat_session_id: string; stop_reason: 'finished' | 'error' };

/** `[1]`, `[2, 3]`, `[1][2]` markers out of an answer, whitespace before them included. */
export function withoutCitations(answer: string): string {
  return answer.replace(/\s*\[\d+(?:\s*,\s*\d+)*\]/g, '').trim();
}
