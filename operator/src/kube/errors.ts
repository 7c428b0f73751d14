import type { KubeStatus } from './types';

/** An error answered by the Kubernetes API server, carrying its HTTP status and `Status.reason`. */
export class KubeApiError extends Error {
  readonly status: number;
  readonly reason: string;
  readonly causes: string[];

  constructor(status: number, method: string, path: string, body: KubeStatus | undefined) {
    const causes = (body?.details?.causes ?? []).map((c) => [c.field, c.message].filter(Boolean).join(': '));
    super(`${method} ${path}: ${status} ${body?.reason ?? ''} ${body?.message ?? ''}`.trim());
    this.name = 'KubeApiError';
    this.status = status;
    this.reason = body?.reason ?? 'Unknown';
    this.causes = causes;
  }
}

export function isNotFound(err: unknown): boolean {
  return err instanceof KubeApiError && err.status === 404;
}

export function isConflict(err: unknown): boolean {
  return err instanceof KubeApiError && err.status === 409;
}

export function isGone(err: unknown): boolean {
  return err instanceof KubeApiError && err.status === 410;
}

export function isAlreadyExists(err: unknown): boolean {
  return err instanceof KubeApiError && err.status === 409 && err.reason === 'AlreadyExists';
}

/**
 * A write refused because the object it names (by uid) no longer exists: the API server answers 409 "Precondition
 * failed: UID in precondition" when the object was deleted, or deleted and made again under the same name.
 */
export function isUidPreconditionFailed(err: unknown): boolean {
  return err instanceof KubeApiError && err.status === 409 && /UID in precondition/i.test(err.message);
}
