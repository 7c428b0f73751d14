/** Counts the health assessment is computed from (one memory). */
export interface HealthInputs {
  documents: number;
  indexed: number;
  failed: number;
  /** Accepted but not indexed for longer than the staleness window. */
  stale: number;
  needs_review: number;
  open_contradictions: number;
  dlp_flagged: number;
  duplicates: number;
  vaults: number;
  empty_vaults: number;
}

export type Severity = 'info' | 'warning' | 'critical';

export interface Diagnostic {
  code: string;
  severity: Severity;
  message: string;
  /** Points taken off the score by this finding. */
  penalty: number;
  value: number;
}

export interface HealthAssessment {
  score: number;
  status: 'healthy' | 'degraded' | 'unhealthy';
  diagnostics: Diagnostic[];
  inputs: HealthInputs;
}

const ratio = (n: number, d: number) => (d > 0 ? n / d : 0);

/**
 * Memory health on a 0–100 scale: 100 minus capped penalties for what makes answers worse (failed or stale
 * indexing, content waiting for review, unresolved contradictions, duplicates, missing vault definitions).
 * Each penalty is proportional to the share of the memory affected, so one bad document in ten thousand
 * barely moves the score while a backlog does.
 */
export function assessHealth(inputs: HealthInputs): HealthAssessment {
  const d: Diagnostic[] = [];
  const push = (code: string, severity: Severity, message: string, penalty: number, value: number) => {
    if (value > 0) d.push({ code, severity, message, penalty: Math.round(penalty * 10) / 10, value });
  };
  const docs = inputs.documents;
  push('indexing_failed', 'critical', 'documents failed to index and are not searchable', 30 * Math.min(1, ratio(inputs.failed, docs) * 4), inputs.failed);
  push('indexing_stale', 'warning', 'documents are waiting for indexing longer than expected', 15 * Math.min(1, ratio(inputs.stale, docs) * 4), inputs.stale);
  push('review_backlog', 'warning', 'documents in v_unassigned need review', 20 * Math.min(1, ratio(inputs.needs_review, docs) * 2), inputs.needs_review);
  push('open_contradictions', 'warning', 'sources disagree and nobody resolved it', 20 * Math.min(1, ratio(inputs.open_contradictions, Math.max(1, inputs.indexed)) * 5), inputs.open_contradictions);
  push('duplicates', 'info', 'identical documents were ingested more than once', 5 * Math.min(1, ratio(inputs.duplicates, docs) * 5), inputs.duplicates);
  push('dlp_flagged', 'info', 'documents contained sensitive values that were masked', 0, inputs.dlp_flagged);
  if (inputs.vaults === 0) push('no_vaults', 'warning', 'no vault is defined, so every document needs review', 10, 1);
  push('empty_vaults', 'info', 'vaults have no documents yet', 0, inputs.empty_vaults);
  const score = Math.max(0, Math.min(100, Math.round(100 - d.reduce((s, x) => s + x.penalty, 0))));
  return { score, status: score >= 80 ? 'healthy' : score >= 50 ? 'degraded' : 'unhealthy', diagnostics: d, inputs };
}
