// Secrets Kasir must use in plaintext (webhook HMAC keys, legacy client secrets, vendor
// credentials) are kept encrypted at rest with AES-256-GCM under KASIR_MASTER_KEY.
// Layout of a sealed value: version byte (1) | 12-byte nonce | 16-byte tag | ciphertext.
// API keys are never sealed: only their SHA-256 digest is stored (see hashApiKey).
import { createCipheriv, createDecipheriv, createHash, randomBytes, timingSafeEqual } from 'node:crypto';

const VERSION = 1;

export interface Sealer {
  seal(plaintext: string): Buffer;
  open(sealed: Buffer): string;
}

export function createSealer(masterKeyHex: string): Sealer {
  const key = Buffer.from(masterKeyHex, 'hex');
  if (key.length !== 32) throw new Error('KASIR_MASTER_KEY must be 32 bytes of hex');
  return {
    seal(plaintext) {
      const nonce = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, nonce);
      const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      return Buffer.concat([Buffer.from([VERSION]), nonce, cipher.getAuthTag(), body]);
    },
    open(sealed) {
      if (sealed[0] !== VERSION) throw new Error('unknown sealed secret version');
      const decipher = createDecipheriv('aes-256-gcm', key, sealed.subarray(1, 13));
      decipher.setAuthTag(sealed.subarray(13, 29));
      return Buffer.concat([decipher.update(sealed.subarray(29)), decipher.final()]).toString('utf8');
    },
  };
}

export function newMasterKey(): string {
  return randomBytes(32).toString('hex');
}

/** A merchant API key: 64 lowercase hex characters (256 random bits). */
export function newApiKey(): string {
  return randomBytes(32).toString('hex');
}

export function hashApiKey(apiKey: string): Buffer {
  return createHash('sha256').update(apiKey, 'utf8').digest();
}

/** Webhook secrets Kasir generates follow Standard Webhooks: whsec_ + base64 of 24 random bytes. */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(24).toString('base64')}`;
}

export function newLegacyClientSecret(): string {
  return randomBytes(24).toString('hex');
}

export function constantTimeEqual(a: string | Buffer, b: string | Buffer): boolean {
  const left = Buffer.isBuffer(a) ? a : Buffer.from(a);
  const right = Buffer.isBuffer(b) ? b : Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}
