import { TenantTurns } from './tenant-turns';

describe('TenantTurns', () => {
  it('gives the tenants turns, each tenant\'s work in arrival order, skipping a tenant that may not run', () => {
    const turns = new TenantTurns<string>();
    for (const [tenant, key] of [['a', 'a1'], ['a', 'a2'], ['a', 'a3'], ['b', 'b1'], ['c', 'c1'], ['b', 'b2']] as const) turns.add(tenant, key, key.toUpperCase());
    const order: string[] = [];
    for (let next = turns.take(() => true); next; next = turns.take(() => true)) order.push(next.key);
    // b added its second item last: it went to the back of the line, behind c.
    expect(order).toEqual(['a1', 'c1', 'b1', 'a2', 'b2', 'a3']);

    turns.add('a', 'a4', 'x');
    turns.add('b', 'b3', 'y');
    expect(turns.take((t) => t !== 'a')).toEqual({ tenantId: 'b', key: 'b3', item: 'y' });
    expect(turns.take((t) => t !== 'a')).toBeNull();
    expect(turns.size).toBe(1);
  });

  it('keeps a key once, puts urgent work first in its tenant\'s line, and forgets what is deleted', () => {
    const turns = new TenantTurns<number>();
    turns.add('a', 'k1', 1);
    turns.add('a', 'k1', 99);
    turns.add('a', 'k2', 2);
    turns.add('a', 'k0', 0, true);
    expect(turns.has('a', 'k1')).toBe(true);
    expect(turns.entries().map((e) => e.item)).toEqual([0, 1, 2]);
    turns.delete('a', 'k0');
    turns.delete('a', 'k1');
    turns.delete('a', 'k2');
    expect(turns.size).toBe(0);
    expect(turns.take(() => true)).toBeNull();
  });
});
