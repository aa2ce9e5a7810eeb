// Legacy disbursement signatures (spec 5.4): the X-SIGNATURE header is the base64 RSA signature
// (SHA-256, PKCS#1 v1.5) of the text "clientId|clientSecret|bodyHash", bodyHash being the
// lowercase hex SHA-256 of the request body exactly as received. The merchant signs with its
// private key; Kasir verifies with the public key an operator stored (merchant:set-public-key).
// Only RSA keys verify: another key type stored by hand must not turn this into ECDSA.
import { constants, createHash, createPublicKey, verify } from 'node:crypto';

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
 * A missing header, malformed base64, a non-RSA or unreadable key are all simply false.
 */
export function verifyXSignature(publicKeyPem: string, text: string, header: string | undefined): boolean {
  const signature = header?.trim();
  if (!signature || !BASE64.test(signature)) return false;
  try {
    const key = createPublicKey(publicKeyPem);
    if (key.asymmetricKeyType !== 'rsa') return false;
    return verify('sha256', Buffer.from(text, 'utf8'), { key, padding: constants.RSA_PKCS1_PADDING }, Buffer.from(signature, 'base64'));
  } catch {
    return false;
  }
}
