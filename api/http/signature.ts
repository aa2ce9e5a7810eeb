// V1 request signature (spec 5.2): X-Signature: sha256=<lowercase hex HMAC-SHA256 of the raw
// body>, keyed with the merchant's webhook secret, compared in constant time.
import { createHmac } from 'node:crypto';
import { constantTimeEqual } from '../../db/secrets.ts';

/** HMAC key bytes: a `whsec_` secret is base64 of the key (Standard Webhooks); others are UTF-8. */
export function hmacKey(secret: string): Buffer {
  if (secret.startsWith('whsec_')) {
    const decoded = Buffer.from(secret.slice(6), 'base64');
    if (decoded.length > 0) return decoded;
  }
  return Buffer.from(secret, 'utf8');
}

export function signBody(secret: string, body: Buffer | string): string {
  return `sha256=${createHmac('sha256', hmacKey(secret)).update(body).digest('hex')}`;
}

export function verifyBodySignature(secret: string, body: Buffer, header: string | undefined): boolean {
  if (!header) return false;
  return constantTimeEqual(signBody(secret, body), header.trim());
}
