import { z } from 'zod';
import type { SourceDocument } from '../connectors/source';
import { cutUnits } from '@lore/ai';
import { graphPost, GraphCallError, type GraphHttpOptions } from '@lore/runtime';

/**
 * Where the indexer writes a pair's documents: the graph service's connector-document routes (graph-internal,
 * never forwarded by the gateway), through the same pipeline as memory ingest. Each call carries an identity the
 * indexer signs for the pair (its memory, its creating administrator).
 */

export type PushOutcome = 'created' | 'updated' | 'unchanged' | 'skipped';

const pushAnswer = z.object({
  results: z.array(z.object({ id: z.string(), doc_id: z.string().nullable(), outcome: z.enum(['created', 'updated', 'unchanged', 'skipped']) })),
});
const deleteAnswer = z.object({ deleted: z.number().int() });

export interface PairAccess {
  public: boolean;
  groups: number[];
}

export interface ConnectorDocuments {
  push(identityToken: string, ccPairId: number, access: PairAccess, documents: SourceDocument[], signal?: AbortSignal): Promise<Array<{ id: string; doc_id: string | null; outcome: PushOutcome }>>;
  /** Removes the named documents of the pair (all of them when `ids` is undefined); answers how many went. */
  remove(identityToken: string, ccPairId: number, ids: string[] | undefined, signal?: AbortSignal): Promise<number>;
}

/** A refusal or failure of the graph service, with its status (0: not reached). */
export class ConnectorDocumentsError extends GraphCallError {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

/**
 * What a page may hold but a JSON body the platform accepts may not: NUL characters (dropped) and lone surrogates
 * (replaced), so one odd page never refuses the batch it travels in.
 */
function clean(text: string): string {
  return text.replace(/\u0000/g, '').replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '\uFFFD');
}

/**
 * The bounds the graph's push schema puts on a document's fields (services/graph/src/routes/connector-documents/
 * schema.ts; a body over any of them is refused whole, 422). The text has none (the graph keeps its beginning) and
 * the id is the document's identity, never cut (a source skips an id over 2048 characters).
 */
export const PUSH_BOUNDS = {
  title: 1000,
  link: 4096,
  sourceType: 64,
  owner: 1000,
  owners: 1000,
  metadataKey: 1000,
  metadataValue: 100_000,
  metadataEntries: 1000,
  contentHash: 128,
} as const;

/** A list of owners within the schema's bounds. */
function owners(list: string[] | null | undefined): string[] | null {
  return list ? list.slice(0, PUSH_BOUNDS.owners).map((o) => cutUnits(clean(o), PUSH_BOUNDS.owner)) : null;
}

/** Metadata within the schema's bounds: the first entries, keys and values cut. */
function metadata(m: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(m)
      .slice(0, PUSH_BOUNDS.metadataEntries)
      .map(([k, v]) => [cutUnits(clean(k), PUSH_BOUNDS.metadataKey), cutUnits(clean(v), PUSH_BOUNDS.metadataValue)]),
  );
}

/**
 * A source's date as the memory can store it: years 1 to 9999 (PostgreSQL refuses year 0 and an ISO string of a
 * later year); anything else (a sitemap's `0000-00-00`, a broken header) is unknown rather than a failed batch.
 */
function storableDate(d: Date | null): string | null {
  if (!d || Number.isNaN(d.getTime())) return null;
  const year = d.getUTCFullYear();
  return year >= 1 && year <= 9999 ? d.toISOString() : null;
}

export class GraphConnectorDocuments implements ConnectorDocuments {
  constructor(private readonly options: GraphHttpOptions) {}

  async push(identityToken: string, ccPairId: number, access: PairAccess, documents: SourceDocument[], signal?: AbortSignal) {
    const body = JSON.stringify({
      cc_pair_id: ccPairId,
      access,
      documents: documents.map((d) => ({
        id: d.id,
        // Every bounded field is cut to its bound here, the one place documents leave core: one page with an odd
        // field (a `<title>` of 2000 characters) is written cut, not refused with the batch it travels in (before
        // 2026-11-30 its whole batch failed, on every run).
        title: cutUnits(clean(d.title), PUSH_BOUNDS.title),
        text: clean(d.text),
        link: cutUnits(d.link, PUSH_BOUNDS.link),
        source_type: cutUnits(d.source_type, PUSH_BOUNDS.sourceType),
        updated_at: storableDate(d.updated_at),
        primary_owners: owners(d.primary_owners),
        secondary_owners: owners(d.secondary_owners),
        metadata: metadata(d.metadata),
        content_hash: cutUnits(d.content_hash, PUSH_BOUNDS.contentHash),
      })),
    });
    const parsed = pushAnswer.safeParse(await this.call('/internal/v1/connector-documents', body, identityToken, signal));
    if (!parsed.success || parsed.data.results.length !== documents.length) throw new ConnectorDocumentsError('the graph service answered an unexpected body', 200);
    return parsed.data.results;
  }

  async remove(identityToken: string, ccPairId: number, ids: string[] | undefined, signal?: AbortSignal): Promise<number> {
    const body = JSON.stringify({ cc_pair_id: ccPairId, ...(ids === undefined ? {} : { ids }) });
    const parsed = deleteAnswer.safeParse(await this.call('/internal/v1/connector-documents/delete', body, identityToken, signal));
    if (!parsed.success) throw new ConnectorDocumentsError('the graph service answered an unexpected body', 200);
    return parsed.data.deleted;
  }

  private async call(path: string, body: string, identityToken: string, signal?: AbortSignal): Promise<unknown> {
    const { status, text } = await graphPost({ maxBytes: 4 * 1024 * 1024, ...this.options }, path, body, identityToken, signal);
    if (status !== 200) {
      let message = `the graph service answered ${status}`;
      try {
        const e = (JSON.parse(text) as { error?: { message?: string } }).error?.message;
        if (e) message += `: ${e}`;
      } catch {
        // not JSON: the status says enough
      }
      throw new ConnectorDocumentsError(message, status);
    }
    return JSON.parse(text) as unknown;
  }
}
