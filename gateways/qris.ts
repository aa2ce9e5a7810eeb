// QRIS codec: EMVCo Merchant-Presented Mode payloads as Bank Indonesia's QRIS profile uses them.
//
// A payload is a flat run of TLV fields: 2-digit tag, 2-digit length, value (1..99 chars).
// Templates (26..51 merchant accounts, 62 additional data) nest the same TLV form. Tag 63 is a
// CRC-16/CCITT-FALSE over everything before its 4 hex digits, "6304" included.
//
// The parser is Kasir's guard on every QRIS string a vendor returns: a payer's banking app
// refuses a malformed payload, so a bad one must never reach a merchant. It enforces only what
// real payloads satisfy (see test/fixtures/qris-vectors.txt): 00 first, 63 last, required tags,
// well-formed templates, CRC. EMVCo's ascending tag order is not enforced: issuers' apps do
// not rely on it and some acquirers do not follow it.

export const QRIS_MAX_LENGTH = 512;
/** Tag 54 carries at most 13 characters; Kasir's amounts are whole rupiah below 10^13. */
export const QRIS_MAX_AMOUNT = 9_999_999_999_999;
const QRIS_GUID = 'ID.CO.QRIS.WWW';

export function crc16ccittFalse(text: string): string {
  let crc = 0xffff;
  for (const byte of Buffer.from(text, 'utf8')) {
    crc ^= byte << 8;
    for (let bit = 0; bit < 8; bit++) {
      crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    }
  }
  return crc.toString(16).toUpperCase().padStart(4, '0');
}

function tlv(tag: string, value: string): string {
  if (value.length < 1 || value.length > 99) throw new RangeError(`QRIS tag ${tag}: value length ${value.length} outside 1..99`);
  return tag + String(value.length).padStart(2, '0') + value;
}

/**
 * Reduces free text (merchant name, city) to the printable ASCII EMVCo allows, cut to `max`:
 * accents are dropped rather than the whole letter. Returns '' when nothing printable remains.
 */
export function sanitizeQrisText(text: string, max: number): string {
  return text
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/[^\x20-\x7e]+/g, ' ')
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, max)
    .trimEnd();
}

export interface DynamicQrisInput {
  merchantName: string;
  merchantCity: string;
  /** Whole rupiah, 1..QRIS_MAX_AMOUNT. */
  amount: number;
  /** Tag 62.01; the payment's reference that acquirers echo back. 1..25 printable ASCII. */
  billNumber: string;
  /** National Merchant ID issued through the QRIS registry (tag 51.02). */
  nmid: string;
  /** Reverse-domain id of the acquirer (tag 26.00). */
  guid?: string;
  /** Merchant PAN at the acquirer (tag 26.01); derived from the NMID when omitted. */
  merchantPan?: string;
  /** Merchant id at the acquirer (tag 26.02); the NMID when omitted. */
  merchantId?: string;
  /** Merchant size criteria: micro, small, medium, large. */
  criteria?: 'UMI' | 'UKE' | 'UME' | 'UBE';
  mcc?: string;
  postalCode?: string;
  /** Tag 62.05. */
  referenceLabel?: string;
  /** Tag 62.07. */
  terminalLabel?: string;
}

