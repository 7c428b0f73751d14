import { TOPICS, type EventKind } from '@lore/contracts';
import { AppError, SealedValueError, enqueueOutbox, type Db, type Logger, type SecretBox } from '@lore/runtime';
import { lockTenantIn } from '../store/tenants';
import { newId } from './ids';
import { attemptKey, DUE_AT_HEADER, firstAttemptMessage, messageKey, TENANT_HEADER } from './messages';
import { resealSigningSecret, sealSigningSecret } from './secret-storage';
import { generateSigningSecret } from './signing';
import {
  getDeliveryOfSubscription,
  listAttempts,
  listDeadLetters,
  listDeliveries,
  reviveDeadLetters,
  type AttemptRow,
  type DeliveryRow,
  type DeliveryStatus,
} from './store/deliveries';
import {
  countSubscriptions,
  deleteSubscription,
  getSubscription,
  insertSubscription,
  listSubscriptions,
  rotateSecret,
  updateSubscription,
  type SubscriptionRow,
} from './store/subscriptions';
import { checkWebhookUrl, TargetRefusedError } from '@lore/outbound';

/**
 * Who manages subscriptions: the tenant, and the workspace a pinned credential is bound to (null: the whole
 * tenant). A pinned caller creates subscriptions that only receive its workspace's events and sees only those.
 */
export interface Viewer {
  tenantId: string;
  workspaceId: string | null;
}

export interface WebhookServiceOptions {
  /** `LORE_WEBHOOKS_ALLOW_LOOPBACK`: accept loopback receiver URLs at creation (the worker has the same setting). */
  allowLoopbackTargets?: boolean;
  /** Subscriptions one tenant may have. */
  maxSubscriptionsPerTenant?: number;
  /** Where a rotation reports a replaced secret it could not re-seal (kept as stored). */
  logger?: Logger;
}

export interface NewSubscription {
  url: string;
  events: EventKind[];
  description?: string | null;
  enabled?: boolean;
}

export interface SubscriptionChange {
  url?: string;
  events?: EventKind[];
  description?: string | null;
  enabled?: boolean;
}

export type ReplaySelection = { deliveryIds: string[] } | { from: Date | null; to: Date | null };

export const DEFAULT_MAX_SUBSCRIPTIONS = 50;
/** How long the replaced secret keeps signing after a rotation unless the caller says otherwise. */
export const DEFAULT_OVERLAP_SECONDS = 24 * 3600;
export const MAX_OVERLAP_SECONDS = 7 * 24 * 3600;
/** Dead letters one replay call restarts at most; a larger range is replayed in several calls. */
export const MAX_REPLAY = 1000;

/**
 * The subscription rules behind the webhook routes: URL checks, per-tenant limits, secret issue and rotation,
 * delivery history and dead-letter replay. No HTTP here; every read and write runs inside the caller's tenant.
 * Signing secrets are sealed with `secrets` before they reach the database (secret-storage.ts).
 */
export class WebhookService {
  private readonly allowLoopback: boolean;
  private readonly maxSubscriptions: number;

  constructor(
    private readonly db: Db,
    private readonly secrets: SecretBox,
    private readonly options: WebhookServiceOptions = {},
  ) {
    this.allowLoopback = options.allowLoopbackTargets ?? false;
    this.maxSubscriptions = options.maxSubscriptionsPerTenant ?? DEFAULT_MAX_SUBSCRIPTIONS;
  }

  /** Creates a subscription; the signing secret is returned here and never again (the row keeps it sealed). */
  async create(viewer: Viewer, input: NewSubscription): Promise<{ subscription: SubscriptionRow; secret: string }> {
    const url = this.checkUrl(input.url);
    const secret = generateSigningSecret();
    const id = newId('wh');
    const storedSecret = sealSigningSecret(this.secrets, viewer.tenantId, id, secret);
    const subscription = await this.db.withTenant(viewer.tenantId, async (sql) => {
      // The tenant's row lock, as every plan-limited create takes it: concurrent creations of one tenant are
      // serialised, so the limit cannot be overshot.
      await lockTenantIn(sql, viewer.tenantId);
      if ((await countSubscriptions(sql, viewer.tenantId)) >= this.maxSubscriptions) return null;
      return insertSubscription(sql, viewer.tenantId, {
        id,
        workspaceId: viewer.workspaceId,
        url,
        events: dedupe(input.events),
        description: input.description ?? null,
        enabled: input.enabled ?? true,
        storedSecret,
      });
    });
    if (!subscription) {
      throw new AppError('UNPROCESSABLE', `a tenant can have at most ${this.maxSubscriptions} webhook subscriptions`);
    }
    return { subscription, secret };
  }

