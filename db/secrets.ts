// Secrets Kasir must use in plaintext (webhook HMAC keys, legacy client secrets, vendor
// credentials) are kept encrypted at rest with AES-256-GCM under KASIR_MASTER_KEY.
//
// A sealed value is bound to the place it is stored: table, column and row id go into the
// GCM additional data, so a ciphertext copied into another merchant's or vendor's row (by
// someone who can write the database but has no master key) fails to open instead of
// handing that row a secret the copier knows.
//
// A sealed value names the master key it was sealed under by key id (masterKeyId: a check
// value derived from the key, not the key), so the key can be rotated without downtime: the
// sealer opens values under the current key and under every key in KASIR_MASTER_KEYS_PREVIOUS,
// seals only under the current one, and `ops secrets:reseal` moves the rest over
// (db/secret-reseal.ts). docs/deploy.md, "The master key", has the procedure.
//
// Layouts (first byte is the version):
//   3 | 4-byte key id | 12-byte nonce | 16-byte tag | ciphertext   additional data = the first
//     5 bytes, then place (see placeBytes). Every seal writes this.
//   2 | 12-byte nonce | 16-byte tag | ciphertext   additional data = place: written before key
//     ids; opened by trying each configured key (the current one first).
//   1 | 12-byte nonce | 16-byte tag | ciphertext   no additional data: written before binding;
//     opened like 2 unless KASIR_SEALED_REQUIRE_BOUND refuses it.
// `ops secrets:reseal` rewrites 1, 2 and 3 under another key as 3 under the current key.
// API keys are never sealed: only their SHA-256 digest is stored (see hashApiKey).
import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Config } from './config.ts';

const UNBOUND = 1;
const BOUND = 2;
const KEYED = 3;
const KEY_ID_BYTES = 4;
const KEYED_HEADER = 1 + KEY_ID_BYTES;
const NONCE_AND_TAG = 12 + 16;

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
  /** Key id of the current master key: every seal is under it. */
  readonly keyId: string;
  /** Key ids of KASIR_MASTER_KEYS_PREVIOUS: accepted for opening, never for sealing. */
  readonly previousKeyIds: readonly string[];
  seal(plaintext: string, place: SealedPlace): Buffer;
  /** Opens a value sealed for this place under a configured key (or one from before binding); throws SealedSecretError otherwise. */
  open(sealed: Buffer, place: SealedPlace): string;
}

/** The master-key settings a sealer is built from (db/config.ts); a bare key is the current key alone. */
export type MasterKeys = string | Pick<Config, 'KASIR_MASTER_KEY' | 'KASIR_MASTER_KEYS_PREVIOUS' | 'KASIR_SEALED_REQUIRE_BOUND'>;

/** True for a value written before binding; `ops secrets:reseal` rewrites those. */
export function isUnbound(sealed: Buffer): boolean {
  return sealed[0] === UNBOUND;
}

/** The key id a value names (8 hex characters); null for a value from before key ids. */
export function sealedKeyId(sealed: Buffer): string | null {
  return sealed[0] === KEYED ? sealed.subarray(1, KEYED_HEADER).toString('hex') : null;
}

/**
 * A master key's id: 32 bits of an HMAC under the key, so it names the key in sealed values,
 * logs and reports without saying anything about the key (4 bytes: a handful of keys never
 * collide by chance, and createSealer refuses it if they did).
 */
export function masterKeyId(masterKeyHex: string): string {
  return createHmac('sha256', masterKeyBytes(masterKeyHex)).update('kasir-master-key-id').digest().subarray(0, KEY_ID_BYTES).toString('hex');
}

