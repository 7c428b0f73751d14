import { AppError } from '@lore/runtime';
import type { Principal } from '../auth/authenticate';
import type { GatewayContext } from '../context';
import { MemoryGatewayState } from '../state/memory-state';
import { admitChatMessage, chatBudgets } from './chat-limits';

const limits = (perUserPerMinute: number, perGroupPerMinute: number, perTenantPerMinute: number) => ({ perUserPerMinute, perGroupPerMinute, perTenantPerMinute });

/** The two things `admitChatMessage` reads of a gateway. */
function gateway(chatMessageLimits: ReturnType<typeof limits>): GatewayContext {
  return { config: { chatMessageLimits }, state: new MemoryGatewayState(() => 1_700_000_000_000) } as unknown as GatewayContext;
}

const user = (subject: string, groups: number[]) => ({ tenantId: 't_1', credential: 'session', subject, groups }) as unknown as Principal;

async function refusal(ctx: GatewayContext, p: Principal): Promise<string | null> {
  try {
    await admitChatMessage(ctx, p);
    return null;
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    return ((err as AppError).body as { detail: string }).detail;
  }
}

describe('chat message budgets', () => {
  it('are the caller\'s, then each of its groups\' in order, then the tenant\'s; only those turned on', () => {
    expect(chatBudgets(limits(2, 3, 4), user('u1', [2, 9])).map((b) => [b.key, b.rate.burst])).toEqual([
      ['chatmsg:u:t_1:session:u1', 2],
      ['chatmsg:g:t_1:2', 3],
      ['chatmsg:g:t_1:9', 3],
      ['chatmsg:t:t_1', 4],
    ]);
    expect(chatBudgets(limits(0, 3, 0), user('u1', []))).toEqual([]);
    expect(chatBudgets(limits(0, 0, 0), user('u1', [2]))).toEqual([]);
  });

  it('spend each group of a user in several, and refuse when any of them is exhausted', async () => {
    const ctx = gateway(limits(0, 2, 0));
    // u1 is in groups 1 and 2: its two messages spend both groups' two.
    expect(await refusal(ctx, user('u1', [1, 2]))).toBeNull();
    expect(await refusal(ctx, user('u1', [1, 2]))).toBeNull();
    // u2, in group 2 only, finds it spent; u3, in group 3, has a budget of its own; a key (no group) none at all.
    expect(await refusal(ctx, user('u2', [2]))).toBe('user group 2\'s chat message rate limit is reached; retry later');
    expect(await refusal(ctx, user('u3', [3]))).toBeNull();
    expect(await refusal(ctx, { tenantId: 't_1', credential: 'ck_live', subject: 'key_1', groups: [] } as unknown as Principal)).toBeNull();
  });

  it('spend a later budget only when every earlier one let the message through', async () => {
    const ctx = gateway(limits(1, 5, 0));
    expect(await refusal(ctx, user('u1', [4]))).toBeNull();
    // Refused by u1's own limit: group 4's budget is not touched.
    for (let i = 0; i < 3; i++) expect(await refusal(ctx, user('u1', [4]))).toContain('your chat message rate limit');
    for (let i = 0; i < 4; i++) expect(await refusal(ctx, user(`other${i}`, [4]))).toBeNull();
    expect(await refusal(ctx, user('other9', [4]))).toContain('user group 4\'s');
  });
});
