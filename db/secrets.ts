// Secrets Kasir must use in plaintext (webhook HMAC keys, legacy client secrets, vendor
// credentials) are kept encrypted at rest with AES-256-GCM under KASIR_MASTER_KEY.
//
// A sealed value is bound to the place it is stored: table, column and row id go into the
// GCM additional data, so a ciphertext copied into another merchant's or vendor's row (by
// someone who can write the database but has no master key) fails to open instead of
// handing that row a secret the copier knows.
//
// Layouts (first byte is the version):
//   2 | 12-byte nonce | 16-byte tag | ciphertext   additional data = place (see placeBytes)
//   1 | 12-byte nonce | 16-byte tag | ciphertext   no additional data: written before binding;
//     still opened so existing rows keep working, rewritten as 2 by `ops secrets:reseal`
//     (db/secret-reseal.ts) and by every write.
// API keys are never sealed: only their SHA-256 digest is stored (see hashApiKey).
import { createCipheriv, createDecipheriv, createHash, randomBytes, timingSafeEqual } from 'node:crypto';

const UNBOUND = 1;
const BOUND = 2;

/** Every column that holds a sealed value, with the table it belongs to. */
export type SealedColumn =
  | { table: 'merchants'; column: 'webhook_secret_enc' | 'legacy_client_secret_enc' }
  | { table: 'vendors'; column: 'credentials_enc' };

/** Where a sealed value lives: the column and the row's primary key (merchant id, vendor code). */
export type SealedPlace = SealedColumn & { rowId: string };

/** A sealed value that does not open where it was found: tampered, copied from elsewhere, or another key. */
export class SealedSecretError extends Error {
  override name = 'SealedSecretError';
  constructor(place: SealedPlace, reason: string) {
    super(`sealed secret in ${place.table}.${place.column} of row ${place.rowId} ${reason}`);
  }
}

export interface Sealer {
  seal(plaintext: string, place: SealedPlace): Buffer;
  /** Opens a value sealed for this place (or an unbound one from before binding); throws SealedSecretError otherwise. */
  open(sealed: Buffer, place: SealedPlace): string;
}

/** True for a value written before binding; `ops secrets:reseal` rewrites those. */
export function isUnbound(sealed: Buffer): boolean {
  return sealed[0] === UNBOUND;
}

// Length-prefixed fields, so no choice of row id can make two places encode alike.
function placeBytes(place: SealedPlace): Buffer {
  const fields = ['kasir-sealed', place.table, place.column, place.rowId].map((f) => Buffer.from(f, 'utf8'));
  return Buffer.concat(fields.flatMap((f) => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(f.length);
    return [length, f];
  }));
}

export function createSealer(masterKeyHex: string): Sealer {
  const key = Buffer.from(masterKeyHex, 'hex');
  if (key.length !== 32) throw new Error('KASIR_MASTER_KEY must be 32 bytes of hex');
  return {
    seal(plaintext, place) {
      const nonce = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, nonce);
      cipher.setAAD(placeBytes(place));
      const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      return Buffer.concat([Buffer.from([BOUND]), nonce, cipher.getAuthTag(), body]);
    },
    open(sealed, place) {
      const version = sealed[0];
      if (version !== BOUND && version !== UNBOUND) throw new SealedSecretError(place, `has unknown version ${version}`);
      if (sealed.length < 29) throw new SealedSecretError(place, 'is truncated');
      const decipher = createDecipheriv('aes-256-gcm', key, sealed.subarray(1, 13));
      decipher.setAuthTag(sealed.subarray(13, 29));
      if (version === BOUND) decipher.setAAD(placeBytes(place));
      try {
        return Buffer.concat([decipher.update(sealed.subarray(29)), decipher.final()]).toString('utf8');
      } catch {
        // The one GCM failure covers all causes; none of them may yield a plaintext.
        throw new SealedSecretError(place, 'does not open: sealed for another row or column, altered, or under another master key');
      }
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
