import { z } from 'zod';
import type { HealthAssessment } from '../../domain/health';

export const HealthSchema = z.object({
  score: z.number().int().min(0).max(100),
  status: z.enum(['healthy', 'degraded', 'unhealthy']),
  diagnostics: z.array(z.object({ code: z.string(), severity: z.enum(['info', 'warning', 'critical']), message: z.string(), penalty: z.number(), value: z.number() })),
  inputs: z.record(z.string(), z.number()),
  assessed_at: z.string(),
});

export function presentHealth(h: HealthAssessment & { assessed_at: string }): z.input<typeof HealthSchema> {
  return {
    score: h.score,
    status: h.status,
    diagnostics: h.diagnostics.map((d) => ({ code: d.code, severity: d.severity, message: d.message, penalty: d.penalty, value: d.value })),
    inputs: { ...h.inputs },
    assessed_at: h.assessed_at,
  };
}
