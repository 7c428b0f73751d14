import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '@lore/runtime';
import { upsertDirectoryRecords } from '@lore/agents';
import { embeddedEnvSchema, startEmbedded, type Embedded } from '@lore/embedded';
import { companyKey, generateAgentsWorld, matchingCompanies, worldDirectoryRecords } from '../support/agents-world';

jest.setTimeout(180_000);

/**
 * Embedded mode (`npm start`): the agents worker runs in the process on the in-memory bus, PGlite holds the
 * workflows, the progress streams are in memory, and the one outbox relay publishes the workflows' messages.
 */
describe('a company search in embedded mode', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'lore-agents-embedded-'));
  let lore: Embedded;

  beforeAll(async () => {
    const config = embeddedEnvSchema.parse({ PORT: '0', LORE_OPS_PORT: '0', LORE_DATA_DIR: dataDir, LORE_LOG_LEVEL: 'silent', LORE_OCR: 'false' });
    lore = await startEmbedded(config, createLogger({ level: 'silent', service: 'agents-embedded' }));
  });
  afterAll(async () => {
    await lore?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const call = async (method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> => {
    const res = await fetch(`${lore.url}${path}`, {
      method,
      headers: { 'x-api-key': lore.credentials.api_key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, json: text ? JSON.parse(text) : null };
  };

  it('runs to completed with the directory\'s matching companies, and reports its progress stream', async () => {
    const world = generateAgentsWorld(1, { companies: 80 });
    await upsertDirectoryRecords(lore.parts.db, lore.credentials.tenant_id, worldDirectoryRecords(world).map((r) => ({ kind: r.kind, data: r.data, source: r.source })));
    const truth = matchingCompanies(world, { industry: 'Fintech', city: 'Berlin' }).map(companyKey);
    expect(truth.length).toBeGreaterThan(0);
    const start = await call('POST', '/company-search/start', { prompt: 'Find fintech companies in Berlin' });
    expect(start.status).toBe(200);
    const thread = start.json.thread_id as string;
    let snap: any = null;
    for (let i = 0; i < 600 && snap?.status !== 'completed'; i++) {
      await new Promise((r) => setTimeout(r, 100));
      snap = (await call('GET', `/company-search/status/${thread}`)).json;
      expect(snap.status).not.toBe('error');
    }
    expect(snap).toMatchObject({ status: 'completed', current_step: 'completed' });
    expect(new Set(snap.all_companies.map((r: any) => r.entity_key))).toEqual(new Set(truth));
    const stream = await call('GET', `/api/stream/stream-status/workflow:${thread}`);
    expect(stream.status).toBe(200);
    expect(stream.json).toMatchObject({ stream_key: `workflow:${thread}`, active: false });
    expect(stream.json.length).toBeGreaterThanOrEqual(4);
    expect((await call('GET', '/api/stream/active-streams')).json).toContain(`workflow:${thread}`);
  });
});
