import type { Db, Logger, SecretBox } from '@lore/runtime';
import type { ChatEngine } from './chat-engine';

/** What core's application layer works with; route modules never see it, only the functions bound to it. */
export interface CoreDeps {
  db: Db;
  logger: Logger;
  /** Tenants whose default persona this process has already written (it is written once per tenant). */
  seededTenants: Set<string>;
  /** Seals and opens credential secrets with the platform key ring (`LORE_ENCRYPTION_KEYS`). */
  secrets: SecretBox;
  chat: ChatEngine;
}
