// Reference codes: ORD-<unix seconds>-<suffix>, 25 characters in all, because vendors carry
// the code as the QRIS bill number (tag 62 sub-tag 01, at most 25). The suffix is 10 characters
// of Crockford base32 (50 random bits): unguessable, uppercase alphanumeric, no look-alikes.
import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

// Random bytes are drawn 4 KiB at a time and handed out in slices, each slice once: a
// randomBytes call per code was a system call per order on the create's path (about 50 µs of
// the API's time per create under load, in a profile of the orders bench).
let drawn = Buffer.alloc(0);
let used = 0;
function random(n: number): Buffer {
  if (used + n > drawn.length) {
    drawn = randomBytes(Math.max(4096, n));
    used = 0;
  }
  used += n;
  return drawn.subarray(used - n, used);
}

export function randomSuffix(length = 10): string {
  const bytes = random(length);
  let out = '';
  for (let i = 0; i < length; i++) out += ALPHABET[bytes[i] & 31];
  return out;
}

function stamp(now: Date): string {
  return String(Math.floor(now.getTime() / 1000));
}

export function newRefCode(prefix: 'ORD' | 'DSB' | 'RFD', now = new Date()): string {
  return `${prefix}-${stamp(now)}-${randomSuffix()}`;
}

/**
 * `count` codes at once, from one draw of random bytes: a 100,000-row import drawing them one
 * by one spent over a second in randomBytes.
 */
export function newRefCodes(prefix: 'ORD' | 'DSB' | 'RFD', count: number, now = new Date()): string[] {
  const bytes = randomBytes(count * 10);
  const head = `${prefix}-${stamp(now)}-`;
  const codes = new Array<string>(count);
  for (let n = 0; n < count; n++) {
    let suffix = '';
    for (let i = n * 10; i < n * 10 + 10; i++) suffix += ALPHABET[bytes[i] & 31];
    codes[n] = head + suffix;
  }
  return codes;
}

/** Token in qr_url: shown to payers without an API key, so it must not be guessable. */
export function newQrToken(): string {
  return random(18).toString('base64url');
}
