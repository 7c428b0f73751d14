import type { LanguageModel } from '@lore/ai';
import type { Logger } from '@lore/runtime';
import type { WebPageRead, WebResult } from '../list-building';

/**
 * Sessions over websockets (docs/agents.md, "Sessions over websockets"): deep search, web research and the agentic
 * crawler. A start route prepares a session (a workflow row of the session's kind and a list for its results); the
 * session runs only once a client connects to its socket, as a durable workflow on agents-worker. The framework
 * (this folder) owns the lifecycle, the socket, replay, clarifications, stop, budgets and the sweep; what a session
 * actually does is a `SessionAgent`, registered by kind (registry.ts).
 *
 * An agent may be run more than once for one session: a worker killed mid-session leaves the session to the sweep,
 * and the next worker runs the agent again from the start. Agents therefore write rows idempotently (`entity_key`
 * per row: the same key twice is one row), keep what they must not redo in `state`/`saveState`, and get their
 * earlier clarifying answers back from `ask` without the client being asked twice.
 */

export const SESSION_KINDS = ['deep_search', 'web_research', 'agentic_crawler'] as const;
export type SessionKind = (typeof SESSION_KINDS)[number];
export const isSessionKind = (kind: string): kind is SessionKind => (SESSION_KINDS as readonly string[]).includes(kind);

/** What the caller chose at start (validated: labels and country codes are the spec's, domain/session-options.ts). */
export interface SessionOptions {
  /** The spec's `llm_model` label as given, or null when none was given. */
  llm_model: string | null;
  /** The configured language model's name when a label was given (every label maps to it), or null: the service's default. */
  model: string | null;
  live_url: boolean;
  proxy: boolean;
  /** Lowercase two-letter code from the spec's set; set exactly when `proxy` is true. */
  proxy_country_code: string | null;
  /** Deep search: the workspace of files uploaded for the thread, and their server-side paths. */
  workspace_id: string | null;
  uploads: string[];
}

/** One result row: the entity's fields, and where they were read (every row carries provenance). */
export interface SessionRow {
  /** Unique within the session's list (a company's domain, a person's profile URL, a page URL): duplicates are dropped. */
  entity_key: string;
  /** `company`, `person`, `page` or another word the agent chooses; shown in the row's cells. */
  entity_type: string;
  /** Display fields: name, title, url, and whatever the agent extracted (strings, numbers, short arrays). */
  fields: Record<string, unknown>;
  provenance: SessionProvenance;
}

export interface SessionProvenance {
  source_url: string;
  /** ISO 8601 time the page was read. */
  fetched_at: string;
  /** The words on the page the row was taken from (at most 500 characters). */
  snippet: string;
}

/** Progress an agent reports; `stage` is a short word (`searching`, `fetching`, `extracting`...). */
export interface SessionProgress {
  stage: string;
  message: string;
  /** Extra facts for clients and the live page (a visited URL, counts); small and JSON-serialisable. */
  data?: Record<string, unknown>;
}

/** Budgets of one session (LORE_AGENTS_BUDGET_*): a spent budget ends the session `done` with a note. */
export interface SessionBudgets {
  fetches: number;
  wallMs: number;
  modelTokens: number;
}

/** A page the fetcher read, or why it could not (robots.txt, the guard, the site), in words a user can read. */
export type PageFetch = { page: WebPageRead; reason?: undefined } | { page: null; reason: string };

/** Guarded web access (services/outbound: SSRF guard, robots.txt, size and time limits, per-host politeness). */
export interface SessionFetcher {
  /**
   * A page, or why it could not be read. A failure that may pass (no connection, no answer in time, a 5xx) is tried
   * once more after a pause. Each try counts one fetch; a spent budget or an ended session throws (the run ends).
   */
  fetchPage(url: string): Promise<PageFetch>;
  /** A web search (the configured provider), or [] when none is configured. `page` is 1-based. */
  search(query: string, page?: number): Promise<WebResult[]>;
}

/** What a session kind's runner gets. */
export interface SessionContext {
  readonly kind: SessionKind;
  readonly tenantId: string;
  readonly threadId: string;
  readonly listId: string;
  /** The prompt the session was started with. */
  readonly prompt: string;
  readonly options: SessionOptions;
  /** Aborted on stop, on shutdown of the worker, or when the worker lost its claim: end promptly. */
  readonly signal: AbortSignal;
  readonly budgets: SessionBudgets;
  readonly logger: Logger;
  /** The configured language model (the one `options.model` names when configured), if any. */
  readonly languageModel?: LanguageModel;
  /** Guarded fetches for this session (through the session's egress proxy when `options.proxy`). */
  readonly fetcher: SessionFetcher;
  /** Sends a progress message to the client (recorded first: a reconnecting client replays it). */
  emit(progress: SessionProgress): Promise<void>;
  /**
   * Asks the client a clarifying question and waits for the answer (over the socket, or deep search's start called
   * again). On a re-run after a crash, a question already answered returns its answer at once.
   */
  ask(question: string): Promise<string>;
  /** Writes rows into the session's list (one transaction), each also sent to the client; answers how many were new. */
  writeRows(rows: readonly SessionRow[]): Promise<number>;
  /**
   * The rows the session's list holds now, those an earlier run of the session wrote included (a run resumed after a
   * crash skips them as duplicates, so its own count is not the session's): what a summary counts.
   */
  rowsInList(): Promise<number>;
  /** A reference file uploaded for this session (deep search: one of `options.uploads`), or null. */
  readUpload?(path: string): Promise<Buffer | null>;
  /** Counts model tokens against the budget. */
  spendTokens(tokens: number): void;
  /** The agent's own checkpoint (JSON), kept in the session row; `{}` at first. */
  readonly state: Record<string, unknown>;
  saveState(state: Record<string, unknown>): Promise<void>;
}

export interface SessionOutcome {
  /** One line for the `done` message (`12 companies found on 30 pages`). */
  summary: string;
}

/** A session kind's runner. */
export interface SessionAgent {
  readonly kind: SessionKind;
  run(ctx: SessionContext): Promise<SessionOutcome>;
}
