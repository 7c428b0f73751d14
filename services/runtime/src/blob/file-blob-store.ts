import { createHash, randomUUID } from 'node:crypto';
import { mkdir, open, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import type { BlobInfo, BlobStore } from '../ports/blob-store';
import { MAX_BLOB_BYTES, readBody } from './read-body';

interface Meta {
  key: string;
  /** The bytes' file in the tenant's folder: a new name each put, so a description never names half-replaced bytes. */
  file: string;
  size: number;
  contentType: string;
  sha256: string;
  createdAt: string;
}

const hash = (s: string) => createHash('sha256').update(s).digest('hex');

/**
 * Blobs as files (embedded mode: `<data dir>/blobs`). PGlite runs on the process's own thread, and a bytea value
 * travels through it hex-encoded: storing a 25 MiB upload there held every request of the process for 10–14 s, and
 * reading it back for seconds more. Files are written and read by the thread pool instead.
 *
 * Layout: `<root>/<sha256(tenant)[0..16]>/<sha256(key)>.json`, the description (what `BlobInfo` says and which file
 * holds the bytes), and `<sha256(key)>.<random>.bin`, the bytes. Names are hashes, so no key can name a path outside
 * its tenant's folder, and a tenant's folder holds only its own blobs. A put writes new bytes under a new name, then
 * the description (beside its place, then renamed into it), then removes the bytes it replaced: a blob is what its
 * description says, and a crash leaves the old blob or the new one, never part of one.
 *
 * `fallback` (the store blobs were kept in before) is read when a key has no file, and deleted from with it, so
 * blobs written before the switch stay readable.
 */
export class FileBlobStore implements BlobStore {
  readonly kind = 'file' as const;

  constructor(
    private readonly root: string,
    private readonly fallback: BlobStore | null = null,
  ) {}

  private paths(tenantId: string, key: string): { dir: string; name: string; meta: string } {
    const dir = join(this.root, hash(`tenant:${tenantId}`).slice(0, 16));
    const name = hash(`key:${key}`);
    return { dir, name, meta: join(dir, `${name}.json`) };
  }

  async put(tenantId: string, key: string, data: Buffer | Readable, contentType: string, maxBytes = MAX_BLOB_BYTES): Promise<BlobInfo> {
    if (!key) throw new Error('a blob needs a key');
    const bytes = await readBody(data, Math.min(maxBytes, MAX_BLOB_BYTES));
    const p = this.paths(tenantId, key);
    await mkdir(p.dir, { recursive: true, mode: 0o700 });
    const before = await readMeta(p.meta, key);
    const meta: Meta = {
      key, file: `${p.name}.${randomUUID()}.bin`, size: bytes.length, contentType,
      sha256: createHash('sha256').update(bytes).digest('hex'), createdAt: new Date().toISOString(),
    };
    await writeWhole(join(p.dir, meta.file), bytes);
    await writeWhole(p.meta, Buffer.from(JSON.stringify(meta)));
    if (before) await rm(join(p.dir, before.file), { force: true });
    // The copy kept before the switch, if any, is now stale.
    await this.fallback?.delete(tenantId, key);
    return toInfo(meta);
  }

  async get(tenantId: string, key: string): Promise<{ info: BlobInfo; data: Buffer } | null> {
    const p = this.paths(tenantId, key);
    const meta = await readMeta(p.meta, key);
    if (!meta) return this.fallback ? this.fallback.get(tenantId, key) : null;
    const data = await readFile(join(p.dir, meta.file)).catch(() => null);
    return data && data.length === meta.size ? { info: toInfo(meta), data } : null;
  }

  async stat(tenantId: string, keys: readonly string[]): Promise<BlobInfo[]> {
    const found: BlobInfo[] = [];
    const missing: string[] = [];
    for (const key of new Set(keys)) {
      const meta = await readMeta(this.paths(tenantId, key).meta, key);
      if (meta) found.push(toInfo(meta));
      else missing.push(key);
    }
    if (this.fallback && missing.length > 0) found.push(...(await this.fallback.stat(tenantId, missing)));
    return found;
  }

  async delete(tenantId: string, key: string): Promise<void> {
    const p = this.paths(tenantId, key);
    const meta = await readMeta(p.meta, key);
    // The description first: without it the blob no longer exists, whatever happens to its bytes.
    await rm(p.meta, { force: true });
    if (meta) await rm(join(p.dir, meta.file), { force: true });
    await this.fallback?.delete(tenantId, key);
  }

  /**
   * Removes what puts a crash cut short, in every tenant's folder: temporary files (`*.tmp`) and bytes no description
   * names (a put that stopped between its bytes and its description), when last written more than `olderThanMs` ago
   * (a put running now is left alone). Run at start; before 2026-11-30 such pieces, unmasked upload bytes among them,
   * stayed for good. Returns the files removed.
   */
  async sweepUnfinished(olderThanMs: number, now = Date.now()): Promise<number> {
    let removed = 0;
    for (const tenantDir of await readdir(this.root).catch(() => [] as string[])) {
      if (!/^[0-9a-f]{16}$/.test(tenantDir)) continue;
      const dir = join(this.root, tenantDir);
      const names = await readdir(dir).catch(() => [] as string[]);
      const named = new Set<string>();
      for (const n of names) {
        if (!/^[0-9a-f]{64}\.json$/.test(n)) continue;
        const text = await readFile(join(dir, n), 'utf8').catch(() => null);
        try {
          const file = text === null ? undefined : (JSON.parse(text) as Partial<Meta>).file;
          if (typeof file === 'string') named.add(file);
        } catch {
          // An unreadable description names nothing; its bytes, if any, are unreachable too.
        }
      }
      for (const n of names) {
        const unfinished = n.endsWith('.tmp') || (n.endsWith('.bin') && !named.has(n));
        if (!unfinished) continue;
        const info = await stat(join(dir, n)).catch(() => null);
        if (!info || now - info.mtimeMs < olderThanMs) continue;
        await rm(join(dir, n), { force: true });
        removed += 1;
      }
    }
    return removed;
  }
}

/** Writes a file whole: to a temporary name beside it, flushed, then renamed over it. */
async function writeWhole(path: string, bytes: Buffer): Promise<void> {
  const tmp = `${path}.${randomUUID()}.tmp`;
  const handle = await open(tmp, 'w', 0o600);
  try {
    await handle.writeFile(bytes);
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await rename(tmp, path);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}

async function readMeta(path: string, key: string): Promise<Meta | null> {
  const text = await readFile(path, 'utf8').catch(() => null);
  if (text === null) return null;
  try {
    const meta = JSON.parse(text) as Meta;
    // Two keys with one hash would be a SHA-256 collision; a description of another key is no description of this one,
    // and one naming a file outside its folder none at all.
    return meta.key === key && /^[0-9a-f]{64}\.[0-9a-f-]{36}\.bin$/.test(meta.file) ? meta : null;
  } catch {
    return null;
  }
}

function toInfo(m: Meta): BlobInfo {
  return { key: m.key, size: m.size, contentType: m.contentType, sha256: m.sha256, createdAt: new Date(m.createdAt) };
}
