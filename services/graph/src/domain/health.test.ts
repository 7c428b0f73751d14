import { assessHealth } from './health';

describe('health', () => {
  const base = { documents: 100, indexed: 100, failed: 0, stale: 0, needs_review: 0, open_contradictions: 0, dlp_flagged: 0, duplicates: 0, vaults: 3, empty_vaults: 0 };
  it('is 100 for a clean memory', () => {
    expect(assessHealth(base)).toMatchObject({ score: 100, status: 'healthy', diagnostics: [] });
  });
  it('drops with failures, backlog and contradictions and explains why', () => {
    const h = assessHealth({ ...base, failed: 10, needs_review: 30, open_contradictions: 5 });
    expect(h.score).toBe(71);
    expect(h.status).toBe('degraded');
    expect(h.diagnostics.map((d) => d.code)).toEqual(['indexing_failed', 'review_backlog', 'open_contradictions']);
  });
  it('never leaves [0, 100]', () => {
    const h = assessHealth({ ...base, documents: 1, indexed: 0, failed: 1, stale: 1, needs_review: 1, open_contradictions: 9, duplicates: 1, vaults: 0 });
    expect(h.score).toBe(0);
  });
});
