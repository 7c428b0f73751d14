import { MANAGED_BY_LABEL, MANAGED_BY_VALUE, MEMORY_NAMESPACE_LABEL, MEMORY_UID_LABEL, OWNER_KIND_LABEL } from './names';
import type { OperatorSettings } from './settings';
import type { IngressObject, MemoryObject } from './types';

/** Annotation on a memory's Ingress naming its Memory (`namespace/name`), used to map Ingress events back. */
export const MEMORY_ANNOTATION = 'lore.dev/memory';

/**
 * The Ingress of a memory: its hostname, every path, to the gateway Service. It lives in the gateway's namespace
 * because an Ingress can only route to a Service of its own namespace; that also keeps the routing of a memory
 * host out of reach of users of the Memory's namespace. (Owner references cannot cross namespaces, so the
 * Memory's finalizer deletes it.)
 */
export function memoryIngress(memory: MemoryObject, name: string, hostname: string, settings: OperatorSettings): IngressObject {
  const { ingress } = settings;
  const port = typeof settings.gatewayServicePort === 'number' ? { number: settings.gatewayServicePort } : { name: settings.gatewayServicePort };
  const tls =
    ingress.tls.mode === 'secret'
      ? [{ hosts: [hostname], secretName: ingress.tls.secretName }]
      : ingress.tls.mode === 'per-host'
        ? [{ hosts: [hostname], secretName: `${name}-tls` }]
        : undefined;
  const spec: Record<string, unknown> = {
    rules: [
      {
        host: hostname,
        http: { paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: settings.gatewayServiceName, port } } }] },
      },
    ],
  };
  if (ingress.className) spec.ingressClassName = ingress.className;
  if (tls) spec.tls = tls;
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    metadata: {
      name,
      namespace: settings.gatewayNamespace,
      labels: {
        [MANAGED_BY_LABEL]: MANAGED_BY_VALUE,
        [OWNER_KIND_LABEL]: 'Memory',
        [MEMORY_NAMESPACE_LABEL]: String(memory.metadata.namespace),
        [MEMORY_UID_LABEL]: String(memory.metadata.uid),
      },
      annotations: { ...ingress.annotations, [MEMORY_ANNOTATION]: `${memory.metadata.namespace}/${memory.metadata.name}` },
    },
    spec,
  };
}