  list(viewer: Viewer, opts: { limit: number; after?: string | null }): Promise<SubscriptionRow[]> {
    return this.db.withTenant(viewer.tenantId, (sql) =>
      listSubscriptions(sql, viewer.tenantId, { limit: opts.limit, after: opts.after ?? null, workspaceId: viewer.workspaceId }),
    );
  }

  async get(viewer: Viewer, id: string): Promise<SubscriptionRow> {
    const found = await this.db.withTenant(viewer.tenantId, (sql) => getSubscription(sql, viewer.tenantId, id));
    return this.visible(viewer, found);
  }

  async update(viewer: Viewer, id: string, change: SubscriptionChange): Promise<SubscriptionRow> {
    const url = change.url === undefined ? undefined : this.checkUrl(change.url);
    const updated = await this.db.withTenant(viewer.tenantId, async (sql) => {
      const current = await getSubscription(sql, viewer.tenantId, id, { forUpdate: true });
      if (!current || !this.canSee(viewer, current)) return null;
      return updateSubscription(sql, viewer.tenantId, id, {
        ...(url !== undefined ? { url } : {}),
        ...(change.events !== undefined ? { events: dedupe(change.events) } : {}),
        ...(change.description !== undefined ? { description: change.description } : {}),
        ...(change.enabled !== undefined ? { enabled: change.enabled } : {}),
      });
    });
    return this.visible(viewer, updated);
  }

  /** Deletes the subscription with its deliveries and attempts; messages still in flight find nothing and stop. */
  async remove(viewer: Viewer, id: string): Promise<void> {
    const deleted = await this.db.withTenant(viewer.tenantId, async (sql) => {
      const current = await getSubscription(sql, viewer.tenantId, id, { forUpdate: true });
      if (!current || !this.canSee(viewer, current)) return false;
      return deleteSubscription(sql, viewer.tenantId, id);
    });
    if (!deleted) throw AppError.notFound('webhook');
  }

  /**
   * Issues a new secret, returned once. The replaced secret keeps signing beside it for `overlapSeconds` (0 ends
   * it at once, for a leaked secret), so receivers can switch without rejecting a single delivery.
   */
  async rotateSecret(viewer: Viewer, id: string, overlapSeconds: number): Promise<{ subscription: SubscriptionRow; secret: string }> {
    const secret = generateSigningSecret();
    const storedSecret = sealSigningSecret(this.secrets, viewer.tenantId, id, secret);
    const rotated = await this.db.withTenant(viewer.tenantId, async (sql) => {
      const current = await getSubscription(sql, viewer.tenantId, id, { forUpdate: true });
      if (!current || !this.canSee(viewer, current)) return null;
      const expires = overlapSeconds > 0 ? new Date(Date.now() + overlapSeconds * 1000) : null;
      const storedPrevious = expires ? this.resealReplaced(current) : null;
      return rotateSecret(sql, viewer.tenantId, id, { storedSecret, storedPrevious, previousExpiresAt: expires });
    });
    return { subscription: this.visible(viewer, rotated), secret };
  }

  /**
   * The replaced secret, sealed with today's key if it was plaintext or sealed with an older key. One that does not
   * open is kept as stored: the rotation still replaces it, and the worker reports it if it is ever needed.
   */
  private resealReplaced(current: SubscriptionRow): string {
    try {
      return resealSigningSecret(this.secrets, current.tenantId, current.id, current.storedSecret);
    } catch (err) {
      if (!(err instanceof SealedValueError)) throw err;
      this.options.logger?.warn({ subscription_id: current.id, reason: err.reason }, 'replaced webhook secret could not be re-sealed; kept as stored');
      return current.storedSecret;
    }
  }

