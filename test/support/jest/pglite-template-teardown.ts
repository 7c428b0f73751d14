// The unit project's global teardown: removes the dump test/support/jest/pglite-template.ts wrote.
export { teardown as default } from './pglite-template';
