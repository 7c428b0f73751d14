/**
 * The `BlobStore` contract, run on PGlite (unit tests), and on a real PostgreSQL server and a real S3-compatible server
 * (test/runtime/blob-store.int.test.ts).
 */
import { createHash, randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import type { BlobStore } from '../ports/blob-store';

export interface BlobFixture {
  store: BlobStore;
  close(): Promise<void>;
}

export function describeBlobStoreContract(name: string, open: () => Promise<BlobFixture>): void {
  describe(`BlobStore contract: ${name}`, () => {
    let fx: BlobFixture;
    let store: BlobStore;
    const tenant = `t-${randomBytes(4).toString('hex')}`;
    const otherTenant = `t-${randomBytes(4).toString('hex')}`;

    beforeAll(async () => {
      fx = await open();
      store = fx.store;
    });
    afterAll(async () => {
      await fx?.close();
    });

    it('stores bytes exactly and describes them', async () => {
      const data = randomBytes(300_000);
      const info = await store.put(tenant, `${tenant}/uploads/a`, data, 'application/pdf');
      expect(info).toEqual({
        key: `${tenant}/uploads/a`,
        size: data.length,
        contentType: 'application/pdf',
        sha256: createHash('sha256').update(data).digest('hex'),
        createdAt: expect.any(Date),
      });
      const got = await store.get(tenant, `${tenant}/uploads/a`);
      expect(got?.info).toEqual(info);
      expect(Buffer.compare(got!.data, data)).toBe(0);
    });

    it('reads a stream body', async () => {
      const parts = [Buffer.from('hello '), Buffer.from('streamed '), Buffer.from('world')];
      const info = await store.put(tenant, `${tenant}/uploads/s`, Readable.from(parts), 'text/plain');
      expect(info.size).toBe(20);
      expect((await store.get(tenant, `${tenant}/uploads/s`))!.data.toString()).toBe('hello streamed world');
    });

    it('replaces a blob put again under the same key', async () => {
      await store.put(tenant, `${tenant}/r`, Buffer.from('v1'), 'text/plain');
      await store.put(tenant, `${tenant}/r`, Buffer.from('version 2'), 'text/markdown');
      const got = await store.get(tenant, `${tenant}/r`);
      expect(got!.data.toString()).toBe('version 2');
      expect(got!.info.contentType).toBe('text/markdown');
    });

    it('answers null for a missing blob and deletes idempotently', async () => {
      expect(await store.get(tenant, `${tenant}/missing`)).toBeNull();
      await store.put(tenant, `${tenant}/d`, Buffer.from('x'), 'text/plain');
      await store.delete(tenant, `${tenant}/d`);
      await store.delete(tenant, `${tenant}/d`);
      expect(await store.get(tenant, `${tenant}/d`)).toBeNull();
    });

    it('describes the keys that exist without their bytes', async () => {
      const a = await store.put(tenant, `${tenant}/stat/a`, Buffer.from('alpha'), 'text/plain');
      const b = await store.put(tenant, `${tenant}/stat/b`, Buffer.from('beta bytes'), 'application/pdf');
      const found = await store.stat(tenant, [`${tenant}/stat/b`, `${tenant}/stat/missing`, `${tenant}/stat/a`, `${tenant}/stat/a`]);
      expect(found.sort((x, y) => x.key.localeCompare(y.key))).toEqual([a, b]);
      expect(await store.stat(tenant, [])).toEqual([]);
      expect(await store.stat(otherTenant, [`${tenant}/stat/a`])).toEqual([]);
    });

    it("never shows or deletes another tenant's blob", async () => {
      await store.put(tenant, 'shared-key', Buffer.from('mine'), 'text/plain');
      expect(await store.get(otherTenant, 'shared-key')).toBeNull();
      expect(await store.stat(otherTenant, ['shared-key'])).toEqual([]);
      await store.delete(otherTenant, 'shared-key');
      await store.put(otherTenant, 'shared-key', Buffer.from('theirs'), 'text/plain');
      expect((await store.get(tenant, 'shared-key'))!.data.toString()).toBe('mine');
      expect((await store.get(otherTenant, 'shared-key'))!.data.toString()).toBe('theirs');
    });

    it('keeps tenants apart even when a tenant id and a key could be read as one path', async () => {
      const a = `${tenant}x`;
      const b = `${tenant}x/y`;
      await store.put(a, 'y/z', Buffer.from('tenant a'), 'text/plain');
      expect(await store.get(b, 'z')).toBeNull();
      await store.put(b, 'z', Buffer.from('tenant b'), 'text/plain');
      expect((await store.get(a, 'y/z'))!.data.toString()).toBe('tenant a');
      expect((await store.get(b, 'z'))!.data.toString()).toBe('tenant b');
    });

    it('keeps keys with spaces, unicode and punctuation, and a multi-megabyte stream, byte for byte', async () => {
      const key = `${tenant}/uploads/Ünïcode rapport (final) #2 ?&=+.pdf`;
      const chunks = Array.from({ length: 20 }, () => randomBytes(128 * 1024));
      const whole = Buffer.concat(chunks);
      const info = await store.put(tenant, key, Readable.from(chunks), 'application/pdf');
      expect(info).toMatchObject({ key, size: whole.length, sha256: createHash('sha256').update(whole).digest('hex') });
      const got = await store.get(tenant, key);
      expect(Buffer.compare(got!.data, whole)).toBe(0);
      expect((await store.stat(tenant, [key])).map((b) => b.size)).toEqual([whole.length]);
    });

    it('refuses a body over the limit with PAYLOAD_TOO_LARGE, buffer or stream, and stores nothing', async () => {
      await expect(store.put(tenant, `${tenant}/big`, randomBytes(1025), 'application/octet-stream', 1024)).rejects.toMatchObject({
        code: 'PAYLOAD_TOO_LARGE',
      });
      const endless = Readable.from((function* () {
        for (;;) yield randomBytes(512);
      })());
      await expect(store.put(tenant, `${tenant}/big`, endless, 'application/octet-stream', 4096)).rejects.toMatchObject({
        code: 'PAYLOAD_TOO_LARGE',
      });
      expect(await store.get(tenant, `${tenant}/big`)).toBeNull();
    });
  });
}