/** Builds a dynamic (single-use, fixed amount) QRIS payload. Throws RangeError on unusable input. */
export function buildDynamicQris(input: DynamicQrisInput): string {
  const { amount, billNumber, nmid } = input;
  if (!Number.isSafeInteger(amount) || amount < 1 || amount > QRIS_MAX_AMOUNT) throw new RangeError(`QRIS amount must be an integer 1..${QRIS_MAX_AMOUNT}`);
  if (!/^[\x20-\x7e]{1,25}$/.test(billNumber)) throw new RangeError('QRIS bill number must be 1..25 printable ASCII characters');
  if (!/^[A-Z0-9]{1,15}$/.test(nmid)) throw new RangeError('NMID must be 1..15 uppercase letters or digits');
  const mcc = input.mcc ?? '5999';
  if (!/^\d{4}$/.test(mcc)) throw new RangeError('MCC must be 4 digits');
  if (input.postalCode !== undefined && !/^[A-Za-z0-9]{1,10}$/.test(input.postalCode)) throw new RangeError('postal code must be 1..10 letters or digits');
  const name = sanitizeQrisText(input.merchantName, 25);
  const city = sanitizeQrisText(input.merchantCity, 15);
  if (!name || !city) throw new RangeError('merchant name and city need printable characters');
  const criteria = input.criteria ?? 'UMI';
  // Real PANs are 9360 + acquirer code + merchant digits; any 16..19 digits pass issuers' apps.
  const pan = input.merchantPan ?? '93600999' + nmid.replace(/\D/g, '').padStart(10, '0').slice(-10);

  const additional =
    tlv('01', billNumber) +
    (input.referenceLabel ? tlv('05', input.referenceLabel) : '') +
    (input.terminalLabel ? tlv('07', input.terminalLabel) : '');
  const body =
    tlv('00', '01') +
    tlv('01', '12') +
    tlv('26', tlv('00', input.guid ?? 'ID.KASIR.SIMULATOR') + tlv('01', pan) + tlv('02', input.merchantId ?? nmid) + tlv('03', criteria)) +
    tlv('51', tlv('00', QRIS_GUID) + tlv('02', nmid) + tlv('03', criteria)) +
    tlv('52', mcc) +
    tlv('53', '360') +
    tlv('54', String(amount)) +
    tlv('58', 'ID') +
    tlv('59', name) +
    tlv('60', city) +
    (input.postalCode ? tlv('61', input.postalCode) : '') +
    tlv('62', additional) +
    '6304';
  return body + crc16ccittFalse(body);
}

type TlvResult = { ok: true; fields: Array<[tag: string, value: string]> } | { ok: false; error: string };

function parseTlv(text: string, where: string): TlvResult {
  const fields: Array<[string, string]> = [];
  let pos = 0;
  while (pos < text.length) {
    const head = text.slice(pos, pos + 4);
    if (!/^\d{4}$/.test(head)) return { ok: false, error: `${where}: malformed tag/length at position ${pos}` };
    const tag = head.slice(0, 2);
    const length = Number(head.slice(2));
    if (length === 0) return { ok: false, error: `${where}: tag ${tag} has an empty value` };
    if (pos + 4 + length > text.length) return { ok: false, error: `${where}: tag ${tag} length ${length} runs past the end` };
    fields.push([tag, text.slice(pos + 4, pos + 4 + length)]);
    pos += 4 + length;
  }
  return { ok: true, fields };
}

export type QrisParseResult =
  | {
      ok: true;
      /** Top-level tags in payload order. */
      tags: Map<string, string>;
      dynamic: boolean;
      amount: number | null;
      merchantName: string;
      merchantCity: string;
      /** Tag 62.01 when present. */
      billNumber: string | null;
      /** Tag 51.02 (QRIS national merchant id) when present. */
      nmid: string | null;
    }
  | { ok: false; error: string };

const fail = (error: string) => ({ ok: false as const, error });

