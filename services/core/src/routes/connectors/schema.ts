import { z } from 'zod';
import { isoInstant, queryInteger } from '@lore/runtime';
import type { CcPairDetail, ConnectorRecord } from '../../application/connectors';
import type { IndexAttemptRow } from '../../store/index-attempts';
import { ACCESS_TYPES, accessProblem } from '../../domain/connectors';
import { INPUT_TYPES, checkConnectorConfig, inputTypesOf, isSource } from '../../domain/sources';
import { credentialView, presentCredential } from '../credentials/schema';
import { addIssues, groupIds, isObject, source } from '../manage';
import { int32, intParam, iso, queryNullableInt, tenantIdParam } from '../schema-parts';

const accessType = z.enum(ACCESS_TYPES, 'must be public or private');
const seconds = (min: number) => z.number().int('must be an integer').min(min).max(31_536_000);

/** Spec 2's connector object, exactly its fields. */
export const connectorView = z.object({
  name: z.string(),
  source: z.string().describe('web, file or google_drive'),
  input_type: z.string().describe('load_state, poll or event'),
  connector_specific_config: z.record(z.string(), z.unknown()),
  refresh_freq: z.number().int().describe('seconds between runs'),
  prune_freq: z.number().int().nullable().describe('seconds between prunes; null: never pruned'),
  indexing_start: z.string().nullable(),
  id: z.number().int(),
  credential_ids: z.array(z.number().int()).describe('the credentials it is paired with'),
  time_created: z.string(),
  time_updated: z.string(),
});

export function presentConnector(c: ConnectorRecord): z.input<typeof connectorView> {
  return {
    name: c.name,
    source: c.source,
    input_type: c.input_type,
    connector_specific_config: c.connector_specific_config,
    refresh_freq: c.refresh_freq,
    prune_freq: c.prune_freq,
    indexing_start: c.indexing_start ? iso(c.indexing_start) : null,
    id: c.id,
    credential_ids: c.credential_ids,
    time_created: iso(c.time_created),
    time_updated: iso(c.time_updated),
  };
}

/** Spec 2's connector-credential pair status entry, exactly its fields. */
export const ccPairStatusView = z.object({
  cc_pair_id: z.number().int(),
  name: z.string(),
  connector: connectorView,
  credential: credentialView,
  access_type: z.string().describe('public or private'),
  groups: z.array(z.number().int()),
});
export const ccPairStatusListView = z.array(ccPairStatusView);

export function presentStatusEntry(d: CcPairDetail): z.input<typeof ccPairStatusView> {
  return {
    cc_pair_id: d.pair.id,
    name: d.pair.name,
    connector: presentConnector(d.connector),
    credential: presentCredential(d.credential),
    access_type: d.pair.access_type,
    groups: d.pair.groups,
  };
}

/** One index attempt of a pair (our shape; docs/core.md, "Indexing"). */
export const indexAttemptView = z.object({
  id: z.number().int(),
  cc_pair_id: z.number().int(),
  kind: z.enum(['load', 'poll', 'delete']).describe('load: everything; poll: what changed since the last success; delete: removing the pair'),
  prune: z.boolean().describe('whether the run also removes documents its source no longer lists'),
  trigger: z.enum(['schedule', 'manual', 'deletion']),
  status: z.enum(['not_started', 'in_progress', 'success', 'completed_with_errors', 'failed', 'canceled']),
  new_docs_indexed: z.number().int().describe('documents written (new, or changed)'),
  docs_unchanged: z.number().int(),
  docs_skipped: z.number().int().describe('pages or files met that are not documents (robots.txt, noindex, a type not read, 404, older than indexing_start …)'),
  docs_removed: z.number().int().describe('documents pruned'),
  total_docs_indexed: z.number().int().nullable().describe('the pair\'s documents when the attempt ended'),
  error_msg: z.string().nullable(),
  time_created: z.string(),
  time_started: z.string().nullable(),
  time_updated: z.string(),
});

export function presentAttempt(a: IndexAttemptRow): z.input<typeof indexAttemptView> {
  return {
    id: a.id,
    cc_pair_id: a.cc_pair_id,
    kind: a.kind,
    prune: a.prune,
    trigger: a.trigger,
    status: a.status,
    new_docs_indexed: a.new_docs_indexed,
    docs_unchanged: a.docs_unchanged,
    docs_skipped: a.docs_skipped,
    docs_removed: a.docs_removed,
    total_docs_indexed: a.total_docs_indexed,
    error_msg: a.error_msg,
    time_created: iso(a.time_created),
    time_started: a.time_started ? iso(a.time_started) : null,
    time_updated: iso(a.time_updated),
  };
}

/** Spec 2's full cc pair info, its fields in its order, then ours (access, indexing state, latest attempts). */
export const ccPairInfoView = z.object({
  id: z.number().int(),
  name: z.string(),
  status: z.string().describe('ACTIVE, PAUSED or DELETING'),
  in_repeated_error_state: z.boolean(),
  num_docs_indexed: z.number().int(),
  connector: connectorView,
  credential: credentialView,
  number_of_index_attempts: z.number().int(),
  last_index_attempt_status: z.string().nullable().describe('null until the first index attempt ends: success, completed_with_errors, failed or canceled'),
  access_type: z.string().describe('public or private'),
  groups: z.array(z.number().int()),
  indexing: z.boolean().describe('an attempt is queued or running'),
  last_successful_index_time: z.string().nullable(),
  last_pruned: z.string().nullable(),
  latest_index_attempts: z.array(indexAttemptView).describe('the newest attempts, newest first (only on GET of one pair; [] elsewhere)'),
});

