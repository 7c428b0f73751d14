/** The graph service's name in runtime's blob intents: it sweeps only the keys it announced (docs/runtime.md). */
export const GRAPH_BLOB_OWNER = 'graph';

/** How old an announced key must be before its bytes count as abandoned: an upload's record commits in seconds. */
export const ABANDONED_BLOB_AGE_MS = 60 * 60_000;
