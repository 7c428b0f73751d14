import { classify, REVIEW_THRESHOLD, UNASSIGNED_VAULT, type VaultProfile } from './routing';

const vaults: VaultProfile[] = [
  {
    vault_id: 'v_finance',
    name: 'Finance',
    description: 'Invoices, budgets, revenue, expenses, payroll and quarterly financial reports.',
    examples: ['Q3 revenue grew 12% while operating expenses fell.', 'Invoice 443 is overdue; payment terms are net 30.'],
  },
  {
    vault_id: 'v_engineering',
    name: 'Engineering',
    description: 'Software architecture, deployments, incidents, databases, APIs and code reviews.',
    examples: ['The API gateway deployment failed because the database migration timed out.', 'Postmortem for the Kafka incident.'],
  },
  {
    vault_id: 'v_people',
    name: 'People',
    description: 'Hiring, onboarding, benefits, holidays and performance reviews of employees.',
    examples: ['New employees get their laptop on the first onboarding day.', 'Holiday requests need manager approval.'],
  },
];

describe('vault classifier', () => {
  it('routes clearly on-topic content to its vault with high confidence', () => {
    const d = classify('The quarterly revenue report shows expenses above budget and two unpaid invoices.', vaults);
    expect(d.vault_id).toBe('v_finance');
    expect(d.needs_review).toBe(false);
    expect(d.confidence).toBeGreaterThanOrEqual(REVIEW_THRESHOLD);
    expect(d.confidence).toBeLessThanOrEqual(1);
  });

  it('routes engineering incidents to engineering', () => {
    const d = classify('Incident: the database migration broke the API deployment; the code review missed it.', vaults);
    expect(d.vault_id).toBe('v_engineering');
    expect(d.needs_review).toBe(false);
  });

  it('sends unrelated content to v_unassigned for review', () => {
    const d = classify('The cat sat on the mat and watched the birds in the garden.', vaults);
    expect(d.vault_id).toBe(UNASSIGNED_VAULT);
    expect(d.needs_review).toBe(true);
    expect(d.confidence).toBeLessThan(REVIEW_THRESHOLD);
  });

  it('sends content split between two vaults to review', () => {
    const d = classify('Payroll budget for onboarding new employees and hiring expenses.', vaults);
    expect(d.confidence).toBeLessThan(REVIEW_THRESHOLD);
    expect(d.vault_id).toBe(UNASSIGNED_VAULT);
    expect(d.scores.length).toBe(3);
  });

  it('needs review when the memory has no vault besides v_unassigned', () => {
    const d = classify('anything at all', [{ vault_id: UNASSIGNED_VAULT, name: 'Unassigned', description: '', examples: [] }]);
    expect(d).toEqual({ vault_id: UNASSIGNED_VAULT, confidence: 0, needs_review: true, scores: [] });
  });

  it('honours a stricter threshold', () => {
    const text = 'The quarterly revenue report shows expenses above budget and two unpaid invoices.';
    const normal = classify(text, vaults);
    const strict = classify(text, vaults, Math.min(1, normal.confidence + 0.01));
    expect(strict.vault_id).toBe(UNASSIGNED_VAULT);
    expect(strict.confidence).toBe(normal.confidence);
  });

  it('keeps confidence in [0, 1] for every input', () => {
    for (const text of ['', 'finance finance finance', 'revenue invoices budget expenses payroll', 'x'.repeat(1000)]) {
      const d = classify(text, vaults);
      expect(d.confidence).toBeGreaterThanOrEqual(0);
      expect(d.confidence).toBeLessThanOrEqual(1);
    }
  });

  it('routes a document at exactly 0.70 to its vault, and one just below to review', () => {
    const at = classify('The note mentions revenue and budgets and overdue and database.', vaults);
    expect(REVIEW_THRESHOLD).toBe(0.7);
    expect(at.confidence).toBe(0.7);
    expect(at).toMatchObject({ vault_id: 'v_finance', needs_review: false });
    const below = classify('The note mentions budgets and overdue and migration.', vaults);
    expect(below.confidence).toBeLessThan(0.7);
    expect(below.confidence).toBeGreaterThanOrEqual(0.69);
    expect(below).toMatchObject({ vault_id: UNASSIGNED_VAULT, needs_review: true });
  });
});
