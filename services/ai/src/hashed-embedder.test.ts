import { HashedEmbedder } from './hashed-embedder';

const dot = (a: number[], b: number[]) => a.reduce((s, x, i) => s + x * (b[i] ?? 0), 0);

describe('hashed embedder', () => {
  const e = new HashedEmbedder(384);
  it('is deterministic, unit length and of the configured size', async () => {
    const [a, b] = await e.embed(['Invoices are due in thirty days', 'Invoices are due in thirty days']);
    expect(a).toHaveLength(384);
    expect(a).toEqual(b);
    expect(dot(a!, a!)).toBeCloseTo(1);
  });
  it('places morphological variants closer than unrelated text', async () => {
    const [q, variant, other] = await e.embed(['invoicing deadlines', 'invoice deadline rules', 'garden birds eat seeds']);
    expect(dot(q!, variant!)).toBeGreaterThan(dot(q!, other!));
  });
  it('maps empty text to the zero vector', async () => {
    const [z] = await e.embed(['']);
    expect(z!.every((x) => x === 0)).toBe(true);
  });
});
