import { IdentitySigner, PgliteDb, createLogger, createMetricsRegistry, generateEncryptionKey, isAppError, parseEncryptionKeys } from '@lore/runtime';
import { createGateway, type Gateway } from '../gateway';
import { gatewayConfig } from '../config';
import type { GatewayContext } from '../context';
import { MemoryGatewayState } from '../state/memory-state';
import { createTenant, createWorkspace } from './tenancy';
import { createProject, getWorkspaceProject, listWorkspaceProjects, type ProjectActor } from './projects';

/** The project rules on embedded PostgreSQL (the same SQL the cluster runs). */
describe('projects application module', () => {
  let db: PgliteDb;
  let gateway: Gateway;
  let ctx: GatewayContext;
  let n = 0;

  beforeAll(async () => {
    db = await PgliteDb.open();
    gateway = await createGateway({
      db,
      state: new MemoryGatewayState(),
      logger: createLogger({ level: 'silent', service: 'projects-unit' }),
      metrics: createMetricsRegistry('projects-unit', { defaultMetrics: false }),
      signer: new IdentitySigner('unit-identity-secret-0123456789abcdef'),
      config: gatewayConfig({
        sessions: { secret: 'unit-session-secret-0123456789abcdef' },
        encryptionKeys: parseEncryptionKeys(generateEncryptionKey('unit')),
        plans: { two: { max_projects: 2 }, unlimited: {} },
        defaultPlan: 'unlimited',
      }),
    });
    ctx = gateway.context;
  }, 60_000);

  afterAll(async () => {
    await gateway?.close();
    await db?.close();
  });

  async function actor(plan = 'unlimited'): Promise<ProjectActor> {
    const { tenant } = await createTenant(ctx, { tenant_id: `t-proj-${++n}`, name: 'Projects', plan });
    return { tenantId: tenant.tenant_id, workspaceId: tenant.default_workspace_id!, projectId: null };
  }

  async function refusal(p: Promise<unknown>): Promise<{ code: string; details: unknown }> {
    const err = await p.then(() => null, (e: unknown) => e);
    if (!isAppError(err)) throw new Error(`expected an AppError, got ${String(err)}`);
    return { code: err.code, details: err.details };
  }

  it('derives the slug from the name and suffixes a taken one; a named slug that is taken is a conflict', async () => {
    const a = await actor();
    const first = await createProject(ctx, a, { name: 'Launch Plan' });
    const second = await createProject(ctx, a, { name: 'Launch  plan!' });
    expect([first.slug, second.slug]).toEqual(['launch-plan', 'launch-plan-2']);
    expect(await refusal(createProject(ctx, a, { name: 'Other', slug: 'launch-plan' }))).toMatchObject({ code: 'CONFLICT' });
    expect((await createProject(ctx, a, { name: 'Other', slug: 'launch-plan-3' })).slug).toBe('launch-plan-3');
    expect(first).toMatchObject({ name: 'Launch Plan', description: '', icon: '', workspace_id: a.workspaceId });
  });

  it('answers CONFLICT once five slugs are taken', async () => {
    const a = await actor();
    for (let i = 0; i < 5; i++) await createProject(ctx, a, { name: 'dup' });
    expect(await refusal(createProject(ctx, a, { name: 'dup' }))).toMatchObject({ code: 'CONFLICT' });
    expect(await listWorkspaceProjects(ctx, a)).toHaveLength(5);
  });

  it('refuses a project-scoped key and creates nothing', async () => {
    const a = await actor();
    const p = await createProject(ctx, a, { name: 'mine' });
    expect(await refusal(createProject(ctx, { ...a, projectId: p.project_id }, { name: 'more' }))).toMatchObject({ code: 'FORBIDDEN' });
    expect(await listWorkspaceProjects(ctx, a)).toHaveLength(1);
  });

  it('stops at the plan\'s max_projects with the plan_limit 402, however the creates interleave', async () => {
    const a = await actor('two');
    const outcomes = await Promise.allSettled(Array.from({ length: 6 }, (_, i) => createProject(ctx, a, { name: `p${i}` })));
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(2);
    expect(await refusal(createProject(ctx, a, { name: 'one more' }))).toEqual({
      code: 'PLAN_LIMIT_EXCEEDED',
      details: { reason: 'plan_limit', limit: 'max_projects', value: 2 },
    });
  });

  it('shows a project only in its workspace, and to a project-scoped key only its own', async () => {
    const a = await actor();
    const p = await createProject(ctx, a, { name: 'seen' });
    const q = await createProject(ctx, a, { name: 'other' });
    const ws = await createWorkspace(ctx, a.tenantId, 'Second');
    expect(await getWorkspaceProject(ctx, a, p.project_id)).toMatchObject({ project_id: p.project_id });
    expect(await getWorkspaceProject(ctx, { ...a, workspaceId: ws.workspace_id }, p.project_id)).toBeNull();
    expect(await getWorkspaceProject(ctx, { ...a, projectId: q.project_id }, p.project_id)).toBeNull();
    expect(await getWorkspaceProject(ctx, a, 'x'.repeat(129))).toBeNull();
    expect((await listWorkspaceProjects(ctx, { ...a, projectId: q.project_id })).map((x) => x.project_id)).toEqual([q.project_id]);
    // Another tenant sees nothing of it.
    const b = await actor();
    expect(await getWorkspaceProject(ctx, { ...b }, p.project_id)).toBeNull();
  });
});
