/**
 * Chat project files: the limits of an upload and how a project's files enter a chat answer (docs/core.md,
 * "Project files"). No HTTP, no SQL.
 */

import { cutUnits } from '@lore/ai';
export interface ProjectFileLimits {
  /** The largest file (bytes); a larger one answers 413. */
  maxFileBytes: number;
  /** Files in one upload request at most. */
  maxFilesPerUpload: number;
  /** The bytes of one upload's files together at most; more answers 413. */
  maxUploadBytes: number;
  /** Files a project may hold. */
  maxFilesPerProject: number;
  /** Bytes of extracted text kept per file (its beginning; the rest is not given to answers). */
  maxTextBytes: number;
}

export const DEFAULT_PROJECT_FILE_LIMITS: ProjectFileLimits = {
  maxFileBytes: 20 * 1024 * 1024,
  maxFilesPerUpload: 20,
  maxUploadBytes: 50 * 1024 * 1024,
  maxFilesPerProject: 100,
  maxTextBytes: 2 * 1024 * 1024,
};

/** Why a file failed, in words for the person who uploaded it, from the reader's skip reason and detail. */
export function failureReason(reason: 'unsupported_type' | 'too_large' | 'failed' | 'empty', detail: string | null): string {
  switch (reason) {
    case 'unsupported_type':
      return `this type of file cannot be read (${detail ?? 'unknown type'})`;
    case 'too_large':
      return `the file is too large to read (${detail ?? 'over the limit'})`;
    case 'empty':
      return 'no text could be extracted from the file';
    case 'failed':
      return detail ?? 'the file could not be read';
  }
}

/** A file's name as stored: no control characters, trimmed, at most 255 characters; `file` when nothing is left. */
export function cleanFileName(name: string | undefined): string {
  const cleaned = (name ?? '').replace(/[\u0000-\u001f\u007f]/g, '').replace(/[\ud800-\udfff]/g, '').trim();
  return cleaned.slice(0, 255) || 'file';
}

/** How much of a project's files a chat turn reads and gives the answer. */
export const FILE_CONTEXT = {
  /** Files read per turn (the oldest first). */
  maxFiles: 50,
  /** Characters read of each file. */
  maxCharsPerFile: 200_000,
  /** A passage is about this many characters, cut at a paragraph, line or sentence end. */
  passageChars: 1_500,
  /** Passages given to the answer at most. */
  maxPassages: 6,
} as const;

export interface FilePassage {
  fileId: string;
  name: string;
  /** The passage's place in its file (0-based). */
  index: number;
  text: string;
  /** Distinct words of the question found in the passage, over the question's words (0–1). */
  score: number;
  updatedAt: Date;
}

/** Words that say nothing about what a passage is about. */
const STOP = new Set(
  'the and for are but not you all any can had her was one our out has his how its may new now see two who did get use what when where which with this that from they them then than into your have will would there their about does'.split(
    ' ',
  ),
);

export function queryTerms(text: string): Set<string> {
  return new Set((text.toLowerCase().match(/[\p{L}\p{N}]{3,}/gu) ?? []).filter((w) => !STOP.has(w)));
}

/** Splits text into passages of about `size` characters, each ending at a paragraph, a line or a sentence when it can. */
export function splitPassages(text: string, size: number): string[] {
  const out: string[] = [];
  let rest = text.trim();
  while (rest.length > size) {
    const window = rest.slice(0, size);
    const floor = Math.floor(size / 2);
    let cut = window.lastIndexOf('\n\n');
    if (cut < floor) cut = window.lastIndexOf('\n');
    if (cut < floor) cut = Math.max(window.lastIndexOf('. '), window.lastIndexOf('? '), window.lastIndexOf('! ')) + 1;
    if (cut < floor) cut = window.lastIndexOf(' ');
    // No break at all: between code points (a cut through a surrogate pair would leave a half on each side).
    if (cut < floor) cut = cutUnits(rest, size).length || size;
    const piece = rest.slice(0, cut).trim();
    if (piece) out.push(piece);
    rest = rest.slice(cut).trim();
  }
  if (rest) out.push(rest);
  return out;
}

/** A file's passages with the words each holds: what ranking needs, computed once a file (see `PassageCache`). */
export interface IndexedFile {
  file_id: string;
  name: string;
  time_updated: Date;
  passages: ReadonlyArray<{ text: string; terms: ReadonlySet<string> }>;
}

export function indexFile(file: { file_id: string; name: string; text: string; time_updated: Date }, passageChars: number = FILE_CONTEXT.passageChars): IndexedFile {
  return { file_id: file.file_id, name: file.name, time_updated: file.time_updated, passages: splitPassages(file.text, passageChars).map((text) => ({ text, terms: queryTerms(text) })) };
}

/**
 * The passages of a project's files a turn gives its answer: ranked by how many of the question's words each holds
 * (ties: the earlier file, then the earlier passage), the best `maxPassages`. A project with few small files gives all
 * of them, whatever the question (a question such as "summarise the file" shares no word with it).
 */
export function rankPassages(files: readonly IndexedFile[], question: string, maxPassages: number = FILE_CONTEXT.maxPassages): FilePassage[] {
  const terms = [...queryTerms(question)];
  const all: Array<FilePassage & { order: number }> = [];
  let order = 0;
  for (const f of files) {
    f.passages.forEach((p, index) => {
      let hits = 0;
      for (const t of terms) if (p.terms.has(t)) hits += 1;
      all.push({ fileId: f.file_id, name: f.name, index, text: p.text, score: terms.length > 0 ? hits / terms.length : 0, updatedAt: f.time_updated, order: order++ });
    });
  }
  return all
    .sort((a, b) => b.score - a.score || a.order - b.order)
    .slice(0, maxPassages)
    .map(({ order: _order, ...p }) => p);
}

/** `rankPassages` over files given whole (each split and read for its words first). */
export function selectPassages(
  files: ReadonlyArray<{ file_id: string; name: string; text: string; time_updated: Date }>,
  question: string,
  options: { passageChars: number; maxPassages: number } = FILE_CONTEXT,
): FilePassage[] {
  return rankPassages(files.map((f) => indexFile(f, options.passageChars)), question, options.maxPassages);
}
