export { startEmbedded, type Embedded, type DevCredentials } from './embedded';
export { embeddedEnvSchema, type EmbeddedConfig } from './config';
