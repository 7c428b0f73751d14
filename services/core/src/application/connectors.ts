import { placeWithinReach, withinReach } from '@lore/contracts';
import { TargetRefusedError } from '@lore/outbound';
import type { Sql } from '@lore/runtime';
import { accessProblem, distinctIds, statusChange, type AccessType, type SettableStatus } from '../domain/connectors';
import { runPlan } from '../domain/indexing';
import { ccPairOf, countCcPairsLocked, credentialIdsByConnector, getCcPair, insertCcPair, listCcPairs, setCcPairStatus, type CcPairRow } from '../store/cc-pairs';
import { connectorsByIds, countConnectorsLocked, getConnector, insertConnector, type ConnectorFields, type ConnectorRow } from '../store/connectors';
import { listAttempts, type IndexAttemptRow } from '../store/index-attempts';
import { credentialsByIds, getCredential, type CredentialRow } from '../store/credentials';
import { checkFileLocations } from './connector-files';
import { credentialWithinReach } from './credentials';
import type { CoreDeps } from './context';
import { coreError } from './errors';
import { cancelLiveAttempt, enqueueAttempt, scheduleNow, unschedulePair } from './indexing';
import type { Principal } from './principal';

/** A connector as read: with the ids of the credentials it is paired with. */
export type ConnectorRecord = ConnectorRow & { credential_ids: number[] };

/** A cc pair with its connector and credential, as every read shows it (and its newest attempts, for one pair). */
export interface CcPairDetail {
  pair: CcPairRow;
  connector: ConnectorRecord;
  credential: CredentialRow;
  attempts?: IndexAttemptRow[];
}

export interface AssociateInput {
  /** Default: the connector's name. */
  name?: string;
  /** Default: the connector's access type and groups. */
  access_type?: AccessType;
  groups?: number[];
}

const pairNotFound = () => coreError('NOT_FOUND', 'cc pair not found');

/**
 * A pair the caller may act on: one whose documents go to a workspace and memory within its reach (a key pinned to a
 * workspace, or scoped to some memories, sees only those pairs; every other pair is as absent as another tenant's).
 */
const reachable = (p: Principal, pair: CcPairRow | null): pair is CcPairRow => pair !== null && withinReach(p.reach, pair);

/**
 * A connector the caller may use: one made within its reach (a key bound to a workspace cannot pair its own credential
 * with another workspace's connector, and read that workspace's sources into its memory).
 */
const connectorWithinReach = (p: Principal, connector: ConnectorRow | null): connector is ConnectorRow => connector !== null && placeWithinReach(p.reach, connector);

/** The pairs with their connectors and credentials, in the pairs' order (three statements, one transaction). */
async function detailsOf(sql: Sql, tenantId: string, pairs: CcPairRow[]): Promise<CcPairDetail[]> {
  const connectorIds = distinctIds(pairs.map((p) => p.connector_id));
  const [connectors, credentials, credentialIds] = [
    await connectorsByIds(sql, tenantId, connectorIds),
    await credentialsByIds(sql, tenantId, distinctIds(pairs.map((p) => p.credential_id))),
    await credentialIdsByConnector(sql, tenantId, connectorIds),
  ];
  const connectorById = new Map(connectors.map((c) => [c.id, { ...c, credential_ids: credentialIds.get(c.id) ?? [] }]));
  const credentialById = new Map(credentials.map((c) => [c.id, c]));
  // Foreign keys keep both in the same transaction's snapshot.
  return pairs.map((pair) => ({ pair, connector: connectorById.get(pair.connector_id)!, credential: credentialById.get(pair.credential_id)! }));
}

async function detailOf(sql: Sql, tenantId: string, pair: CcPairRow): Promise<CcPairDetail> {
  return (await detailsOf(sql, tenantId, [pair]))[0]!;
}

/**
 * Connectors a tenant may have, in all its workspaces, paired or not: each is read on its own schedule, and the
 * status listings answer every pair made from them, so they are bounded by this and not by the tenant.
 */
