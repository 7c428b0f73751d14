import type { TargetGuard } from '@lore/outbound';
import type { BlobStore, Db, Logger, SecretBox } from '@lore/runtime';
import type { ChatEngine } from './chat-engine';
import type { ConnectorFileSettings } from './connector-files';
import type { PassageCache } from './passage-cache';
import type { ProjectFileRunner, ProjectFileSettings } from './project-files';

/** What core's application layer works with; route modules never see it, only the functions bound to it. */
export interface CoreDeps {
  db: Db;
  logger: Logger;
  /** Tenants whose default persona this process has already written (it is written once per tenant). */
  seededTenants: Set<string>;
  /** Seals and opens credential secrets with the platform key ring (`LORE_ENCRYPTION_KEYS`). */
  secrets: SecretBox;
  chat: ChatEngine;
  /** Where uploaded files wait to be read (the runtime's blob store). */
  blobs: BlobStore;
  /** Chat project files' passages this process has indexed (a turn in a project reads only the others). */
  passages: PassageCache;
  /** Chat project files: their limits and this process's extraction runner. */
  projectFiles: { settings: ProjectFileSettings; runner: ProjectFileRunner };
  /** Files uploaded for `file` connectors: their limits. */
  connectorFiles: ConnectorFileSettings;
  /** The SSRF guard a web connector's base URL must pass when it is created (the indexer checks every fetch again). */
  targets: TargetGuard;
}
