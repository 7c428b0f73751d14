import { placeWithinReach } from '@lore/contracts';
import { parseContentType } from '@lore/outbound';
import { detailValidationError, type BlobStore, type Logger, type Sql } from '@lore/runtime';
import { DEFAULT_FILE_READING, fileKindOf, KIND_HEAD_BYTES } from '../connectors/file-text';
import { connectorFileKey, connectorFileName, connectorFilePlace, DEFAULT_CONNECTOR_FILE_LIMITS, isConnectorFileKey, nameList, type ConnectorFileLimits } from '../domain/connector-files';
import { failureReason } from '../domain/project-files';
import { fileLocationsInUse } from '../store/connectors';
import type { CoreDeps } from './context';
import { coreError } from './errors';
import type { Principal } from './principal';
import { storeUpload, type StoredFile, type UploadPart } from './uploads';

/**
 * Files uploaded for `file` connectors (docs/core.md, "Connector files"): an upload stores each file under
 * `connector-files/<workspace>/<memory>/<uuid>/<name>` in the tenant's blob store (the uploader's workspace and
 * memory) and answers those paths, which a `file` connector's `file_locations` then name. A connector may only name
 * such files of its own tenant, uploaded within its maker's reach; deleting the last connector that names a file
 * deletes the file.
 */

export interface ConnectorFileSettings {
  limits: ConnectorFileLimits;
}

/** Settings from the defaults and what a deployment sets. */
export function connectorFileSettings(given: { limits?: Partial<ConnectorFileLimits> } = {}): ConnectorFileSettings {
  return { limits: { ...DEFAULT_CONNECTOR_FILE_LIMITS, ...given.limits } };
}

/** The way the indexer's `file` source reads files (no OCR engine in core): what an upload is checked against. */
const READING = DEFAULT_FILE_READING;

/**
 * Stores the files of one upload and answers their paths, in upload order. Each file is checked as it is stored: an
 * empty one is 422, one the shared extractor cannot read (an archive, an image without an OCR engine) 415, and the
 * whole upload is refused with it, its bytes deleted. The limits are `storeUpload`'s.
 */
export function uploadConnectorFiles(deps: CoreDeps, p: Principal, parts: AsyncIterable<UploadPart>): Promise<string[]> {
  return storeUpload(
    deps,
    p.tenantId,
    parts,
    { limits: deps.connectorFiles.limits, keyOf: (id, name) => connectorFileKey({ workspace_id: p.workspaceId, memory_id: p.memoryId }, id, name), nameOf: connectorFileName, headBytes: KIND_HEAD_BYTES, check: refuseUnreadable },
    async (files) => files.map((f) => f.key),
  );
}

function refuseUnreadable(file: StoredFile): void {
  const name = JSON.stringify(file.name);
  if (file.size === 0) throw detailValidationError([{ path: 'files', message: `${name} is empty` }], 'body');
  const known = fileKindOf({ name: file.name, contentType: parseContentType(file.contentType).contentType, head: file.head }, READING);
  if (!known.ok) {
    throw coreError('UNSUPPORTED_MEDIA_TYPE', `${name}: ${failureReason('unsupported_type', known.detail)}; a file connector reads text, Markdown, HTML, CSV, JSON, PDF and DOCX files`);
  }
}

/**
 * A `file` connector may name only files uploaded to its own tenant (`connector-files/…` keys of the tenant's blob
 * store; another tenant's path is no key of this one) within the caller's reach (`placeWithinReach` of the place in
 * the key: a file uploaded in another workspace or memory is, to a credential bound elsewhere, as if never
 * uploaded): any other location is 400 naming them.
 */
export async function checkFileLocations(deps: Pick<CoreDeps, 'blobs'>, p: Principal, locations: readonly string[]): Promise<void> {
  const unique = [...new Set(locations)];
  const candidates = unique.filter((l) => isConnectorFileKey(l) && placeWithinReach(p.reach, connectorFilePlace(l)));
  const found = new Set((await deps.blobs.stat(p.tenantId, candidates)).map((b) => b.key));
  const missing = unique.filter((l) => !found.has(l));
  if (missing.length > 0) {
    throw coreError(
      'BAD_REQUEST',
      `file_locations must be paths of files uploaded with POST /api/manage/admin/connector/file/upload; not uploaded: ${nameList(missing)}`,
    );
  }
}

/**
 * The uploaded files of a deleted `file` connector's configuration that no connector of the tenant names any more,
 * read in the deleting transaction (after the connector row is gone).
 */
export async function filesLeftBehind(sql: Sql, tenantId: string, config: Record<string, unknown>): Promise<string[]> {
  const named = Array.isArray(config.file_locations) ? config.file_locations.filter((l): l is string => typeof l === 'string' && isConnectorFileKey(l)) : [];
  if (named.length === 0) return [];
  const inUse = await fileLocationsInUse(sql, tenantId, [...new Set(named)]);
  return [...new Set(named)].filter((l) => !inUse.has(l));
}

/** Deletes uploaded files; one that cannot be deleted is logged and left (its bytes only cost room). */
export async function deleteConnectorFiles(deps: { blobs: BlobStore; logger: Logger }, tenantId: string, keys: readonly string[]): Promise<void> {
  for (const key of keys) {
    await deps.blobs.delete(tenantId, key).catch((err: unknown) => deps.logger.warn({ err, key }, 'could not delete an uploaded connector file'));
  }
}
