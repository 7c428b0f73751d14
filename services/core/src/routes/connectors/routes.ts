import type { AssociateInput, CcPairDetail } from '../../application/connectors';
import type { IndexAttemptRow } from '../../store/index-attempts';
import type { Principal } from '../../application/principal';
import type { SettableStatus } from '../../domain/connectors';
import type { ConnectorFields, ConnectorRow } from '../../store/connectors';
import { ADMIN_READ, ADMIN_WRITE, MANAGE_PREFIX, adminReads, adminWrites } from '../manage';
import { CORE_SECURITY, SPEC_INPUT, detail, route, type CoreGuard } from '../route';
import {
  associateBody,
  associateParams,
  ccPairInfoView,
  ccPairParams,
  ccPairStatusBody,
  attemptListView,
  attemptsQuery,
  ccPairStatusListView,
  connectorListQuery,
  createConnectorBody,
  deletionAttemptBody,
  deletionAttemptView,
  objectCreationView,
  presentAttempt,
  presentCcPairInfo,
  presentStatusEntry,
  runOnceBody,
  runOnceView,
  tenantQuery,
} from './schema';

export interface ConnectorRouteDeps {
  guard: CoreGuard;
  connectors: {
    create(p: Principal, input: ConnectorFields): Promise<ConnectorRow>;
    statuses(p: Principal, credentialId: number | null): Promise<CcPairDetail[]>;
    ccPair(p: Principal, id: number): Promise<CcPairDetail>;
    associate(p: Principal, connectorId: number, credentialId: number, input: AssociateInput): Promise<CcPairDetail>;
    setStatus(p: Principal, id: number, status: SettableStatus): Promise<CcPairDetail>;
    deletePair(p: Principal, connectorId: number, credentialId: number): Promise<{ ccPairId: number; attemptId: number | null }>;
    runOnce(p: Principal, connectorId: number, credentialIds: number[] | null, fromBeginning: boolean): Promise<IndexAttemptRow[]>;
    attempts(p: Principal, ccPairId: number, limit: number): Promise<IndexAttemptRow[]>;
  };
}

const PAIR_NOT_FOUND = { 404: detail('no such cc pair in the tenant') };

/**
 * Spec 2's enterprise connector routes, and ours for what spec 2 names without a shape (associating a credential,
 * updating a pair's status, deleting a pair), named after spec 3's enterprise tools. Administrators only.
 */
