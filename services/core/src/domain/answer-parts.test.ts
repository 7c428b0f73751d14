import { withoutCitations } from './answer-parts';

describe('withoutCitations', () => {
  it('removes every marker form the checker leaves and nothing else', () => {
    expect(withoutCitations('The fog horn sounds at nine [1]. Keepers log it [2, 3][4].')).toBe('The fog horn sounds at nine. Keepers log it.');
    expect(withoutCitations('Arrays like a[i] stay.')).toBe('Arrays like a[i] stay.');
  });
});
