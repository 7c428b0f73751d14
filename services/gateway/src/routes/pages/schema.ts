import { z } from 'zod';
import type { Principal } from '../../auth/authenticate';

export const pingView = z.object({ status: z.string(), service: z.string(), tenant_id: z.string(), role: z.string() });
export type PingView = z.input<typeof pingView>;

export function presentPing(p: Principal | undefined): PingView {
  return { status: 'ok', service: 'gateway', tenant_id: p?.tenantId ?? '', role: p?.role ?? '' };
}
