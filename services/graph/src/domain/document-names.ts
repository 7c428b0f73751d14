import { truncate } from '@lore/ai';
import { scanAndMask } from './dlp';
import type { Plan } from './knowledge-graph';

/** What a connector document's node in a knowledge graph is called, and the names it is also found by. */
export interface DocumentNaming {
  /** The node's name: the file name of a file, else the title, else the source's id. */
  name: string;
  /** The document's title as the memory holds it (masked and bounded at ingest). */
  title: string;
  /** The file name, or `''` for a source that is no file (a web page). */
  file_name: string;
}

const MAX_NAME = 200;

/**
 * One rule for every connector document (docs/memory.md, "Mapping a connector document"): a file is named by its
 * file name — an uploaded file's (a `file` connector's source id is the file's location, its last segment the name
 * it was uploaded under) or a Google Drive file's (its title is the file's name) — and any other document by its
 * title. A title the memory made from a text file's first line is no name a user knows it by; the file name is.
 * The file name is masked as a title is, so a node's name never shows what masking hid.
 */
export function documentNaming(doc: { title: string; source_type: string | null; external_id: string | null; doc_id: string }): DocumentNaming {
  const title = doc.title.trim();
  let fileName = '';
  if (doc.source_type === 'file' && doc.external_id) fileName = doc.external_id.slice(doc.external_id.lastIndexOf('/') + 1).trim();
  else if (doc.source_type === 'google_drive') fileName = title;
  if (fileName) fileName = truncate(scanAndMask(fileName).text, MAX_NAME);
  return { name: fileName || title || doc.external_id || doc.doc_id, title, file_name: fileName };
}

/**
 * A connector document's plan (`planDocument`, given `naming.name` as the title) with its Document node named by
 * the rule and holding both names as properties: graph chat finds a node by its name, its `name` and its `title`
 * (migration 0010's keys), so the file name and the title both find it.
 */
export function withDocumentNaming(plan: Plan, naming: DocumentNaming): Plan {
  return {
    ...plan,
    nodes: plan.nodes.map((n) =>
      n.label === 'Document' ? { ...n, name: naming.name, properties: { ...n.properties, name: naming.name, title: naming.title, file_name: naming.file_name } } : n,
    ),
  };
}
