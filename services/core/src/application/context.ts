import type { Db, Logger } from '@lore/runtime';

/** What core's application layer works with; route modules never see it, only the functions bound to it. */
export interface CoreDeps {
  db: Db;
  logger: Logger;
  /** Tenants whose default persona this process has already written (it is written once per tenant). */
  seededTenants: Set<string>;
}