export const MAX_CONNECTORS_PER_TENANT = 500;

/**
 * A connector reads nothing until a credential is associated with it (`associateCredential`). A web connector's
 * base URL must be one the indexer may read: a local or private address, or a host name that does not resolve, is
 * 400 with the reason (the indexer checks every fetch again, redirects included). A file connector's
 * `file_locations` must be files uploaded to the tenant (`connector-files/…`) within the caller's reach: 400 naming
 * the others. The tenant's connectors are counted under a lock in the inserting transaction, so concurrent creates
 * stop at exactly the cap (409).
 */
export async function createConnector(deps: CoreDeps, p: Principal, input: ConnectorFields): Promise<ConnectorRow> {
  const locations = input.source === 'file' ? input.connector_specific_config.file_locations : undefined;
  if (Array.isArray(locations)) await checkFileLocations(deps, p, locations.filter((l): l is string => typeof l === 'string'));
  const baseUrl = input.source === 'web' ? input.connector_specific_config.base_url : undefined;
  if (typeof baseUrl === 'string') {
    try {
      await deps.targets.resolve(baseUrl);
    } catch (err) {
      if (err instanceof TargetRefusedError) throw coreError('BAD_REQUEST', `base_url cannot be read by a connector: ${err.message}`);
      throw err;
    }
  }
  return deps.db.withTenant(p.tenantId, async (sql) => {
    if ((await countConnectorsLocked(sql, p.tenantId, MAX_CONNECTORS_PER_TENANT)) >= MAX_CONNECTORS_PER_TENANT) {
      throw coreError('CONFLICT', `the tenant has ${MAX_CONNECTORS_PER_TENANT} connectors, the most it may have: delete one it no longer uses first (POST /api/manage/admin/deletion-attempt; a connector goes with its last pair)`);
    }
    return insertConnector(sql, p.tenantId, { ...input, groups: distinctIds(input.groups) }, { workspace_id: p.workspaceId, memory_id: p.memoryId });
  });
}

/**
 * The tenant's cc pairs within the caller's reach (a connector without a pair is not one); with `credentialId`, those
 * reading with it: a credential the tenant does not have is 404, as on the credential's own routes.
 */
export function ccPairStatuses(deps: CoreDeps, p: Principal, credentialId: number | null): Promise<CcPairDetail[]> {
  return deps.db.withTenant(p.tenantId, async (sql) => {
    if (credentialId !== null && !credentialWithinReach(p, await getCredential(sql, p.tenantId, credentialId))) throw coreError('NOT_FOUND', 'credential not found');
    return detailsOf(sql, p.tenantId, (await listCcPairs(sql, p.tenantId, credentialId)).filter((pair) => reachable(p, pair)));
  });
}

/** Attempts a cc pair's full info shows, newest first. */
const INFO_ATTEMPTS = 5;

/** A pair's full info: its detail and its newest attempts (what every route answering full info shows). */
async function fullInfoOf(sql: Sql, tenantId: string, pair: CcPairRow): Promise<CcPairDetail> {
  return { ...(await detailOf(sql, tenantId, pair)), attempts: await listAttempts(sql, tenantId, pair.id, INFO_ATTEMPTS) };
}

export async function ccPairInfo(deps: CoreDeps, p: Principal, id: number): Promise<CcPairDetail> {
  const detail = await deps.db.withTenant(p.tenantId, async (sql) => {
    const pair = await getCcPair(sql, p.tenantId, id);
    return reachable(p, pair) ? fullInfoOf(sql, p.tenantId, pair) : null;
  });
  if (!detail) throw pairNotFound();
  return detail;
}

/**
 * Pairs a tenant may have: each is scheduled and run on its own, and the status listings answer every pair, so they
 * are bounded by this (connectors and credentials have caps of their own, but their pairs could reach 500 × 500).
 */
export const MAX_CC_PAIRS_PER_TENANT = 1000;