export function presentCcPairInfo(d: CcPairDetail): z.input<typeof ccPairInfoView> {
  const p = d.pair;
  return {
    id: p.id,
    name: p.name,
    status: p.status,
    in_repeated_error_state: p.in_repeated_error_state,
    num_docs_indexed: p.num_docs_indexed,
    connector: presentConnector(d.connector),
    credential: presentCredential(d.credential),
    number_of_index_attempts: p.number_of_index_attempts,
    last_index_attempt_status: p.last_index_attempt_status,
    access_type: p.access_type,
    groups: p.groups,
    indexing: (d.attempts ?? []).some((a) => a.status === 'not_started' || a.status === 'in_progress'),
    last_successful_index_time: p.last_successful_index_time ? iso(p.last_successful_index_time) : null,
    last_pruned: p.last_pruned ? iso(p.last_pruned) : null,
    latest_index_attempts: (d.attempts ?? []).map(presentAttempt),
  };
}

/** ObjectCreationIdResponse (its shape is ours): the new connector's id; no credential is made with it. */
export const objectCreationView = z.object({
  id: z.number().int(),
  credential_id: z.number().int().nullable().describe('always null: a connector is created without a credential; associate one with PUT /api/manage/connector/{connector_id}/credential/{credential_id}'),
});

/** Spec 2's connector creation body; its required fields are ours (docs/core.md, Connectors). */
export const createConnectorBody = z
  .strictObject({
    name: z.string().trim().min(1).max(200),
    source,
    input_type: z.enum(INPUT_TYPES, `must be one of: ${INPUT_TYPES.join(', ')}`),
    connector_specific_config: z.record(z.string().max(200), z.unknown()).describe('by source: web {base_url, web_connector_type}, file {file_locations}, google_drive (docs/core.md)'),
    refresh_freq: seconds(60).default(86_400).describe('seconds between runs (at least 60; default a day)'),
    prune_freq: seconds(60).nullable().default(null).describe('seconds between prunes; null: never'),
    indexing_start: isoInstant().nullable().default(null),
    access_type: accessType.describe('the default of the pairs made from it'),
    groups: groupIds.default([]).describe('the default groups of its private pairs'),
  })
  .superRefine(
    (b, ctx) => {
      if (!isObject(b) || !isSource(b.source)) return;
      const allowed = inputTypesOf(b.source);
      if (typeof b.input_type === 'string' && !(allowed as readonly string[]).includes(b.input_type)) {
        ctx.addIssue({ code: 'custom', path: ['input_type'], message: `a ${b.source} connector takes input_type ${allowed.join(' or ')}` });
      }
      if (isObject(b.connector_specific_config)) {
        const checked = checkConnectorConfig(b.source, b.connector_specific_config);
        if (!checked.ok) addIssues(ctx, ['connector_specific_config'], checked.issues);
      }
      const problem = (b.access_type === 'public' || b.access_type === 'private') && Array.isArray(b.groups) ? accessProblem(b.access_type, b.groups) : null;
      if (problem) ctx.addIssue({ code: 'custom', path: ['groups'], message: problem });
    },
    // Checked with the rest, so one answer lists every issue.
    { when: () => true },
  )
  .transform((b) => {
    const checked = checkConnectorConfig(b.source, b.connector_specific_config);
    return { ...b, connector_specific_config: checked.ok ? checked.value : b.connector_specific_config, indexing_start: b.indexing_start === null ? null : new Date(b.indexing_start) };
  });

/** Our design: the pair's name, access type and groups; each defaults to the connector's. */
export const associateBody = z
  .strictObject({
    name: z.string().trim().min(1).max(200).optional(),
    access_type: accessType.optional(),
    groups: groupIds.optional(),
  })
  .superRefine((b, ctx) => {
    const problem = b.access_type && b.groups ? accessProblem(b.access_type, b.groups) : null;
    if (problem) ctx.addIssue({ code: 'custom', path: ['groups'], message: problem });
  });

export const ccPairStatusBody = z.strictObject({ status: z.enum(['ACTIVE', 'PAUSED'], 'must be ACTIVE or PAUSED') });

export const deletionAttemptBody = z.strictObject({ connector_id: int32, credential_id: int32 });


export const deletionAttemptView = z.object({
  cc_pair_id: z.number().int(),
  status: z.literal('DELETING'),
  attempt_id: z.number().int().nullable().describe('the deletion attempt; null when one was already under way'),
});

export const runOnceBody = z.strictObject({
  connector_id: int32,
  credential_ids: z.array(int32).min(1).max(100).nullish().describe('the pairs to run; absent or null: every pair of the connector'),
  from_beginning: z.boolean().default(false).describe('read everything again instead of what changed since the last success'),
});

export const runOnceView = z.object({
  attempts: z.array(indexAttemptView).describe('one not_started attempt per pair'),
});

export const attemptsQuery = z.object({ ...tenantIdParam, limit: queryInteger('limit', { min: 1, max: 100, default: 20 }) });
export const attemptListView = z.object({ index_attempts: z.array(indexAttemptView) });

export const connectorListQuery = z.object({ ...tenantIdParam, credential: queryNullableInt.describe('only the pairs reading with this credential; absent or null: all') });
export const ccPairParams = z.object({ cc_pair_id: intParam });
export const associateParams = z.object({ connector_id: intParam, credential_id: intParam });
export const tenantQuery = z.object(tenantIdParam);
