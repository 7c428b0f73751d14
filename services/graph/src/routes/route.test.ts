import { AppError, IDENTITY_HEADER, IdentitySigner, createLogger, type Identity } from '@lore/runtime';
import type { GraphState } from './route';
import { connectorGuard, memoryGuard } from './route';

const signer = new IdentitySigner('graph-route-guard-test-secret-0123456789');
const identity = (extra: Partial<Identity> = {}): Identity => ({
  tenant_id: 't_guard',
  workspace_id: 'ws_guard',
  memory_id: 'mem_guard',
  credential: 'ck_test',
  subject: 'key_guard',
  role: 'admin',
  ...extra,
});

/** Runs the guard on a request carrying `token`; returns the state it set, or the error it refused with. */
async function guard(access: 'read' | 'write' | 'connector', token: string | undefined): Promise<{ passed: boolean; state?: Partial<GraphState>; error?: AppError }> {
  const state = { log: createLogger({ level: 'silent', service: 'graph-guard-test' }) } as unknown as GraphState;
  const ctx = { state, get: (name: string) => (name === IDENTITY_HEADER ? (token ?? '') : '') };
  let passed = false;
  try {
    await (access === 'connector' ? connectorGuard(signer) : memoryGuard(signer)(access))(ctx as never, async () => {
      passed = true;
    });
    return { passed, state };
  } catch (err) {
    return { passed, error: err as AppError };
  }
}

describe('the memory guard', () => {
  it('takes the tenant, workspace and memory from the signed identity only', async () => {
    const r = await guard('read', await signer.sign(identity()));
    expect(r.passed).toBe(true);
    expect(r.state?.scope).toEqual({ tenantId: 't_guard', workspaceId: 'ws_guard', memoryId: 'mem_guard', admin: true, groups: [] });
  });

  it('takes the caller\'s user groups from the identity (none when it names none: an older gateway\'s, a key\'s)', async () => {
    const member = await guard('read', await signer.sign(identity({ role: 'member', credential: 'session', groups: [3, 12] })));
    expect(member.state?.scope).toMatchObject({ admin: false, groups: [3, 12] });
    const key = await guard('read', await signer.sign(identity({ role: 'memory', credential: 'mk' })));
    expect(key.state?.scope).toMatchObject({ admin: false, groups: [] });
  });

  it('lets administrators (admin users, tenant keys) see every document, and no other role', async () => {
    for (const [role, admin] of [['admin', true], ['tenant_admin', true], ['member', false], ['memory', false], ['integration', false]] as const) {
      const r = await guard('read', await signer.sign(identity({ role })));
      expect({ role, admin: r.state?.scope?.admin }).toEqual({ role, admin });
    }
  });

  it('refuses a missing or forged identity with 401 before the route runs', async () => {
    const other = new IdentitySigner('another-secret-that-is-long-enough-0123456789');
    for (const token of [undefined, 'not-a-token', await other.sign(identity())]) {
      const r = await guard('read', token);
      expect({ passed: r.passed, status: r.error?.status }).toEqual({ passed: false, status: 401 });
    }
  });

  it('answers 404 to a credential with no memory', async () => {
    const r = await guard('read', await signer.sign(identity({ memory_id: '' })));
    expect({ passed: r.passed, status: r.error?.status }).toEqual({ passed: false, status: 404 });
  });

  it('lets a read-only key read but not write', async () => {
    const token = await signer.sign(identity({ scopes: { access: 'read' } }));
    expect((await guard('read', token)).passed).toBe(true);
    const write = await guard('write', token);
    expect({ passed: write.passed, status: write.error?.status }).toEqual({ passed: false, status: 403 });
    expect((await guard('write', await signer.sign(identity()))).passed).toBe(true);
  });
});

describe('the connector guard', () => {
  it('lets an administrator with a memory through, with the memory scope', async () => {
    for (const role of ['admin', 'tenant_admin']) {
      const r = await guard('connector', await signer.sign(identity({ role })));
      expect({ role, passed: r.passed, scope: r.state?.scope }).toEqual({ role, passed: true, scope: { tenantId: 't_guard', workspaceId: 'ws_guard', memoryId: 'mem_guard', admin: true, groups: [] } });
    }
  });

  it('refuses another role and a read-only key with 403, no memory with 404, no identity with 401', async () => {
    const cases: Array<[string | undefined, number]> = [
      [await signer.sign(identity({ role: 'member' })), 403],
      [await signer.sign(identity({ role: 'memory' })), 403],
      [await signer.sign(identity({ scopes: { access: 'read' } })), 403],
      [await signer.sign(identity({ memory_id: '' })), 404],
      [undefined, 401],
    ];
    for (const [token, status] of cases) {
      const r = await guard('connector', token);
      expect({ passed: r.passed, status: r.error?.status }).toEqual({ passed: false, status });
    }
  });
});