/**
 * Makes the cc pair of a connector and a credential of the same source (400 otherwise, and when the pair exists).
 * Both rows are locked for share, so neither can be deleted while the pair is written. The tenant's pairs are
 * counted under a lock in the same transaction, so concurrent associations stop at exactly the cap (409).
 */
export function associateCredential(deps: CoreDeps, p: Principal, connectorId: number, credentialId: number, input: AssociateInput): Promise<CcPairDetail> {
  return deps.db.withTenant(p.tenantId, async (sql) => {
    const connector = await getConnector(sql, p.tenantId, connectorId, 'share');
    if (!connectorWithinReach(p, connector)) throw coreError('NOT_FOUND', 'connector not found');
    const credential = await getCredential(sql, p.tenantId, credentialId, 'share');
    if (!credentialWithinReach(p, credential)) throw coreError('NOT_FOUND', 'credential not found');
    if (credential.source !== connector.source) {
      throw coreError('BAD_REQUEST', `credential ${credentialId} is for source ${credential.source}, connector ${connectorId} reads ${connector.source}`);
    }
    const accessType = input.access_type ?? connector.access_type;
    // A public pair has no groups; a private one takes the connector's unless given its own.
    const groups = distinctIds(input.groups ?? (accessType === 'private' ? connector.groups : []));
    const problem = accessProblem(accessType, groups);
    if (problem) throw coreError('BAD_REQUEST', problem);
    if ((await countCcPairsLocked(sql, p.tenantId, MAX_CC_PAIRS_PER_TENANT)) >= MAX_CC_PAIRS_PER_TENANT) {
      throw coreError('CONFLICT', `the tenant has ${MAX_CC_PAIRS_PER_TENANT} cc pairs, the most it may have: delete one it no longer uses first (POST /api/manage/admin/deletion-attempt)`);
    }
    const [creatorCredential, ...subject] = p.owner.split(':');
    const pair = await insertCcPair(sql, p.tenantId, {
      connector_id: connectorId,
      credential_id: credentialId,
      name: input.name ?? connector.name,
      access_type: accessType,
      groups,
      // Its documents go to the memory of the workspace it is made in, written as the administrator who made it.
      workspace_id: p.workspaceId,
      memory_id: p.memoryId,
      creator_credential: creatorCredential ?? '',
      creator_subject: subject.join(':'),
    });
    if (!pair) throw coreError('BAD_REQUEST', `connector ${connectorId} already has credential ${credentialId}`);
    // The first run is due at once (the scheduler starts it on its next pass).
    await scheduleNow(sql, p.tenantId, pair.id);
    return detailOf(sql, p.tenantId, pair);
  });
}

/**
 * Pauses or resumes a pair (asking for the status it has changes nothing); a pair being deleted is 400. A pause
 * ends the live attempt (its worker stops at its next heartbeat) and takes the pair off the schedule; a resume puts
 * it back, due at once. Answers the full info, newest attempts included, as a read does (before 2026-11-30 its
 * `latest_index_attempts` was always empty).
 */
export function changeCcPairStatus(deps: CoreDeps, p: Principal, id: number, status: SettableStatus): Promise<CcPairDetail> {
  return deps.db.withTenant(p.tenantId, async (sql) => {
    const pair = await getCcPair(sql, p.tenantId, id, true);
    if (!reachable(p, pair)) throw pairNotFound();
    const change = statusChange(pair.status, status);
    if (change === 'deleting') throw coreError('BAD_REQUEST', `cc pair ${id} is being deleted`);
    if (change === 'unchanged') return fullInfoOf(sql, p.tenantId, pair);
    if (status === 'PAUSED') {
      await cancelLiveAttempt(sql, p.tenantId, id, 'the pair was paused');
      await unschedulePair(sql, p.tenantId, id);
    } else {
      await scheduleNow(sql, p.tenantId, id);
    }
    return fullInfoOf(sql, p.tenantId, await setCcPairStatus(sql, p.tenantId, id, status));
  });
}

