import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { createLogger, createMetricsRegistry, exitOnConfigError } from '@lore/runtime/kit';
import { loadOperatorConfig } from './config';
import { composeOperator } from './compose';
import { connectionFromKubeConfig } from './kube/kubeconfig';
import type { ControllerHooks } from './controllers/settings';

/** Composition root of the operator process: the only place that reads the environment. */
async function main(): Promise<void> {
  const config = loadOperatorConfig(process.env, `${hostname()}-${randomBytes(3).toString('hex')}`);
  const logger = createLogger({ level: config.logLevel, service: 'operator' });
  const registry = createMetricsRegistry('operator');
  const { connection } = await connectionFromKubeConfig(config.kubeconfig);
  const composed = composeOperator({
    config,
    connection,
    logger,
    registry,
    hooks: crashHooks(config.crashAt),
    onLostLeadership: () => {
      logger.error('leadership lost: exiting so that this replica restarts as a fresh candidate');
      process.exit(1);
    },
  });
  composed.lifecycle.installSignalHandlers();
  const server = await composed.start();
  logger.info(
    { port: server.port, identity: config.identity, leader_election: !!config.leaderElection, gateway_namespace: config.settings.gatewayNamespace },
    'operator started',
  );
}

/** Fault injection for the crash-recovery suite: die without any cleanup, like a killed pod. */
function crashHooks(at: 'key-created' | 'secret-written' | undefined): ControllerHooks | undefined {
  const die = () => process.kill(process.pid, 'SIGKILL');
  if (at === 'key-created') return { afterKeyCreated: die };
  if (at === 'secret-written') return { afterSecretWritten: die };
  return undefined;
}

main().catch(exitOnConfigError);
