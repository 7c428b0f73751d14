import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Signing of webhook deliveries.
 *
 * Two signatures travel with every delivery:
 * - `x-service-signature` (spec 1, authentication rule 7): hex HMAC-SHA256 of the raw body, keyed with the signing
 *   secret exactly as the subscriber received it (the whole `whsec_...` string, UTF-8).
 * - Standard Webhooks (`webhook-id`, `webhook-timestamp`, `webhook-signature`): `v1,` + base64 HMAC-SHA256 of
 *   `${id}.${timestamp}.${body}`, keyed with the base64-decoded part of the secret after `whsec_`. The timestamp
 *   lets receivers refuse replays; the header lists one signature per active secret.
 */

export const SECRET_PREFIX = 'whsec_';
const SECRET_BYTES = 32;
const SECRET_PATTERN = /^whsec_[A-Za-z0-9+/]{43}=$/;

export interface SigningSecrets {
  /** The newest secret. */
  current: string;
  /** The secret replaced by the last rotation, while its overlap lasts. */
  previous?: string | null;
}

/** A fresh signing secret in the Standard Webhooks form: `whsec_` + base64 of 32 random bytes. */
export function generateSigningSecret(): string {
  return SECRET_PREFIX + randomBytes(SECRET_BYTES).toString('base64');
}

export function isSigningSecret(value: string): boolean {
  return SECRET_PATTERN.test(value);
}

/** The key bytes Standard Webhooks signs with: the base64 part of the secret, decoded. */
function standardKey(secret: string): Buffer {
  if (!secret.startsWith(SECRET_PREFIX)) throw new Error('signing secret must start with whsec_');
  return Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64');
}

/** Spec 1 rule 7: hex HMAC-SHA256 of the raw body with the signing secret. */
export function serviceSignature(secret: string, body: string | Buffer): string {
  return createHmac('sha256', secret).update(body).digest('hex');
}

/** One Standard Webhooks signature: `v1,<base64>`. */
export function standardSignature(secret: string, messageId: string, timestampSeconds: number, body: string): string {
  const mac = createHmac('sha256', standardKey(secret)).update(`${messageId}.${timestampSeconds}.${body}`).digest('base64');
  return `v1,${mac}`;
}

export interface SignatureInput {
  secrets: SigningSecrets;
  /** Stable across retries and replays: receivers de-duplicate on it. */
  messageId: string;
  timestampSeconds: number;
  body: string;
}

/**
 * The signature headers of one attempt. While a rotation overlap lasts, `x-service-signature` keeps carrying the
 * previous secret's HMAC (receivers not yet updated keep verifying), `x-service-signature-next` carries the new
 * secret's, and `webhook-signature` lists both. After the overlap only the new secret signs.
 */
export function signatureHeaders(input: SignatureInput): Record<string, string> {
  const { current, previous } = input.secrets;
  const timestamp = String(input.timestampSeconds);
  const headers: Record<string, string> = {
    'webhook-id': input.messageId,
    'webhook-timestamp': timestamp,
  };
  const standard = [standardSignature(current, input.messageId, input.timestampSeconds, input.body)];
  if (previous) {
    headers['x-service-signature'] = serviceSignature(previous, input.body);
    headers['x-service-signature-next'] = serviceSignature(current, input.body);
    standard.push(standardSignature(previous, input.messageId, input.timestampSeconds, input.body));
  } else {
    headers['x-service-signature'] = serviceSignature(current, input.body);
  }
  headers['webhook-signature'] = standard.join(' ');
  return headers;
}

/**
 * The receiver's check of rule 7, for our tests and documentation: constant-time comparison after a length check.
 */
export function verifyServiceSignature(secret: string, rawBody: string | Buffer, header: string | undefined): boolean {
  if (!header) return false;
  const expected = Buffer.from(serviceSignature(secret, rawBody), 'utf8');
  const given = Buffer.from(header, 'utf8');
  if (expected.length !== given.length) return false;
  return timingSafeEqual(expected, given);
}
