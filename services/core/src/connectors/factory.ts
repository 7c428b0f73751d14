import type { HostLookup } from '@lore/outbound';
import type { BlobStore } from '@lore/runtime';
import type { ConnectorRow } from '../store/connectors';
import { FileSource, type FileSourceConfig } from './file';
import { createGoogleDriveFetcher, GoogleDriveSource, type GoogleDriveSourceConfig, type GoogleDriveSourceOptions } from './google-drive';
import type { ConnectorSource } from './source';
import { createWebFetcher, WebSource, type WebSourceConfig, type WebSourceOptions } from './web';

/** How the indexer's sources reach the outside: one setting set per indexer process. */
export interface SourceSettings {
  /**
   * `LORE_CONNECTORS_ALLOW_LOOPBACK`: web and Drive sources may read loopback addresses and `localhost` (local
   * testing). Off by default and refused when NODE_ENV is production; private ranges stay refused either way.
   */
  allowLoopback: boolean;
  /** Host name resolver (tests: the loopback world's). */
  lookup?: HostLookup;
  /** Where the `file` source reads uploaded files; without one, file connectors fail their runs. */
  blobs: BlobStore | null;
  web?: WebSourceOptions;
  google?: GoogleDriveSourceOptions;
}

export interface SourceFactoryHandle {
  create(connector: ConnectorRow, credentialJson: Record<string, unknown>, tenantId: string): ConnectorSource;
  close(): void;
}

/**
 * Makes the source of a connector from its stored configuration and its opened credential. The outbound clients
 * (SSRF guard, connection pools, robots.txt cache) are shared by every run of the process.
 */
export function sourceFactory(settings: SourceSettings): SourceFactoryHandle {
  const fetcherOptions = { allowLoopback: settings.allowLoopback, ...(settings.lookup ? { lookup: settings.lookup } : {}) };
  const web = createWebFetcher(fetcherOptions);
  const drive = createGoogleDriveFetcher(fetcherOptions);
  return {
    create(connector, credentialJson, tenantId) {
      const config = connector.connector_specific_config;
      switch (connector.source) {
        case 'web':
          return new WebSource(config as unknown as WebSourceConfig, web, settings.web);
        case 'file':
          if (!settings.blobs) throw new Error('file connectors need a blob store, and this indexer has none');
          return new FileSource(config as unknown as FileSourceConfig, { blobs: settings.blobs, tenantId });
        case 'google_drive':
          return new GoogleDriveSource(config as unknown as GoogleDriveSourceConfig, credentialJson, drive, settings.google);
        default:
          throw new Error(`connector source ${connector.source} cannot be indexed`);
      }
    },
    close() {
      web.close();
      drive.close();
    },
  };
}
