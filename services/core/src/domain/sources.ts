import { z } from 'zod';
import { CONNECTOR_SOURCES, type ConnectorSource } from '@lore/contracts';

/**
 * The sources a connector may read and, per source, what its connector configuration and its credential's
 * `credential_json` must hold. Pure rules: the route schemas apply them, so a bad value is a 422 naming its field.
 */

export const SOURCES = CONNECTOR_SOURCES;
export type Source = ConnectorSource;

/** How a connector fetches: the whole source each run (`load_state`), changes since the last run (`poll`), or pushed events. */
export const INPUT_TYPES = ['load_state', 'poll', 'event'] as const;
export type InputType = (typeof INPUT_TYPES)[number];

export interface SourceIssue {
  /** Where the problem is, inside the value checked. */
  path: Array<string | number>;
  message: string;
}

export type Checked<T> = { ok: true; value: T } | { ok: false; issues: SourceIssue[] };

/** An http(s) address without a user name or password in it (secrets belong in a credential, which is sealed). */
const httpAddress = (scheme: RegExp, what: string) =>
  z
    .string()
    .trim()
    .max(2048)
    .pipe(z.url({ protocol: scheme, error: `must be an ${what} URL` }))
    .refine((v) => {
      // Runs after a failed URL check too: only a parsed address can carry credentials.
      const u = URL.canParse(v) ? new URL(v) : null;
      return u === null || (u.username === '' && u.password === '');
    }, 'must not carry a user name or password (put secrets in a credential)');

const email = z.email('must be an e-mail address').max(320);
const nonEmpty = z.string().min(1).max(8192);

const webConfig = z.strictObject({
  base_url: httpAddress(/^https?$/i, 'http or https'),
  web_connector_type: z.enum(['single', 'recursive', 'sitemap'], 'must be single, recursive or sitemap'),
});

const fileConfig = z.strictObject({
  file_locations: z.array(z.string().trim().min(1).max(1024)).min(1, 'name at least one file').max(1000),
});

/** Google Drive: everything the credential reaches unless narrowed; `{}` reads every drive the credential can. */
const googleDriveConfig = z.strictObject({
  include_shared_drives: z.boolean().optional(),
  include_my_drives: z.boolean().optional(),
  include_files_shared_with_me: z.boolean().optional(),
  shared_drive_urls: z.array(httpAddress(/^https$/i, 'https')).max(100).optional(),
  shared_folder_urls: z.array(httpAddress(/^https$/i, 'https')).max(100).optional(),
  my_drive_emails: z.array(email).max(1000).optional(),
  specific_user_emails: z.array(email).max(1000).optional(),
});

/** web and file read without a secret: their credential holds nothing. */
const noSecret = z.strictObject({});

/** A Google service account key file as Google issues it (its other string fields are kept as they are). */
const serviceAccountKey = z
  .object({
    type: z.literal('service_account', 'must be "service_account"'),
    client_email: email,
    private_key: z.string().max(8192).regex(/-----BEGIN [A-Z ]*PRIVATE KEY-----/, 'must be a PEM private key'),
  })
  .catchall(z.string().max(8192));

const googleServiceAccount = z.strictObject({
  google_service_account_key: serviceAccountKey,
  /** The Workspace user the service account acts as (domain-wide delegation). */
  google_primary_admin: email,
});

const googleOAuth = z.strictObject({
  google_tokens: z.strictObject({
    client_id: nonEmpty,
    client_secret: nonEmpty,
    refresh_token: nonEmpty,
    token: nonEmpty.optional(),
    token_uri: httpAddress(/^https$/i, 'https').optional(),
    scopes: z.array(z.string().min(1).max(512)).max(50).optional(),
  }),
  /** The Workspace user who granted the tokens. */
  google_primary_admin: email,
});

function checked<T>(schema: z.ZodType<T>, value: unknown): Checked<T> {
  const r = schema.safeParse(value);
  if (r.success) return { ok: true, value: r.data };
  return { ok: false, issues: r.error.issues.map((i) => ({ path: i.path.map((p) => (typeof p === 'symbol' ? String(p) : p)), message: i.message })) };
}

function googleDriveCredential(json: unknown): Checked<Record<string, unknown>> {
  const given = typeof json === 'object' && json !== null ? json : {};
  if ('google_service_account_key' in given) return checked(googleServiceAccount, json);
  if ('google_tokens' in given) return checked(googleOAuth, json);
  return { ok: false, issues: [{ path: [], message: 'a google_drive credential holds google_service_account_key (a service account key file) or google_tokens (OAuth tokens), and google_primary_admin' }] };
}

interface SourceRules {
  inputTypes: readonly InputType[];
  config: (value: unknown) => Checked<Record<string, unknown>>;
  credential: (value: unknown) => Checked<Record<string, unknown>>;
}

const RULES: Record<Source, SourceRules> = {
  web: { inputTypes: ['load_state'], config: (v) => checked(webConfig, v), credential: (v) => checked(noSecret, v) },
  file: { inputTypes: ['load_state'], config: (v) => checked(fileConfig, v), credential: (v) => checked(noSecret, v) },
  google_drive: { inputTypes: ['poll', 'load_state'], config: (v) => checked(googleDriveConfig, v), credential: googleDriveCredential },
};

export function isSource(value: unknown): value is Source {
  return typeof value === 'string' && (SOURCES as readonly string[]).includes(value);
}

/** The input types a source's connectors may use. */
export function inputTypesOf(source: Source): readonly InputType[] {
  return RULES[source].inputTypes;
}

/** A connector's `connector_specific_config` for its source, as stored (trimmed), or every problem in it. */
export function checkConnectorConfig(source: Source, config: unknown): Checked<Record<string, unknown>> {
  return RULES[source].config(config);
}

/** A credential's `credential_json` for its source, as it will be sealed, or every problem in it. */
export function checkCredentialJson(source: Source, json: unknown): Checked<Record<string, unknown>> {
  return RULES[source].credential(json);
}
