// Signatures keyed with a merchant's webhook secret. Two keys come from one secret:
// - X-Signature (spec 5.2: requests to POST /v1/orders and outgoing webhooks) is
//   sha256=<lowercase hex HMAC-SHA256 of the raw body> keyed with the UTF-8 bytes of the secret
//   string exactly as the merchant holds it, whatever its form: the spec's merchant computes
//   HMAC(secret, raw_body) and knows nothing of prefixes or encodings.
// - webhook-signature (Standard Webhooks, outgoing only) follows that standard's key
//   convention, so stock verifiers work: a `whsec_` secret's key is the base64-decoded rest.
// Comparisons are constant-time.
import { createHmac } from 'node:crypto';
import { constantTimeEqual } from './secrets.ts';

export function signBody(secret: string, body: Buffer | string): string {
  return `sha256=${createHmac('sha256', Buffer.from(secret, 'utf8')).update(body).digest('hex')}`;
}

export function verifyBodySignature(secret: string, body: Buffer, header: string | undefined): boolean {
  if (!header) return false;
  return constantTimeEqual(signBody(secret, body), header.trim());
}

/**
 * Standard Webhooks key bytes: a `whsec_` secret is base64 of the key. Any other secret (an
 * operator's choice) keys with its UTF-8 bytes, as stock libraries do with `format: "raw"`.
 */
export function standardWebhooksKey(secret: string): Buffer {
  if (secret.startsWith('whsec_')) {
    const decoded = Buffer.from(secret.slice(6), 'base64');
    if (decoded.length > 0) return decoded;
  }
  return Buffer.from(secret, 'utf8');
}

/** `webhook-signature` value: v1,<base64 HMAC-SHA256 of "id.timestamp.body">. */
export function standardWebhooksSignature(secret: string, id: string, timestamp: number, body: string): string {
  return `v1,${createHmac('sha256', standardWebhooksKey(secret)).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}
