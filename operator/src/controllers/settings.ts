/** What the operator is configured with (from the environment in main.ts, from the chart's values in a cluster). */
export interface IngressTls {
  /** none: plain HTTP; secret: one shared (wildcard) certificate Secret; per-host: `<ingress>-tls`, e.g. issued by cert-manager. */
  mode: 'none' | 'secret' | 'per-host';
  /** The shared Secret, in the gateway's namespace, for mode `secret`. */
  secretName?: string;
}

export interface OperatorSettings {
  /** Domain under which default memory hostnames are made: `<name>-<namespace>.<baseDomain>`. */
  baseDomain: string;
  /**
   * Domains under which a Memory may name any `spec.hostname` (the platform administrator's choice); under the base
   * domain a namespace may claim only `<label>-<namespace>.<baseDomain>` (`hostnameProblem`).
   */
  hostnameDomains: readonly string[];
  /** Namespace of the gateway Service; the per-memory Ingresses are created there. */
  gatewayNamespace: string;
  gatewayServiceName: string;
  gatewayServicePort: number | string;
  ingress: {
    className?: string;
    annotations: Record<string, string>;
    tls: IngressTls;
  };
  /** What deleting a Memory does to its data when the Memory does not say: Retain or Delete. */
  defaultDataRetention: 'Retain' | 'Delete';
  /** Overlap during which a replaced mk_ key keeps working when the operator has to reissue it. */
  memoryKeyOverlapSeconds: number;
}

/** Fault injection for crash-recovery tests: the process dies at exactly this point of a key issuance. */
export interface ControllerHooks {
  /** After the platform answered a create or rotate call, before anything in Kubernetes names the new key. */
  afterKeyCreated?(): void;
  /** After the Secret holds the new key, before status confirms it. */
  afterSecretWritten?(): void;
}
