import { ConfigError, parseConfig } from '@lore/runtime';
import { DEFAULT_RUN_SETTINGS, DEFAULT_CSV_IMPORT } from '@lore/agents';
import { agentsServiceSettings, agentsWorkerSettings, coreFileSettings, embeddedEnvSchema, googleEndpoints } from './config';

describe('embedded configuration: LORE_WEBHOOKS_ALLOW_LOOPBACK', () => {
  it('is off by default and on when set outside production', () => {
    expect(parseConfig(embeddedEnvSchema, {}).LORE_WEBHOOKS_ALLOW_LOOPBACK).toBe(false);
    expect(parseConfig(embeddedEnvSchema, { LORE_WEBHOOKS_ALLOW_LOOPBACK: 'true' }).LORE_WEBHOOKS_ALLOW_LOOPBACK).toBe(true);
    expect(parseConfig(embeddedEnvSchema, { NODE_ENV: 'development', LORE_WEBHOOKS_ALLOW_LOOPBACK: 'true' }).LORE_WEBHOOKS_ALLOW_LOOPBACK).toBe(true);
  });

  it('is refused with a configuration error when NODE_ENV is production', () => {
    try {
      parseConfig(embeddedEnvSchema, { NODE_ENV: 'production', LORE_WEBHOOKS_ALLOW_LOOPBACK: 'true' });
      throw new Error('expected a configuration error');
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).problems).toEqual([expect.stringMatching(/^LORE_WEBHOOKS_ALLOW_LOOPBACK: .*refused when NODE_ENV=production/)]);
    }
    expect(parseConfig(embeddedEnvSchema, { NODE_ENV: 'production' }).LORE_WEBHOOKS_ALLOW_LOOPBACK).toBe(false);
  });

  it('takes only boolean words', () => {
    expect(() => parseConfig(embeddedEnvSchema, { LORE_WEBHOOKS_ALLOW_LOOPBACK: 'sure' })).toThrow(/LORE_WEBHOOKS_ALLOW_LOOPBACK/);
  });
});

describe('embedded configuration: LORE_WEBHOOKS_RETENTION_DAYS', () => {
  it('keeps settled deliveries 30 days unless set, 0 for ever, and refuses what is not a day count', () => {
    expect(parseConfig(embeddedEnvSchema, {}).LORE_WEBHOOKS_RETENTION_DAYS).toBe(30);
    expect(parseConfig(embeddedEnvSchema, { LORE_WEBHOOKS_RETENTION_DAYS: '7' }).LORE_WEBHOOKS_RETENTION_DAYS).toBe(7);
    expect(parseConfig(embeddedEnvSchema, { LORE_WEBHOOKS_RETENTION_DAYS: '0' }).LORE_WEBHOOKS_RETENTION_DAYS).toBe(0);
    expect(() => parseConfig(embeddedEnvSchema, { LORE_WEBHOOKS_RETENTION_DAYS: 'a week' })).toThrow(/LORE_WEBHOOKS_RETENTION_DAYS/);
  });
});

describe('embedded configuration: LORE_CONNECTORS_GOOGLE_API_URL and LORE_CONNECTORS_GOOGLE_TOKEN_URL', () => {
  it('points the Drive source at the endpoints set, as the core worker does, and at Google\'s without them', () => {
    const config = parseConfig(embeddedEnvSchema, { LORE_CONNECTORS_GOOGLE_API_URL: 'http://127.0.0.1:7001', LORE_CONNECTORS_GOOGLE_TOKEN_URL: 'http://127.0.0.1:7001/token' });
    expect(googleEndpoints(config)).toEqual({ apiBaseUrl: 'http://127.0.0.1:7001', tokenUrl: 'http://127.0.0.1:7001/token' });
    expect(googleEndpoints(parseConfig(embeddedEnvSchema, { LORE_CONNECTORS_GOOGLE_TOKEN_URL: '' }))).toEqual({});
  });

  it('takes only http(s) URLs', () => {
    expect(() => parseConfig(embeddedEnvSchema, { LORE_CONNECTORS_GOOGLE_API_URL: 'ftp://drive.example' })).toThrow(/LORE_CONNECTORS_GOOGLE_API_URL/);
  });
});

