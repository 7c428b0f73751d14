// See unit-timeout.ts: the integration project's default; a suite that needs longer sets its own.
jest.setTimeout(120_000);
