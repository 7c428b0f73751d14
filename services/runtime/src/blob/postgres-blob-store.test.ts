import { PgliteDb } from '../db/pglite';
import { runRuntimeMigrations } from '../outbox/outbox';
import { describeBlobStoreContract } from './blob-store.contract';
import { PostgresBlobStore } from './postgres-blob-store';

jest.setTimeout(60_000);

describeBlobStoreContract('PostgresBlobStore on PGlite', async () => {
  const db = await PgliteDb.open();
  await runRuntimeMigrations(db);
  return { store: new PostgresBlobStore(db), close: () => db.close() };
});
