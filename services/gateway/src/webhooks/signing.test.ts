import { createHmac } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import {
  generateSigningSecret,
  isSigningSecret,
  serviceSignature,
  signatureHeaders,
  verifyServiceSignature,
} from './signing';

const body = JSON.stringify({ event_id: 'evt_1', event: 'memory.ingest.completed', payload: { doc_id: 'd1' } });
const now = () => Math.floor(Date.now() / 1000);

describe('webhook signing', () => {
  it('generates distinct Standard Webhooks secrets', () => {
    const a = generateSigningSecret();
    const b = generateSigningSecret();
    expect(isSigningSecret(a)).toBe(true);
    expect(a).not.toBe(b);
    expect(isSigningSecret('whsec_short')).toBe(false);
  });

  it('x-service-signature is the plain hex HMAC-SHA256 of the raw body keyed with the secret', () => {
    const secret = generateSigningSecret();
    const headers = signatureHeaders({ secrets: { current: secret }, messageId: 'evt_1', timestampSeconds: now(), body });
    const plain = createHmac('sha256', secret).update(body).digest('hex');
    expect(headers['x-service-signature']).toBe(plain);
    expect(headers['x-service-signature-next']).toBeUndefined();
    expect(verifyServiceSignature(secret, body, headers['x-service-signature'])).toBe(true);
  });

  it('verifies with the standardwebhooks package', () => {
    const secret = generateSigningSecret();
    const headers = signatureHeaders({ secrets: { current: secret }, messageId: 'evt_1', timestampSeconds: now(), body });
    expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
    expect(() => new Webhook(generateSigningSecret()).verify(body, headers)).toThrow();
  });

  it('signs with both secrets during a rotation overlap', () => {
    const previous = generateSigningSecret();
    const current = generateSigningSecret();
    const headers = signatureHeaders({ secrets: { current, previous }, messageId: 'evt_2', timestampSeconds: now(), body });
    expect(headers['x-service-signature']).toBe(serviceSignature(previous, body));
    expect(headers['x-service-signature-next']).toBe(serviceSignature(current, body));
    expect(headers['webhook-signature']!.split(' ')).toHaveLength(2);
    expect(new Webhook(previous).verify(body, headers)).toBeTruthy();
    expect(new Webhook(current).verify(body, headers)).toBeTruthy();
  });

  it('refuses tampered bodies, wrong lengths and missing headers', () => {
    const secret = generateSigningSecret();
    const sig = serviceSignature(secret, body);
    expect(verifyServiceSignature(secret, `${body} `, sig)).toBe(false);
    expect(verifyServiceSignature(secret, body, sig.slice(1))).toBe(false);
    expect(verifyServiceSignature(secret, body, undefined)).toBe(false);
  });

  it('refuses a replayed Standard Webhooks timestamp outside the tolerance', () => {
    const secret = generateSigningSecret();
    const headers = signatureHeaders({ secrets: { current: secret }, messageId: 'evt_3', timestampSeconds: now() - 3600, body });
    expect(() => new Webhook(secret).verify(body, headers)).toThrow(/timestamp/i);
  });
});
