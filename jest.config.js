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

// The integration suites run in two lanes (test/integration-lanes.txt; docs/infrastructure.md, "The test command: two
// lanes"). LORE_TEST_LANE=parallel selects the suites listed as parallel, in the listed order; LORE_TEST_LANE=serial
// every other integration suite. Unset: all of them, as before.
const lane = process.env.LORE_TEST_LANE;
if (lane !== undefined && lane !== 'parallel' && lane !== 'serial') throw new Error(`LORE_TEST_LANE must be parallel or serial, not "${lane}"`);
const lanes = lane ? require('./test/support/jest/lanes') : undefined;
const integrationMatch = ['<rootDir>/test/**/*.int.test.ts', '<rootDir>/services/*/test/**/*.int.test.ts', '<rootDir>/operator/test/**/*.int.test.ts'];
// LORE_TEST_KUBE (with a lane): `without` leaves out the suites the lanes file marks `kube`, `only` runs just those
// (docs/infrastructure.md, "Kubernetes last"). The serial lane's unlisted suites count as not needing Kubernetes.
const kube = lanes?.kubeMode();
if (kube !== undefined && !lane) throw new Error('LORE_TEST_KUBE needs LORE_TEST_LANE');
const listed = lanes?.readLanes();
function integrationSelection() {
  if (lane === 'parallel') return { testMatch: lanes.keptByKubeMode(listed.parallel, listed.kube).map((p) => `<rootDir>/${p}`), ignore: [] };
  if (lane === 'serial' && kube === 'only') return { testMatch: lanes.keptByKubeMode(listed.serial, listed.kube).map((p) => `<rootDir>/${p}`), ignore: [] };
  if (lane === 'serial') return { testMatch: integrationMatch, ignore: lanes.ignorePatterns([...listed.parallel, ...(kube === 'without' ? listed.kube : [])]) };
  return { testMatch: integrationMatch, ignore: [] };
}
const selection = integrationSelection();

module.exports = {
  ...(lane === 'parallel' ? { testSequencer: '<rootDir>/test/support/jest/lane-sequencer.js' } : {}),
  projects: [
    {
      ...common,
      displayName: 'unit',
      testMatch: ['<rootDir>/services/*/src/**/*.test.ts', '<rootDir>/operator/src/**/*.test.ts'],
      testPathIgnorePatterns: ['\\.int\\.test\\.ts$', '/dist/', '/node_modules/'],
      // The default timeout of each project comes from a setup file: jest-circus reads `testTimeout` from the
      // global configuration only and ignores a project's (test/support/jest/unit-timeout.ts says why 30 s).
      setupFilesAfterEnv: ['<rootDir>/test/support/jest/unit-timeout.ts'],
      // Every new PGlite database of a unit suite starts from one dump made here (about 0.6 s instead of 3–4 s each).
      globalSetup: '<rootDir>/test/support/jest/pglite-template.ts',
      globalTeardown: '<rootDir>/test/support/jest/pglite-template-teardown.ts',
    },
    {
      ...common,
      displayName: 'integration',
      testMatch: selection.testMatch,
      testPathIgnorePatterns: ['/dist/', '/node_modules/', ...selection.ignore],
      setupFilesAfterEnv: ['<rootDir>/test/support/jest/integration-timeout.ts'],
    },
  ],
};
