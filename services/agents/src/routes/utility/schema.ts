import { z } from 'zod';
import type { HealthReport } from '../../application/health';

export const healthView = z.object({
  status: z.enum(['healthy', 'unhealthy']),
  timestamp: z.string(),
  version: z.string(),
  environment: z.string(),
});

export const rootView = z.object({
  name: z.string(),
  version: z.string(),
  environment: z.string(),
  docs_url: z.string(),
  health_url: z.string(),
});

export const presentHealth = (h: HealthReport): z.input<typeof healthView> => ({ ...h });
