import type { AgentsDeps } from './context';

export interface HealthReport {
  status: 'healthy' | 'unhealthy';
  timestamp: string;
  version: string;
  environment: string;
}

/** Healthy when the database answers within two seconds (every route needs it). */
export async function health(deps: AgentsDeps): Promise<HealthReport> {
  let healthy = false;
  try {
    await Promise.race([deps.db.query('SELECT 1'), new Promise((_, reject) => setTimeout(() => reject(new Error('timeout')), 2_000).unref())]);
    healthy = true;
  } catch (err) {
    deps.logger.warn({ err }, 'health: the database did not answer');
  }
  return { status: healthy ? 'healthy' : 'unhealthy', timestamp: new Date().toISOString(), ...deps.facts };
}
