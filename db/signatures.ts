// Signatures keyed with a merchant's webhook secret. Two keys come from one secret:
// - X-Signature (spec 5.2: requests to POST /v1/orders and outgoing webhooks) is
//   sha256=<lowercase hex HMAC-SHA256 of the raw body> keyed with the UTF-8 bytes of the secret
//   string exactly as the merchant holds it, whatever its form: the spec's merchant computes
//   HMAC(secret, raw_body) and knows nothing of prefixes or encodings.
// - webhook-signature (Standard Webhooks, outgoing only) follows that standard's key
//   convention, so stock verifiers work: a `whsec_` secret's key is the base64-decoded rest.
// Comparisons are constant-time.
import { createHmac, createSecretKey, type KeyObject } from 'node:crypto';
import { constantTimeEqual } from './secrets.ts';

/**
 * Each key as a KeyObject, made once per secret: given a string or a Buffer, Node 24's createHmac
 * prepares the key anew on every call, 34 µs against 4.8 µs with a KeyObject (20,000 calls each).
 * The webhook worker signs twice per delivery: in a flash sale's burst that was a tenth of its
 * CPU (V8 profile, docs/performance.md). A rotated secret's old keys stay until the map is
 * cleared at its bound; they are the same bytes the worker's secret cache already holds.
 */
const keys = new Map<string, KeyObject>();
const MAX_KEYS = 10_000;

function keyFor(kind: 'x-signature' | 'standard', secret: string, bytes: () => Buffer): KeyObject {
  const name = `${kind}:${secret}`;
  let key = keys.get(name);
  if (!key) {
    if (keys.size >= MAX_KEYS) keys.clear();
    key = createSecretKey(bytes());
    keys.set(name, key);
  }
  return key;
}

export function signBody(secret: string, body: Buffer | string): string {
  const key = keyFor('x-signature', secret, () => Buffer.from(secret, 'utf8'));
  return `sha256=${createHmac('sha256', key).update(body).digest('hex')}`;
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
  const key = keyFor('standard', secret, () => standardWebhooksKey(secret));
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}
