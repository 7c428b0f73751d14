/** The connector source layer (docs/core.md, "Connector sources"): what the indexer drives. */
export {
  consume,
  contentHash,
  DEFAULT_SOURCE_LIMITS,
  resolveLimits,
  type ConnectorSource,
  type IdListing,
  type ListOptions,
  type PreviousState,
  type RunOptions,
  type RunOutcome,
  type SkipReason,
  type SourceDocument,
  type SourceItem,
  type SourceLimits,
  type SourceRun,
  type StopReason,
  type Validators,
} from './source';
export { createWebFetcher, WEB_SOURCE_DEFAULTS, WEB_USER_AGENT, WebSource, type WebFetcher, type WebFetcherOptions, type WebSourceConfig, type WebSourceOptions } from './web';
export { FileSource, type FileSourceConfig, type FileSourceDeps } from './file';
export { createGoogleDriveFetcher, GOOGLE_DRIVE_DEFAULTS, GoogleDriveSource, type GoogleDriveFetcher, type GoogleDriveFetcherOptions, type GoogleDriveSourceConfig, type GoogleDriveSourceOptions } from './google-drive';