function masterKeyBytes(masterKeyHex: string): Buffer {
  const key = Buffer.from(masterKeyHex, 'hex');
  if (key.length !== 32 || key.toString('hex') !== masterKeyHex.toLowerCase()) throw new Error('a master key must be 32 bytes of hex');
  return key;
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

/** GCM open of nonce | tag | ciphertext; null when it does not authenticate. */
function decrypt(key: Buffer, body: Buffer, additional: Buffer | null): string | null {
  const decipher = createDecipheriv('aes-256-gcm', key, body.subarray(0, 12));
  decipher.setAuthTag(body.subarray(12, NONCE_AND_TAG));
  if (additional) decipher.setAAD(additional);
  try {
    return Buffer.concat([decipher.update(body.subarray(NONCE_AND_TAG)), decipher.final()]).toString('utf8');
  } catch {
    // The one GCM failure covers all causes; none of them may yield a plaintext.
    return null;
  }
}

export function createSealer(masterKeys: MasterKeys): Sealer {
  const settings = typeof masterKeys === 'string'
    ? { KASIR_MASTER_KEY: masterKeys, KASIR_MASTER_KEYS_PREVIOUS: [], KASIR_SEALED_REQUIRE_BOUND: false }
    : masterKeys;
  // Current key first: values without a key id are tried under it before the others.
  const keys = new Map<string, Buffer>();
  for (const hex of [settings.KASIR_MASTER_KEY, ...settings.KASIR_MASTER_KEYS_PREVIOUS]) {
    const id = masterKeyId(hex);
    const key = masterKeyBytes(hex);
    const known = keys.get(id);
    if (known && !known.equals(key)) throw new Error(`two configured master keys share the key id ${id}: generate another key`);
    keys.set(id, key);
  }
  const [[keyId, current]] = keys;
  const previousKeyIds = [...keys.keys()].slice(1);
  const configured = `current ${keyId}${previousKeyIds.length ? `, previous ${previousKeyIds.join(', ')}` : ', no previous'}`;

  return {
    keyId,
    previousKeyIds,
    seal(plaintext, place) {
      const header = Buffer.concat([Buffer.from([KEYED]), Buffer.from(keyId, 'hex')]);
      const nonce = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', current, nonce);
      cipher.setAAD(Buffer.concat([header, placeBytes(place)]));
      const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      return Buffer.concat([header, nonce, cipher.getAuthTag(), body]);
    },
    open(sealed, place) {
      const version = sealed[0];
      if (version === KEYED) {
        if (sealed.length < KEYED_HEADER + NONCE_AND_TAG) throw new SealedSecretError(place, 'is truncated');
        const id = sealedKeyId(sealed)!;
        const key = keys.get(id);
        if (!key) throw new SealedSecretError(place, `is sealed under master key ${id}, which is not configured (${configured})`);
        const plaintext = decrypt(key, sealed.subarray(KEYED_HEADER), Buffer.concat([sealed.subarray(0, KEYED_HEADER), placeBytes(place)]));
        if (plaintext === null) throw new SealedSecretError(place, `does not open under master key ${id}: sealed for another row or column, or altered`);
        return plaintext;
      }
      if (version !== BOUND && version !== UNBOUND) throw new SealedSecretError(place, `has unknown version ${version}`);
      if (sealed.length < 1 + NONCE_AND_TAG) throw new SealedSecretError(place, 'is truncated');
      if (version === UNBOUND && settings.KASIR_SEALED_REQUIRE_BOUND) {
        throw new SealedSecretError(place, 'is unbound (sealed before row binding) and KASIR_SEALED_REQUIRE_BOUND refuses those');
      }
      for (const key of keys.values()) {
        const plaintext = decrypt(key, sealed.subarray(1), version === BOUND ? placeBytes(place) : null);
        if (plaintext !== null) return plaintext;
      }
      throw new SealedSecretError(place, `does not open under any configured master key (${configured}): sealed for another row or column, altered, or under another key`);
    },
  };
}

export function newMasterKey(): string {
  return randomBytes(32).toString('hex');
}

/**
 * Keys issued by earlier releases carried this prefix; they keep working (their digest covers
 * the prefix as issued). New keys are the spec's form again (5.1), without it.
 */
export const LEGACY_API_KEY_PREFIX = 'kasir_sk_';

/** A merchant or team API key: 64 lowercase hex characters (256 random bits), the spec's form (5.1). */
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
