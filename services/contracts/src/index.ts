export * from './events';
export * from './memory';
