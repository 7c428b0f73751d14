export * from './events';
export * from './memory';
export * from './keys';
export * from './admin';
export * from './identity';
export * from './connectors';
export * from './entity-keys';
export * from './credits';
