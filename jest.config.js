// Two projects: fast unit tests beside the code, and integration/e2e suites that talk to the real
// PostgreSQL, Redis, Kafka and kube-apiserver started by test/infra.
const swc = ['@swc/jest', { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'commonjs' } }];
const transform = {
  '^.+\\.(t|j)sx?$': swc,
  // PGlite's CommonJS build loads Node built-ins with dynamic import(), which jest's module sandbox only allows under
  // --experimental-vm-modules; compiling it like our own code turns those into require() calls.
  '/node_modules/@electric-sql/pglite[^/]*/dist/.+\\.cjs$': swc,
};
const moduleNameMapper = {
  '^@lore/operator$': '<rootDir>/operator/src/index.ts',
  '^@lore/([a-z-]+)$': '<rootDir>/services/$1/src/index.ts',
  // Subpath exports (e.g. @lore/runtime/kit): the package.json `exports` entry `./<name>` maps to src/<name>.ts.
  '^@lore/([a-z-]+)/([a-z-]+)$': '<rootDir>/services/$1/src/$2.ts',
};
const transformIgnorePatterns = ['/node_modules/(?!@electric-sql/pglite)'];
const common = { transform, transformIgnorePatterns, moduleNameMapper, testEnvironment: 'node', rootDir: __dirname };

module.exports = {
  projects: [
    {
      ...common,
      displayName: 'unit',
      testMatch: ['<rootDir>/services/*/src/**/*.test.ts', '<rootDir>/operator/src/**/*.test.ts'],
      testPathIgnorePatterns: ['\\.int\\.test\\.ts$', '/dist/', '/node_modules/'],
      // The default timeout of each project comes from a setup file: jest-circus reads `testTimeout` from the
      // global configuration only and ignores a project's (test/support/jest/unit-timeout.ts says why 30 s).
      setupFilesAfterEnv: ['<rootDir>/test/support/jest/unit-timeout.ts'],
    },
    {
      ...common,
      displayName: 'integration',
      testMatch: ['<rootDir>/test/**/*.int.test.ts', '<rootDir>/services/*/test/**/*.int.test.ts', '<rootDir>/operator/test/**/*.int.test.ts'],
      testPathIgnorePatterns: ['/dist/', '/node_modules/'],
      setupFilesAfterEnv: ['<rootDir>/test/support/jest/integration-timeout.ts'],
    },
  ],
};