export function parseQris(text: string): QrisParseResult {
  if (typeof text !== 'string' || text.length === 0) return fail('QRIS is empty');
  if (text.length > QRIS_MAX_LENGTH) return fail(`QRIS is ${text.length} characters, over ${QRIS_MAX_LENGTH}`);
  const top = parseTlv(text, 'QRIS');
  if (!top.ok) return top;

  const tags = new Map<string, string>();
  for (const [tag, value] of top.fields) {
    if (tags.has(tag)) return fail(`QRIS: tag ${tag} appears twice`);
    tags.set(tag, value);
  }
  const [firstTag, firstValue] = top.fields[0];
  if (firstTag !== '00' || firstValue !== '01') return fail('QRIS must start with tag 00 = "01"');
  const [lastTag, crc] = top.fields[top.fields.length - 1];
  if (lastTag !== '63' || !/^[0-9A-Fa-f]{4}$/.test(crc)) return fail('QRIS must end with tag 63 holding 4 hex digits');
  const expected = crc16ccittFalse(text.slice(0, -4));
  if (crc.toUpperCase() !== expected) return fail(`QRIS CRC mismatch: payload says ${crc}, computed ${expected}`);

  const initiation = tags.get('01');
  if (initiation !== '11' && initiation !== '12') return fail('QRIS tag 01 must be "11" (static) or "12" (dynamic)');

  let accounts = 0;
  let nmid: string | null = null;
  for (const [tag, value] of tags) {
    const n = Number(tag);
    if (n < 26 || n > 51) continue;
    const sub = parseTlv(value, `QRIS tag ${tag}`);
    if (!sub.ok) return sub;
    const subTags = new Map(sub.fields);
    if (!subTags.has('00')) return fail(`QRIS tag ${tag} lacks its GUID (sub-tag 00)`);
    if (subTags.get('00') === QRIS_GUID) nmid = subTags.get('02') ?? null;
    accounts++;
  }
  if (accounts === 0) return fail('QRIS has no merchant account information (tags 26..51)');

  const checks: Array<[tag: string, pattern: RegExp, what: string]> = [
    ['52', /^\d{4}$/, 'merchant category code (4 digits)'],
    ['53', /^\d{3}$/, 'currency (3 digits)'],
    ['58', /^[A-Z]{2}$/, 'country code (2 letters)'],
    ['59', /^.{1,25}$/s, 'merchant name (1..25 characters)'],
    ['60', /^.{1,15}$/s, 'merchant city (1..15 characters)'],
  ];
  for (const [tag, pattern, what] of checks) {
    const value = tags.get(tag);
    if (value === undefined) return fail(`QRIS lacks tag ${tag}, ${what}`);
    if (!pattern.test(value)) return fail(`QRIS tag ${tag} is not a valid ${what}`);
  }

  let amount: number | null = null;
  const rawAmount = tags.get('54');
  if (rawAmount !== undefined) {
    if (rawAmount.length > 13 || !/^\d+(\.\d+)?$/.test(rawAmount)) return fail('QRIS tag 54 (amount) must be up to 13 digits with an optional decimal part');
    amount = Number(rawAmount);
  }
  const postal = tags.get('61');
  if (postal !== undefined && postal.length > 10) return fail('QRIS tag 61 (postal code) is over 10 characters');

  let billNumber: string | null = null;
  const additional = tags.get('62');
  if (additional !== undefined) {
    const sub = parseTlv(additional, 'QRIS tag 62');
    if (!sub.ok) return sub;
    billNumber = new Map(sub.fields).get('01') ?? null;
  }

  return {
    ok: true,
    tags,
    dynamic: initiation === '12',
    amount,
    merchantName: tags.get('59')!,
    merchantCity: tags.get('60')!,
    billNumber,
    nmid,
  };
}

/**
 * Checks a QRIS string a vendor returned for an order: usable by payers' apps, dynamic, in
 * rupiah, and for exactly the order's amount. Returns what is wrong, or null.
 */
export function validateVendorQris(text: string, expectedAmount: number): string | null {
  const qris = parseQris(text);
  if (!qris.ok) return qris.error;
  if (!qris.dynamic) return 'QRIS is static (tag 01 = "11"), a dynamic one ("12") was expected';
  if (qris.tags.get('53') !== '360') return `QRIS currency (tag 53) is ${qris.tags.get('53')}, not 360 (IDR)`;
  if (qris.tags.get('58') !== 'ID') return `QRIS country (tag 58) is ${qris.tags.get('58')}, not ID`;
  if (qris.amount === null) return 'QRIS has no amount (tag 54)';
  if (qris.amount !== expectedAmount) return `QRIS amount (tag 54) is ${qris.tags.get('54')}, expected ${expectedAmount}`;
  return null;
}
