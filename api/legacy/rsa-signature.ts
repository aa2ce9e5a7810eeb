// Legacy disbursement signatures (spec 5.4): the X-SIGNATURE header is the base64 RSA signature
// (SHA-256, PKCS#1 v1.5) of the text "clientId|clientSecret|bodyHash", bodyHash being the
// lowercase hex SHA-256 of the request body exactly as received. The merchant signs with its
// private key; Kasir verifies with the public key an operator stored (merchant:set-public-key).
// Only RSA keys of 2048 bits or more verify: another key type stored by hand must not turn this
// into ECDSA, and a short modulus can be factored (512 bits in hours on rented machines), which
// would let anyone sign as the merchant. The rule is checked when the key is stored and again at
// every verification, so a key stored before the rule, or by hand, is refused too.
import { constants, createHash, createPublicKey, verify, type KeyObject } from 'node:crypto';

/** Smallest RSA modulus accepted (NIST SP 800-131A: 2048 bits since 2014). */
export const MIN_RSA_BITS = 2048;

/** Why a public key cannot verify legacy signatures, or null when it can. */
export function legacyKeyProblem(key: KeyObject): string | null {
  if (key.asymmetricKeyType !== 'rsa') return `a ${key.asymmetricKeyType} key; an RSA key is required`;
  const bits = key.asymmetricKeyDetails?.modulusLength ?? 0;
  if (bits < MIN_RSA_BITS) return `a ${bits}-bit RSA key; an RSA key of at least ${MIN_RSA_BITS} bits is required`;
  return null;
}

/** Lowercase hex SHA-256 of the raw body bytes. */
export function bodyHash(rawBody: Buffer): string {
  return createHash('sha256').update(rawBody).digest('hex');
}

/** The text the merchant signs. */
export function signedText(clientId: string, clientSecret: string, rawBody: Buffer): string {
  return `${clientId}|${clientSecret}|${bodyHash(rawBody)}`;
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * True only for a well-formed base64 header that verifies over `text` with the PEM public key.
 * A missing header, malformed base64, a non-RSA, short or unreadable key are all simply false.
 */
export function verifyXSignature(publicKeyPem: string, text: string, header: string | undefined): boolean {
  const signature = header?.trim();
  if (!signature || !BASE64.test(signature)) return false;
  try {
    const key = createPublicKey(publicKeyPem);
    if (legacyKeyProblem(key)) return false;
    return verify('sha256', Buffer.from(text, 'utf8'), { key, padding: constants.RSA_PKCS1_PADDING }, Buffer.from(signature, 'base64'));
  } catch {
    return false;
  }
}