  async deliveries(
    viewer: Viewer,
    id: string,
    opts: { status?: DeliveryStatus | null; limit: number; before?: string | null },
  ): Promise<DeliveryRow[]> {
    return this.db.withTenant(viewer.tenantId, async (sql) => {
      const s = await getSubscription(sql, viewer.tenantId, id);
      this.visible(viewer, s);
      return listDeliveries(sql, viewer.tenantId, id, opts);
    });
  }

  async delivery(viewer: Viewer, id: string, deliveryId: string, attemptLimit: number): Promise<{ delivery: DeliveryRow; attempts: AttemptRow[] }> {
    return this.db.withTenant(viewer.tenantId, async (sql) => {
      const s = await getSubscription(sql, viewer.tenantId, id);
      this.visible(viewer, s);
      const delivery = await getDeliveryOfSubscription(sql, viewer.tenantId, id, deliveryId);
      if (!delivery) throw AppError.notFound('delivery');
      return { delivery, attempts: await listAttempts(sql, viewer.tenantId, deliveryId, attemptLimit) };
    });
  }

  async deadLetters(
    viewer: Viewer,
    id: string,
    opts: { from?: Date | null; to?: Date | null; limit: number; after?: string | null },
  ): Promise<DeliveryRow[]> {
    return this.db.withTenant(viewer.tenantId, async (sql) => {
      const s = await getSubscription(sql, viewer.tenantId, id);
      this.visible(viewer, s);
      return listDeadLetters(sql, viewer.tenantId, id, opts);
    });
  }

  /**
   * Restarts dead letters from the first step of the schedule, in a new cycle, with the same event id (receivers
   * de-duplicate on it). The step-0 messages go through the outbox in the same transaction, so a replay is either
   * fully scheduled or not at all. A disabled endpoint must be enabled first, or the replay would die at once.
   */
  async replay(viewer: Viewer, id: string, selection: ReplaySelection): Promise<DeliveryRow[]> {
    return this.db.withTenant(viewer.tenantId, async (sql) => {
      const s = this.visible(viewer, await getSubscription(sql, viewer.tenantId, id, { forUpdate: true }));
      if (!s.enabled) throw new AppError('CONFLICT', 'the webhook is disabled; enable it before replaying dead letters');
      const revived = await reviveDeadLetters(
        sql,
        viewer.tenantId,
        id,
        'deliveryIds' in selection ? { ids: selection.deliveryIds } : { from: selection.from, to: selection.to },
        MAX_REPLAY,
      );
      const dueAt = new Date().toISOString();
      for (const d of revived) {
        const message = firstAttemptMessage(viewer.tenantId, d, dueAt);
        await enqueueOutbox(sql, {
          topic: TOPICS.webhookDeliveries,
          key: messageKey(viewer.tenantId, d.id),
          eventId: attemptKey(message),
          value: message,
          headers: { [DUE_AT_HEADER]: String(Date.parse(dueAt)), [TENANT_HEADER]: viewer.tenantId },
        });
      }
      return revived;
    });
  }

  private checkUrl(raw: string): string {
    try {
      return checkWebhookUrl(raw, { allowLoopback: this.allowLoopback }).toString();
    } catch (err) {
      if (err instanceof TargetRefusedError) {
        throw new AppError('VALIDATION_FAILED', 'request body is invalid', { details: [{ path: 'url', message: err.message }] });
      }
      throw err;
    }
  }

  private canSee(viewer: Viewer, s: SubscriptionRow): boolean {
    return viewer.workspaceId === null || s.workspaceId === viewer.workspaceId;
  }

  /** Another tenant's or another workspace's subscription is simply absent. */
  private visible(viewer: Viewer, s: SubscriptionRow | null): SubscriptionRow {
    if (!s || !this.canSee(viewer, s)) throw AppError.notFound('webhook');
    return s;
  }
}

function dedupe<T>(items: T[]): T[] {
  return [...new Set(items)];
}
