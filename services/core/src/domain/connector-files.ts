import { EXTRACT_DEFAULTS } from '@lore/extract';

/**
 * Files uploaded for `file` connectors (docs/core.md, "Connector files"): where they are kept, what an upload may
 * hold, and the names they keep. No HTTP, no SQL.
 */

/** Every uploaded connector file's blob key starts with this (in its tenant's namespace of the blob store). */
export const CONNECTOR_FILES_PREFIX = 'connector-files/';

export interface ConnectorFileLimits {
  /** The largest file (bytes); a larger one answers 413. */
  maxFileBytes: number;
  /** Files in one upload at most (more: 422). */
  maxFilesPerUpload: number;
  /** The bytes of one upload's files together at most; more answers 413. */
  maxUploadBytes: number;
}

export const DEFAULT_CONNECTOR_FILE_LIMITS: ConnectorFileLimits = {
  // The extractor reads no larger file (a PDF cannot be cut): a larger upload could never be indexed.
  maxFileBytes: EXTRACT_DEFAULTS.maxFileBytes,
  maxFilesPerUpload: 50,
  maxUploadBytes: 50 * 1024 * 1024,
};

/**
 * A file's name in its key: the uploaded name without control characters, its path separators (`/` and `\`)
 * turned into `_`, at most 200 characters keeping its extension (the extractor reads the type from it when the
 * bytes do not say); `file` when nothing is left (or only `.` or `..`).
 */
export function connectorFileName(uploaded: string | undefined): string {
  const cleaned = (uploaded ?? '')
    .replace(/[\u0000-\u001f\u007f]/g, '')
    // Lone surrogates (PostgreSQL text cannot hold them); pairs are characters like any other.
    .replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '')
    .replace(/[/\\]/g, '_')
    .trim();
  if (!cleaned || cleaned === '.' || cleaned === '..') return 'file';
  // Counted in characters, so a cut never splits one.
  const chars = Array.from(cleaned);
  if (chars.length <= 200) return cleaned;
  const dot = cleaned.lastIndexOf('.');
  const ext = dot > 0 && cleaned.length - dot <= 10 ? Array.from(cleaned.slice(dot)) : [];
  return [...chars.slice(0, 200 - ext.length), ...ext].join('');
}

/** A workspace or memory id that can stand as one segment of a key. */
const SEGMENT = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * The blob key of an uploaded file: `connector-files/<workspace>/<memory>/<uuid>/<name>`, the workspace and memory
 * being the uploader's (what `connectorFilePlace` reads back); `connector-files/<uuid>/<name>` when either id cannot
 * stand as a segment (and for files uploaded before 2026-11-30).
 */
export function connectorFileKey(place: { workspace_id: string; memory_id: string }, id: string, name: string): string {
  const placed = SEGMENT.test(place.workspace_id) && SEGMENT.test(place.memory_id);
  return placed ? `${CONNECTOR_FILES_PREFIX}${place.workspace_id}/${place.memory_id}/${id}/${name}` : `${CONNECTOR_FILES_PREFIX}${id}/${name}`;
}

/** Where an uploaded file was uploaded (the uploader's workspace and memory), `''` for both when its key does not say. */
export function connectorFilePlace(key: string): { workspace_id: string; memory_id: string } {
  const [workspace = '', memory = '', id = ''] = key.slice(CONNECTOR_FILES_PREFIX.length).split('/');
  if (!UUID.test(workspace) && SEGMENT.test(workspace) && SEGMENT.test(memory) && UUID.test(id)) return { workspace_id: workspace, memory_id: memory };
  return { workspace_id: '', memory_id: '' };
}

export function isConnectorFileKey(key: string): boolean {
  return key.startsWith(CONNECTOR_FILES_PREFIX) && key.length > CONNECTOR_FILES_PREFIX.length;
}

/** `a`, `b` and `c` — at most `max` named, then how many more. */
export function nameList(names: readonly string[], max = 10): string {
  const shown = names.slice(0, max).map((n) => JSON.stringify(n));
  const rest = names.length - shown.length;
  return rest > 0 ? `${shown.join(', ')} and ${rest} more` : shown.join(', ');
}
