// jest-circus takes its default test timeout from the global configuration only, so a project's `testTimeout`
// in jest.config.js is ignored; each project sets its own here instead (setupFilesAfterEnv is per project).
// Unit suites run beside the background Kubernetes build: a loaded machine must not turn a slow-but-correct test
// (PGlite boots, key derivations) into a failure.
jest.setTimeout(30_000);