describe('embedded configuration: the agents worker\'s settings', () => {
  it('runs 8 workflows at once with the built-in budgets and prices unless set, as the agents worker does', () => {
    const worker = agentsWorkerSettings(parseConfig(embeddedEnvSchema, {}));
    expect(worker.maxRunning).toBe(8);
    expect(worker.sweepIntervalMs).toBe(10_000);
    expect(worker.settings).toEqual({ ...DEFAULT_RUN_SETTINGS });
  });

  it('passes LORE_AGENTS_WORKFLOW_MAX_RUNNING, the budgets and the credit prices to the worker', () => {
    const worker = agentsWorkerSettings(
      parseConfig(embeddedEnvSchema, {
        LORE_AGENTS_WORKFLOW_MAX_RUNNING: '2',
        LORE_AGENTS_WORKFLOW_SWEEP_MS: '2000',
        LORE_AGENTS_WORKFLOW_LEASE_MS: '20000',
        LORE_AGENTS_WORKFLOW_HEARTBEAT_MS: '1000',
        LORE_AGENTS_WORKFLOW_BATCH_ROWS: '3',
        LORE_AGENTS_BUDGET_FETCHES: '12',
        LORE_AGENTS_BUDGET_WALL_MS: '60000',
        LORE_AGENTS_BUDGET_MODEL_TOKENS: '900',
        LORE_AGENTS_CREDITS_PER_FETCH: '0',
        LORE_AGENTS_CREDITS_PER_ROW: '5',
        LORE_AGENTS_CREDITS_PER_1000_TOKENS: '7',
      }),
    );
    expect(worker.maxRunning).toBe(2);
    expect(worker.sweepIntervalMs).toBe(2_000);
    expect(worker.settings).toEqual({
      leaseMs: 20_000,
      heartbeatMs: 1_000,
      stopPollMs: DEFAULT_RUN_SETTINGS.stopPollMs,
      batchRows: 3,
      budgets: { fetches: 12, wallMs: 60_000, modelTokens: 900 },
      prices: { perFetch: 0, perRow: 5, perThousandTokens: 7 },
    });
  });

  it('refuses what the agents worker refuses', () => {
    expect(() => parseConfig(embeddedEnvSchema, { LORE_AGENTS_WORKFLOW_MAX_RUNNING: '0' })).toThrow(/LORE_AGENTS_WORKFLOW_MAX_RUNNING/);
    expect(() => parseConfig(embeddedEnvSchema, { LORE_AGENTS_CREDITS_PER_ROW: '-1' })).toThrow(/LORE_AGENTS_CREDITS_PER_ROW/);
  });
});

describe('embedded configuration: the agents API\'s limits', () => {
  it('keeps the agents API\'s defaults unless set', () => {
    const limits = agentsServiceSettings(parseConfig(embeddedEnvSchema, {}));
    expect(limits).toEqual({
      csvImport: { maxBytes: DEFAULT_CSV_IMPORT.maxBytes, maxColumns: DEFAULT_CSV_IMPORT.maxColumns, maxRows: DEFAULT_CSV_IMPORT.maxRows },
      genericWorkflows: { maxRunningPerService: 10 },
      liveUrlTtlSeconds: 3_600,
    });
  });

  it('passes the CSV import limits, generic workflows per service and the live URL lifetime', () => {
    const limits = agentsServiceSettings(
      parseConfig(embeddedEnvSchema, {
        LORE_AGENTS_CSV_MAX_BYTES: '4096',
        LORE_AGENTS_CSV_MAX_COLUMNS: '3',
        LORE_AGENTS_CSV_MAX_ROWS: '10',
        LORE_AGENTS_WORKFLOW_MAX_PER_SERVICE: '4',
        LORE_AGENTS_LIVE_URL_TTL_S: '120',
      }),
    );
    expect(limits).toEqual({ csvImport: { maxBytes: 4096, maxColumns: 3, maxRows: 10 }, genericWorkflows: { maxRunningPerService: 4 }, liveUrlTtlSeconds: 120 });
    expect(() => parseConfig(embeddedEnvSchema, { LORE_AGENTS_CSV_MAX_BYTES: '10' })).toThrow(/LORE_AGENTS_CSV_MAX_BYTES/);
  });
});

describe('embedded configuration: core\'s upload limits and indexer', () => {
  it('keeps core\'s defaults unless set', () => {
    const config = parseConfig(embeddedEnvSchema, {});
    expect(coreFileSettings(config)).toEqual({
      projectFiles: { limits: { maxFileBytes: 20 * 1024 * 1024, maxFilesPerUpload: 20, maxUploadBytes: 50 * 1024 * 1024, maxFilesPerProject: 100 }, concurrency: 2 },
      connectorFiles: { limits: { maxFileBytes: 25 * 1024 * 1024, maxFilesPerUpload: 50, maxUploadBytes: 50 * 1024 * 1024 } },
    });
    expect(config.LORE_CORE_SCHEDULER_INTERVAL_MS).toBe(15_000);
    expect(config.LORE_CORE_INDEX_MAX_RUNNING).toBe(8);
  });

  it('passes the project and connector file limits set', () => {
    const config = parseConfig(embeddedEnvSchema, {
      LORE_CORE_PROJECT_FILE_MAX_BYTES: '1000',
      LORE_CORE_PROJECT_FILES_PER_UPLOAD: '2',
      LORE_CORE_PROJECT_UPLOAD_MAX_BYTES: '3000',
      LORE_CORE_PROJECT_MAX_FILES: '4',
      LORE_CORE_PROJECT_FILE_WORKERS: '1',
      LORE_CORE_CONNECTOR_FILE_MAX_BYTES: '5000',
      LORE_CORE_CONNECTOR_FILES_PER_UPLOAD: '6',
      LORE_CORE_CONNECTOR_UPLOAD_MAX_BYTES: '7000',
      LORE_CORE_SCHEDULER_INTERVAL_MS: '500',
      LORE_CORE_INDEX_MAX_RUNNING: '3',
    });
    expect(coreFileSettings(config)).toEqual({
      projectFiles: { limits: { maxFileBytes: 1000, maxFilesPerUpload: 2, maxUploadBytes: 3000, maxFilesPerProject: 4 }, concurrency: 1 },
      connectorFiles: { limits: { maxFileBytes: 5000, maxFilesPerUpload: 6, maxUploadBytes: 7000 } },
    });
    expect(config.LORE_CORE_SCHEDULER_INTERVAL_MS).toBe(500);
    expect(config.LORE_CORE_INDEX_MAX_RUNNING).toBe(3);
  });
});
