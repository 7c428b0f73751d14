/**
 * The company-search, people-search and research tools in embedded mode (`npm start`'s composition): the tool server
 * on its socket behind the in-process gateway, its tools calling the API back through the public listener with the
 * caller's key (the development key; others made through the admin API). The cases: test/mcp/search-tools.ts.
 */
import { listen, type StartedServer } from '@lore/runtime';
import { useEmbedded } from '../support/embedded';
import { describeSearchTools } from './search-tools';

jest.setTimeout(120_000);

const e = useEmbedded('mcp-embedded');
// The admin API on a port of its own (the process's default one may be taken by another suite's).
let admin: StartedServer;
beforeAll(async () => {
  admin = await listen(e.lore.parts.gateway.adminApp, 0, '127.0.0.1');
});
afterAll(async () => {
  await admin?.close();
});

describeSearchTools('embedded mode', () => ({
  url: e.lore.url,
  key: e.lore.credentials.api_key,
  db: e.lore.parts.db,
  tenantId: e.lore.credentials.tenant_id,
  // The documented default (LORE_MCP_MAX_SESSIONS_PER_KEY).
  sessionsPerKey: 16,
  newKey: async (scopes = {}) => {
    const res = await fetch(`${admin.url}/internal/v1/tenants/${encodeURIComponent(e.lore.credentials.tenant_id)}/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${e.lore.credentials.admin_token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'live', name: 'mcp-test', scopes }),
    });
    const body = (await res.json()) as { key?: string };
    if (res.status !== 201 || !body.key) throw new Error(`key creation failed: ${res.status} ${JSON.stringify(body)}`);
    return body.key;
  },
}));