export function connectorRoutes(deps: ConnectorRouteDeps) {
  const tags = ['connectors'];
  const admin = `${MANAGE_PREFIX}/admin`;
  const pair = `${admin}/cc-pair/:cc_pair_id`;
  const c = deps.connectors;
  return [
    route({
      method: 'get', path: `${admin}/connector/status`, operationId: 'getConnectorStatus', summary: 'List the connector-credential pairs', tags,
      description: 'One entry per cc pair, oldest first; a connector with no credential associated is not listed.',
      security: CORE_SECURITY, guards: adminReads(deps.guard), query: tenantQuery, ...SPEC_INPUT,
      ok: { status: 200, description: 'the status entries', schema: ccPairStatusListView },
      responses: ADMIN_READ,
      handler: async (ctx) => (await c.statuses(ctx.state.principal, null)).map(presentStatusEntry),
    }),
    route({
      method: 'get', path: `${admin}/connector`, operationId: 'getConnectors', summary: 'List the connector-credential pairs, by credential', tags,
      description: 'The status entries of the pairs reading with `credential` (a credential the tenant does not have: 404); without it (or `null`), all of them.',
      security: CORE_SECURITY, guards: adminReads(deps.guard), query: connectorListQuery, ...SPEC_INPUT,
      ok: { status: 200, description: 'the status entries', schema: ccPairStatusListView },
      responses: { ...ADMIN_READ, 404: detail('no such credential in the tenant') },
      handler: async (ctx, { query }) => (await c.statuses(ctx.state.principal, query.credential)).map(presentStatusEntry),
    }),
    route({
      method: 'post', path: `${admin}/connector`, operationId: 'createConnector', summary: 'Create a connector', tags,
      description: 'The connector reads nothing until a credential of its source is associated with it; `access_type` and `groups` are the defaults of those pairs.',
      security: CORE_SECURITY, guards: adminWrites(deps.guard), query: tenantQuery, body: createConnectorBody, ...SPEC_INPUT,
      ok: { status: 200, description: 'ObjectCreationIdResponse', schema: objectCreationView },
      responses: { ...ADMIN_WRITE, 400: detail('a web base_url no connector may read: a local, private or metadata address, or a host name that does not resolve'), 409: detail('the tenant has 500 connectors, the most it may have') },
      handler: async (ctx, { body }) => ({ id: (await c.create(ctx.state.principal, body)).id, credential_id: null }),
    }),
    route({
      method: 'get', path: pair, operationId: 'getCcPair', summary: 'Get a connector-credential pair', tags,
      security: CORE_SECURITY, guards: adminReads(deps.guard), params: ccPairParams, query: tenantQuery, ...SPEC_INPUT,
      ok: { status: 200, description: 'the full cc pair info', schema: ccPairInfoView },
      responses: { ...ADMIN_READ, ...PAIR_NOT_FOUND },
      handler: async (ctx, { params }) => presentCcPairInfo(await c.ccPair(ctx.state.principal, params.cc_pair_id)),
    }),
    route({
      method: 'put', path: `${MANAGE_PREFIX}/connector/:connector_id/credential/:credential_id`, operationId: 'associateCredential', summary: 'Associate a credential with a connector', tags,
      description: 'Makes their cc pair. The credential\'s source must be the connector\'s; name, access_type and groups default to the connector\'s.',
      security: CORE_SECURITY, guards: adminWrites(deps.guard), params: associateParams, query: tenantQuery, body: associateBody, ...SPEC_INPUT,
      ok: { status: 200, description: 'the new cc pair', schema: ccPairInfoView },
      responses: { ...ADMIN_WRITE, 404: detail('no such connector or credential in the tenant'), 400: detail('another source, or the pair exists'), 409: detail('the tenant has 1000 cc pairs, the most it may have') },
      handler: async (ctx, { params, body }) => presentCcPairInfo(await c.associate(ctx.state.principal, params.connector_id, params.credential_id, body)),
    }),
    route({
      method: 'put', path: `${pair}/status`, operationId: 'updateCcPairStatus', summary: 'Pause or resume a connector-credential pair', tags,
      security: CORE_SECURITY, guards: adminWrites(deps.guard), params: ccPairParams, query: tenantQuery, body: ccPairStatusBody, ...SPEC_INPUT,
      ok: { status: 200, description: 'the cc pair as changed', schema: ccPairInfoView },
      responses: { ...ADMIN_WRITE, ...PAIR_NOT_FOUND, 400: detail('the pair is being deleted') },
      handler: async (ctx, { params, body }) => presentCcPairInfo(await c.setStatus(ctx.state.principal, params.cc_pair_id, body.status)),
    }),
    route({
      method: 'post', path: `${admin}/deletion-attempt`, operationId: 'createDeletionAttempt', summary: 'Delete a connector-credential pair', tags,
      description:
        'Starts deleting the pair of `connector_id` and `credential_id`: it becomes DELETING, its running index attempt is canceled, and a deletion attempt removes its documents from the memory, then the pair, and the connector when no other pair reads it. The credential stays. Asking again while it is being deleted changes nothing.',
      security: CORE_SECURITY, guards: adminWrites(deps.guard), query: tenantQuery, body: deletionAttemptBody, ...SPEC_INPUT,
      ok: { status: 200, description: 'the deletion is under way', schema: deletionAttemptView },
      responses: { ...ADMIN_WRITE, ...PAIR_NOT_FOUND },
      handler: async (ctx, { body }) => {
        const r = await c.deletePair(ctx.state.principal, body.connector_id, body.credential_id);
        return { cc_pair_id: r.ccPairId, status: 'DELETING' as const, attempt_id: r.attemptId };
      },
    }),
    route({
      method: 'post', path: `${admin}/connector/run-once`, operationId: 'runConnectorOnce', summary: 'Index a connector now', tags,
      description: 'Starts one index attempt for each named pair of the connector (all of its pairs without `credential_ids`): what changed since the last success, or everything with `from_beginning`.',
      security: CORE_SECURITY, guards: adminWrites(deps.guard), query: tenantQuery, body: runOnceBody, ...SPEC_INPUT,
      ok: { status: 200, description: 'the attempts started', schema: runOnceView },
      responses: {
        ...ADMIN_WRITE,
        404: detail('no such connector, or it has no such credential'),
        400: detail('a pair is paused or being deleted, or the connector has no credential'),
        409: detail('a pair is already being indexed'),
      },
      handler: async (ctx, { body }) => ({
        attempts: (await c.runOnce(ctx.state.principal, body.connector_id, body.credential_ids ?? null, body.from_beginning)).map(presentAttempt),
      }),
    }),
    route({
      method: 'get', path: `${pair}/index-attempts`, operationId: 'listIndexAttempts', summary: 'List a pair\'s index attempts', tags,
      security: CORE_SECURITY, guards: adminReads(deps.guard), params: ccPairParams, query: attemptsQuery, ...SPEC_INPUT,
      ok: { status: 200, description: 'the attempts, newest first', schema: attemptListView },
      responses: { ...ADMIN_READ, ...PAIR_NOT_FOUND },
      handler: async (ctx, { params, query }) => ({ index_attempts: (await c.attempts(ctx.state.principal, params.cc_pair_id, query.limit)).map(presentAttempt) }),
    }),
  ];
}
