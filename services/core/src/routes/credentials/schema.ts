import { z } from 'zod';
import { CREDENTIAL_MASK, ownerSubject, redactCredentialJson } from '../../domain/connectors';
import { checkCredentialJson, isSource } from '../../domain/sources';
import type { CredentialRow } from '../../store/credentials';
import { addIssues, groupIds, isObject, source } from '../manage';
import { intParam, iso, tenantIdParam } from '../schema-parts';

/** Spec 2's credential object, exactly its fields; `credential_json` is always redacted. */
export const credentialView = z.object({
  credential_json: z.record(z.string(), z.string()).describe(`redacted: the keys as stored, every value "${CREDENTIAL_MASK}"`),
  admin_public: z.boolean(),
  source: z.string(),
  name: z.string(),
  curator_public: z.boolean(),
  groups: z.array(z.number().int()),
  id: z.number().int(),
  user_id: z.string().describe('the subject of the principal that created it: a user id, an API key id or an OAuth client id'),
  user_email: z.string().describe('the creator\'s e-mail address; empty when not known (API keys, and users for now)'),
  time_created: z.string(),
  time_updated: z.string(),
});
export const credentialListView = z.array(credentialView);

export function presentCredential(c: CredentialRow): z.input<typeof credentialView> {
  return {
    credential_json: redactCredentialJson(c.credential_json),
    admin_public: c.admin_public,
    source: c.source,
    name: c.name,
    curator_public: c.curator_public,
    groups: c.groups,
    id: c.id,
    user_id: ownerSubject(c.owner),
    user_email: c.user_email,
    time_created: iso(c.time_created),
    time_updated: iso(c.time_updated),
  };
}

/**
 * A credential (our design): `credential_json` as its source needs it (docs/core.md, Connectors): `{}` for web
 * and file; a service account key or OAuth tokens, with google_primary_admin, for google_drive.
 */
export const createCredentialBody = z
  .strictObject({
    name: z.string().trim().min(1).max(200),
    source,
    credential_json: z.record(z.string().max(200), z.unknown()).describe('the secret, keys by source; sealed at rest and never read back'),
    admin_public: z.boolean().default(true).describe('every administrator of the tenant may use it (they all can today; kept for curators)'),
    curator_public: z.boolean().default(false).describe('curators may use it (curators are to come)'),
    groups: groupIds.default([]),
  })
  .superRefine(
    (b, ctx) => {
      if (!isObject(b) || !isSource(b.source) || !isObject(b.credential_json)) return;
      const checked = checkCredentialJson(b.source, b.credential_json);
      if (!checked.ok) addIssues(ctx, ['credential_json'], checked.issues);
    },
    // Checked with the rest, so one answer lists every issue.
    { when: () => true },
  )
  .transform((b) => {
    const checked = checkCredentialJson(b.source, b.credential_json);
    return { ...b, credential_json: checked.ok ? checked.value : b.credential_json };
  });

export const credentialParams = z.object({ credential_id: intParam });
export const tenantQuery = z.object(tenantIdParam);
