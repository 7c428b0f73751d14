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

/** A search call's record: its result (`tool_result`) names the documents it found, which `search_docs` holds. */
export function searchToolCall(call: { tool_name: string; tool_arguments: Record<string, unknown>; pre_reasoning?: string | null }, found: SearchDoc[]): ToolCallRecord {
  return {
    tool_name: call.tool_name,
    tool_arguments: call.tool_arguments,
    tool_result: JSON.stringify(found.map((d) => ({ document_id: d.document_id, semantic_identifier: d.semantic_identifier, blurb: d.blurb }))),
    search_docs: found,
    generated_images: null,
    pre_reasoning: call.pre_reasoning ?? null,
  };
}

/**
 * How an answer stores a search call: its documents are a slice of the message's own `documents` (`[from, to)`),
 * so they are stored once, not three times (the message's documents, the call's, and its result's summary).
 */
export interface StoredSearchCall {
  tool_name: string;
  tool_arguments: Record<string, unknown>;
  pre_reasoning: string | null;
  documents: [number, number];
}

/** A message's tool calls as answers show them, from what was stored: the slice form, or a whole record as is. */
export function toolCallsOf(stored: unknown[], documents: unknown[]): unknown[] {
  return stored.map((c) => {
    const call = c as Partial<StoredSearchCall> | null;
    if (!call || !Array.isArray(call.documents) || typeof call.tool_name !== 'string') return c;
    const [from, to] = call.documents;
    return searchToolCall({ tool_name: call.tool_name, tool_arguments: call.tool_arguments ?? {}, pre_reasoning: call.pre_reasoning ?? null }, documents.slice(from, to) as SearchDoc[]);
  });
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

const MARKERS = /\s*\[\d+(?:\s*,\s*\d+)*\]/g;
/** The end of a text that may yet become a marker (or the whitespace before one) once more text comes. */
const OPEN_MARKER = /\s*(?:\[[\d,\s]*)?$/;

/** `[1]`, `[2, 3]`, `[1][2]` markers out of an answer, whitespace before them included. */
export function withoutCitations(answer: string): string {
  return answer.replace(MARKERS, '').trim();
}

/**
 * The same for an answer that arrives in pieces (a stream with `include_citations: false`): `push` takes the next
 * piece and answers what may be sent now, `end` the rest. A marker split over pieces (`[1` then `, 2]`) is held
 * back until it is whole; whitespace at the end is held back until it is known not to come before a marker. What
 * is sent in all is `withoutCitations` of the whole answer.
 */
export function citationStripper(): { push(piece: string): string; end(): string } {
  let text = '';
  let sent = 0;
  const take = (upTo: number, clean: string) => {
    const out = clean.slice(sent, upTo);
    sent = Math.max(sent, upTo);
    return out;
  };
  return {
    push(piece) {
      text += piece;
      const clean = text.replace(MARKERS, '').replace(/^\s+/, '');
      return take(clean.length - (OPEN_MARKER.exec(clean)?.[0].length ?? 0), clean);
    },
    end() {
      const clean = withoutCitations(text);
      return take(clean.length, clean);
    },
  };
}
