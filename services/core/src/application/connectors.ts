import type { Sql } from '@lore/runtime';
import { accessProblem, distinctIds, statusChange, type AccessType, type SettableStatus } from '../domain/connectors';
import { ccPairOf, credentialIdsByConnector, deleteCcPair, getCcPair, insertCcPair, listCcPairs, setCcPairStatus, type CcPairRow } from '../store/cc-pairs';
import { connectorsByIds, deleteConnectorWithoutPairs, getConnector, insertConnector, type ConnectorFields, type ConnectorRow } from '../store/connectors';
import { credentialsByIds, getCredential, type CredentialRow } from '../store/credentials';
import type { CoreDeps } from './context';
import { coreError } from './errors';
import type { Principal } from './principal';

/** A connector as read: with the ids of the credentials it is paired with. */
export type ConnectorRecord = ConnectorRow & { credential_ids: number[] };

/** A cc pair with its connector and credential, as every read shows it. */
export interface CcPairDetail {
  pair: CcPairRow;
  connector: ConnectorRecord;
  credential: CredentialRow;
}

export interface AssociateInput {
  /** Default: the connector's name. */
  name?: string;
  /** Default: the connector's access type and groups. */
  access_type?: AccessType;
  groups?: number[];
}

const pairNotFound = () => coreError('NOT_FOUND', 'cc pair not found');

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

/** A connector reads nothing until a credential is associated with it (`associateCredential`). */
export function createConnector(deps: CoreDeps, p: Principal, input: ConnectorFields): Promise<ConnectorRow> {
  return deps.db.withTenant(p.tenantId, (sql) => insertConnector(sql, p.tenantId, { ...input, groups: distinctIds(input.groups) }));
}

/** The tenant's cc pairs (a connector without a pair is not one); with `credentialId`, those reading with it. */
export function ccPairStatuses(deps: CoreDeps, p: Principal, credentialId: number | null): Promise<CcPairDetail[]> {
  return deps.db.withTenant(p.tenantId, async (sql) => detailsOf(sql, p.tenantId, await listCcPairs(sql, p.tenantId, credentialId)));
}

export async function ccPairInfo(deps: CoreDeps, p: Principal, id: number): Promise<CcPairDetail> {
  const detail = await deps.db.withTenant(p.tenantId, async (sql) => {
    const pair = await getCcPair(sql, p.tenantId, id);
    return pair ? detailOf(sql, p.tenantId, pair) : null;
  });
  if (!detail) throw pairNotFound();
  return detail;
}

/**
 * Makes the cc pair of a connector and a credential of the same source (400 otherwise, and when the pair exists).
 * Both rows are locked for share, so neither can be deleted while the pair is written.
 */
export function associateCredential(deps: CoreDeps, p: Principal, connectorId: number, credentialId: number, input: AssociateInput): Promise<CcPairDetail> {
  return deps.db.withTenant(p.tenantId, async (sql) => {
    const connector = await getConnector(sql, p.tenantId, connectorId, 'share');
    if (!connector) throw coreError('NOT_FOUND', 'connector not found');
    const credential = await getCredential(sql, p.tenantId, credentialId, 'share');
    if (!credential) throw coreError('NOT_FOUND', 'credential not found');
    if (credential.source !== connector.source) {
      throw coreError('BAD_REQUEST', `credential ${credentialId} is for source ${credential.source}, connector ${connectorId} reads ${connector.source}`);
    }
    const accessType = input.access_type ?? connector.access_type;
    // A public pair has no groups; a private one takes the connector's unless given its own.
    const groups = distinctIds(input.groups ?? (accessType === 'private' ? connector.groups : []));
    const problem = accessProblem(accessType, groups);
    if (problem) throw coreError('BAD_REQUEST', problem);
    const pair = await insertCcPair(sql, p.tenantId, { connector_id: connectorId, credential_id: credentialId, name: input.name ?? connector.name, access_type: accessType, groups });
    if (!pair) throw coreError('BAD_REQUEST', `connector ${connectorId} already has credential ${credentialId}`);
    return detailOf(sql, p.tenantId, pair);
  });
}

/** Pauses or resumes a pair (asking for the status it has changes nothing); a pair being deleted is 400. */
export function changeCcPairStatus(deps: CoreDeps, p: Principal, id: number, status: SettableStatus): Promise<CcPairDetail> {
  return deps.db.withTenant(p.tenantId, async (sql) => {
    const pair = await getCcPair(sql, p.tenantId, id, true);
    if (!pair) throw pairNotFound();
    const change = statusChange(pair.status, status);
    if (change === 'deleting') throw coreError('BAD_REQUEST', `cc pair ${id} is being deleted`);
    return detailOf(sql, p.tenantId, change === 'change' ? await setCcPairStatus(sql, p.tenantId, id, status) : pair);
  });
}

/**
 * Deletes the pair of a connector and a credential, and the connector with it when no other pair reads it (a
 * connector without a pair is not listed anywhere). The credential stays. Nothing is indexed yet, so the pair's
 * row goes in this transaction; once documents are indexed, their removal joins it.
 */
export function createDeletionAttempt(deps: CoreDeps, p: Principal, connectorId: number, credentialId: number): Promise<{ connectorDeleted: boolean }> {
  return deps.db.withTenant(p.tenantId, async (sql) => {
    // The connector first (the order every writer takes), so no pair can be made from it meanwhile.
    const connector = await getConnector(sql, p.tenantId, connectorId, 'update');
    const pair = connector ? await ccPairOf(sql, p.tenantId, connectorId, credentialId, true) : null;
    if (!pair) throw pairNotFound();
    await deleteCcPair(sql, p.tenantId, pair.id);
    return { connectorDeleted: await deleteConnectorWithoutPairs(sql, p.tenantId, connectorId) };
  });
}