/**
 * Runs pairs of a connector once now (those with the given credentials, or all of its pairs): one attempt each,
 * everything again with `fromBeginning`. A pair that is paused, being deleted or already running is 400, and nothing
 * is started. Answers the attempts.
 */
export function runOnce(deps: CoreDeps, p: Principal, connectorId: number, credentialIds: number[] | null, fromBeginning: boolean): Promise<IndexAttemptRow[]> {
  return deps.db.withTenant(p.tenantId, async (sql) => {
    const connector = await getConnector(sql, p.tenantId, connectorId, 'share');
    if (!connectorWithinReach(p, connector)) throw coreError('NOT_FOUND', 'connector not found');
    const all = (await credentialIdsByConnector(sql, p.tenantId, [connectorId])).get(connectorId) ?? [];
    // Without credentials named: the connector's pairs within the caller's reach.
    const pairs: CcPairRow[] = [];
    for (const credentialId of distinctIds(credentialIds ?? all)) {
      const pair = await ccPairOf(sql, p.tenantId, connectorId, credentialId, true);
      if (reachable(p, pair)) pairs.push(pair);
      else if (credentialIds) throw coreError('NOT_FOUND', `connector ${connectorId} has no credential ${credentialId}`);
    }
    if (pairs.length === 0) throw coreError('BAD_REQUEST', `connector ${connectorId} has no credential to run with`);
    const attempts: IndexAttemptRow[] = [];
    for (const pair of pairs) {
      if (pair.status !== 'ACTIVE') throw coreError('BAD_REQUEST', `cc pair ${pair.id} is ${pair.status === 'PAUSED' ? 'paused' : 'being deleted'}`);
      const plan = runPlan({ lastSuccess: pair.last_successful_index_time, lastPruned: pair.last_pruned, pruneFreq: connector.prune_freq }, new Date(), fromBeginning);
      const attempt = await enqueueAttempt(sql, p.tenantId, pair.id, plan.kind, plan.prune, 'manual');
      if (!attempt) throw coreError('CONFLICT', `cc pair ${pair.id} is already being indexed`);
      attempts.push(attempt);
    }
    return attempts;
  });
}

/** A pair's attempts, newest first. */
export function indexAttempts(deps: CoreDeps, p: Principal, id: number, limit: number): Promise<IndexAttemptRow[]> {
  return deps.db.withTenant(p.tenantId, async (sql) => {
    if (!reachable(p, await getCcPair(sql, p.tenantId, id))) throw pairNotFound();
    return listAttempts(sql, p.tenantId, id, limit);
  });
}

/**
 * Starts deleting the pair of a connector and a credential: the pair becomes DELETING (hidden from nothing, changed
 * by no one), its live run is canceled, and a deletion attempt removes its documents from the memory, then the
 * pair, and the connector with it when no other pair reads it. The credential stays. Asking again while it is
 * being deleted changes nothing. Answers the deletion attempt's id (null when one was already under way).
 */
export function createDeletionAttempt(deps: CoreDeps, p: Principal, connectorId: number, credentialId: number): Promise<{ ccPairId: number; attemptId: number | null }> {
  return deps.db.withTenant(p.tenantId, async (sql) => {
    // The connector first (the order every writer takes), so no pair can be made from it meanwhile.
    const connector = await getConnector(sql, p.tenantId, connectorId, 'update');
    const pair = connector ? await ccPairOf(sql, p.tenantId, connectorId, credentialId, true) : null;
    if (!reachable(p, pair)) throw pairNotFound();
    if (pair.status !== 'DELETING') {
      await cancelLiveAttempt(sql, p.tenantId, pair.id, 'the pair is being deleted');
      await setCcPairStatus(sql, p.tenantId, pair.id, 'DELETING');
    }
    await scheduleNow(sql, p.tenantId, pair.id);
    const attempt = await enqueueAttempt(sql, p.tenantId, pair.id, 'delete', false, 'deletion');
    return { ccPairId: pair.id, attemptId: attempt?.id ?? null };
  });
}
