import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/** Seconds, for one request to the API server or to the platform (watches excluded). */
const REQUEST_BUCKETS = [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

/** The operator's own metrics. Labels are bounded: controller names, verbs, result kinds; never object names. */
export interface OperatorMetrics {
  reconcileDuration: Histogram<'controller' | 'result'>;
  reconcileErrors: Counter<'controller' | 'kind'>;
  queueDepth: Gauge<'controller'>;
  queueAdds: Counter<'controller'>;
  queueRetries: Counter<'controller'>;
  inFlight: Gauge<'controller'>;
  leader: Gauge;
  kubeRequests: Counter<'verb' | 'resource' | 'code'>;
  kubeRequestDuration: Histogram<'verb'>;
  platformRequests: Counter<'operation' | 'status'>;
  platformRequestDuration: Histogram<'operation'>;
}

export function createOperatorMetrics(registry: Registry): OperatorMetrics {
  const registers = [registry];
  return {
    reconcileDuration: new Histogram({
      name: 'lore_operator_reconcile_duration_seconds',
      help: 'Duration of one reconcile, by controller and result (success, requeue, error)',
      labelNames: ['controller', 'result'] as const,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    }),
    reconcileErrors: new Counter({
      name: 'lore_operator_reconcile_errors_total',
      help: 'Failed reconciles by controller and error kind (kube, conflict, platform, other)',
      labelNames: ['controller', 'kind'] as const,
      registers,
    }),
    queueDepth: new Gauge({
      name: 'lore_operator_workqueue_depth',
      help: 'Keys waiting in the work queue (not counting keys in flight or waiting for a backoff timer)',
      labelNames: ['controller'] as const,
      registers,
    }),
    queueAdds: new Counter({
      name: 'lore_operator_workqueue_adds_total',
      help: 'Keys added to the work queue (before merging repeats)',
      labelNames: ['controller'] as const,
      registers,
    }),
    queueRetries: new Counter({
      name: 'lore_operator_workqueue_retries_total',
      help: 'Keys requeued with backoff after a failed reconcile',
      labelNames: ['controller'] as const,
      registers,
    }),
    inFlight: new Gauge({
      name: 'lore_operator_reconciles_in_flight',
      help: 'Reconciles running now',
      labelNames: ['controller'] as const,
      registers,
    }),
    leader: new Gauge({
      name: 'lore_operator_leader',
      help: '1 while this replica holds the leader Lease and runs the controllers, else 0',
      registers,
    }),
    kubeRequests: new Counter({
      name: 'lore_operator_kube_requests_total',
      help: 'Requests to the Kubernetes API server by verb, resource and HTTP status',
      labelNames: ['verb', 'resource', 'code'] as const,
      registers,
    }),
    kubeRequestDuration: new Histogram({
      name: 'lore_operator_kube_request_duration_seconds',
      help: 'Latency of requests to the Kubernetes API server (watches excluded)',
      labelNames: ['verb'] as const,
      buckets: REQUEST_BUCKETS,
      registers,
    }),
    platformRequests: new Counter({
      name: 'lore_operator_platform_requests_total',
      help: 'Calls to the gateway internal admin API by operation and HTTP status',
      labelNames: ['operation', 'status'] as const,
      registers,
    }),
    platformRequestDuration: new Histogram({
      name: 'lore_operator_platform_request_duration_seconds',
      help: 'Latency of calls to the gateway internal admin API by operation',
      labelNames: ['operation'] as const,
      buckets: REQUEST_BUCKETS,
      registers,
    }),
  };
}
