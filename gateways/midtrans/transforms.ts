// Midtrans Core API and Iris, pure: Kasir's requests in Midtrans's shapes, Midtrans's answers in
// Kasir's terms, the two signature formulas and the status tables. No I/O here; the client
// (midtrans-client.ts) sends, the adapter (midtrans.ts) classifies. docs/vendors/midtrans.md
// says how sure each fact is.
//
// Amounts are whole rupiah. Core requests carry integers; Core answers and notifications carry
// strings with two decimals ("150000.00"), Iris strings in both directions ("10000", "10000.0").
// A fraction other than zero is refused, never rounded: an answer carrying one is garbled.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { DisbursementStatus, QrisStatus } from '../gateway.ts';

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
export const text = (value: unknown): string | null => (typeof value === 'string' && value.length > 0 ? value : null);

// ---------------------------------------------------------------- signatures

const sha512Hex = (value: string) => createHash('sha512').update(value, 'utf8').digest('hex');

/** Core notification signature_key: SHA-512 hex of order_id + status_code + gross_amount + server key, strings as received. */
export const notificationSignature = (orderId: string, statusCode: string, grossAmount: string, serverKey: string) => sha512Hex(orderId + statusCode + grossAmount + serverKey);

/** Iris-Signature: SHA-512 hex of the raw body followed by the merchant key. */
export const irisSignature = (rawBody: Buffer | string, merchantKey: string) =>
  createHash('sha512').update(rawBody).update(merchantKey, 'utf8').digest('hex');

/** Constant-time comparison of two hex digests (case-insensitive, as vendors differ in case). */
export function sameHex(expected: string, given: unknown): boolean {
  if (typeof given !== 'string' || !/^[0-9a-fA-F]+$/.test(given) || given.length !== expected.length) return false;
  return timingSafeEqual(Buffer.from(expected.toLowerCase()), Buffer.from(given.toLowerCase()));
}

// ---------------------------------------------------------------- amounts

/** "150000.00", "10000", "10000.0" → whole rupiah; null for a fraction, a sign, or anything else. */
export function fromMidtransAmount(value: unknown): number | null {
  if (typeof value !== 'string') return null;
  const match = /^(\d{1,16})(?:\.(\d{1,2}))?$/.exec(value);
  if (!match || (match[2] !== undefined && !/^0+$/.test(match[2]))) return null;
  const rupiah = Number(match[1]);
  return Number.isSafeInteger(rupiah) ? rupiah : null;
}

// ---------------------------------------------------------------- time

const JAKARTA_OFFSET_MS = 7 * 3600_000;

/** `2024-01-01 10:00:00 +0700`: custom_expiry.order_time. */
export const jakartaOrderTime = (at: Date) => `${new Date(at.getTime() + JAKARTA_OFFSET_MS).toISOString().slice(0, 19).replace('T', ' ')} +0700`;

/** Core's `YYYY-MM-DD HH:mm:ss`, Jakarta time without an offset; null when not that. */
export function parseJakartaTime(value: unknown): Date | null {
  if (typeof value !== 'string' || !/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/.test(value)) return null;
  const at = new Date(`${value.replace(' ', 'T')}+07:00`);
  return Number.isNaN(at.getTime()) ? null : at;
}

// ---------------------------------------------------------------- Core answers

/**
 * What a Core answer means. Midtrans often answers HTTP 200 with the real code in the body's
 * status_code, so the body decides when it has one:
 * - success: 200/201/202 (and 407, the status of an expired transaction);
 * - not_found: status_code "404" in a Midtrans body (a bare HTTP 404 may be a wrong base URL);
 * - duplicate: 406, the order_id is taken;
 * - refused: any other 4xx, 429 included (Midtrans did nothing);
 * - unknown: 5xx, or no readable body.
 */
export type CoreVerdict =
  | { kind: 'success'; code: number; body: Record<string, unknown> }
  | { kind: 'not_found'; reason: string }
  | { kind: 'duplicate'; reason: string }
  | { kind: 'refused'; code: number; reason: string }
  | { kind: 'unknown'; reason: string };

export function coreVerdict(http: number, body: unknown): CoreVerdict {
  const record = isRecord(body) ? body : null;
  const said = record && typeof record.status_message === 'string' ? ` ${record.status_message.slice(0, 150)}` : '';
  const raw = record?.status_code;
  const code = typeof raw === 'string' && /^\d{3}$/.test(raw) ? Number(raw) : typeof raw === 'number' && Number.isInteger(raw) ? raw : null;
  const reason = `HTTP ${http}${code !== null ? ` status_code ${code}` : ''}${said}`;
  if (http >= 500 || (code !== null && code >= 500)) return { kind: 'unknown', reason };
  if (http === 429 || code === 429) return { kind: 'refused', code: 429, reason: `rate limited: ${reason}` };
  if (code === null) {
    if (http >= 400 && http < 500 && http !== 404) return { kind: 'refused', code: http, reason };
    return { kind: 'unknown', reason: `unreadable answer: ${reason}` };
  }
  if (http >= 300 && http < 400) return { kind: 'unknown', reason: `unexpected ${reason}` };
  if (code === 200 || code === 201 || code === 202 || code === 407) return http < 300 ? { kind: 'success', code, body: record! } : { kind: 'unknown', reason: `contradictory ${reason}` };
  if (code === 404) return { kind: 'not_found', reason };
  if (code === 406) return { kind: 'duplicate', reason };
  if (code >= 400 && code < 500) return { kind: 'refused', code, reason };
  return { kind: 'unknown', reason: `unexpected ${reason}` };
}

// ---------------------------------------------------------------- QRIS

/** The credential's acquirer (`airpay-shopee` on the command line) as Core spells it. */
export const acquirerOf = (credential: string | undefined) => (credential === 'airpay-shopee' ? 'airpay shopee' : 'gopay');

export function toChargeRequest(input: { reference: string; amount: number; expiresAt: Date | null }, acquirer: string, now: Date = new Date()) {
  if (!Number.isSafeInteger(input.amount) || input.amount < 1) throw new Error(`not a whole-rupiah amount: ${input.amount}`);
  // Seconds from now, at least one: the QR never outlives Kasir's order.
  const seconds = input.expiresAt ? Math.max(1, Math.floor((input.expiresAt.getTime() - now.getTime()) / 1000)) : null;
  return {
    payment_type: 'qris',
    transaction_details: { order_id: input.reference, gross_amount: input.amount },
    qris: { acquirer },
    ...(seconds !== null ? { custom_expiry: { order_time: jakartaOrderTime(now), expiry_duration: seconds, unit: 'second' } } : {}),
  };
}

/** The QR string of a charge answer for our order_id; null when garbled. */
export function fromCharge(body: Record<string, unknown>, reference: string): { vendorOrderId: string; qrisString: string } | null {
  const transactionId = text(body.transaction_id);
  const qrString = text(body.qr_string);
  if (!transactionId || !qrString || body.order_id !== reference) return null;
  if (body.gross_amount !== undefined && fromMidtransAmount(body.gross_amount) === null) return null;
  return { vendorOrderId: transactionId, qrisString: qrString };
}

// transaction_status → Kasir's view of the QR. Anything unlisted is still in progress.
const QR_STATUS = new Map<string, QrisStatus['status']>([
  ['pending', 'PENDING'],
  ['settlement', 'PAID'],
  ['capture', 'PAID'],
  // Refunds and chargebacks come after a payment: the QR was paid.
  ['refund', 'PAID'],
  ['partial_refund', 'PAID'],
  ['chargeback', 'PAID'],
  ['partial_chargeback', 'PAID'],
  // The QR can no longer be paid.
  ['expire', 'EXPIRED'],
  ['cancel', 'EXPIRED'],
  ['deny', 'EXPIRED'],
  ['failure', 'EXPIRED'],
]);
export const toQrisStatus = (theirs: unknown) => QR_STATUS.get(String(theirs)) ?? 'PENDING';

/** A status answer for our order_id; null when garbled (another order, a fractional amount). */
export function fromStatus(body: Record<string, unknown>, reference: string, now: Date = new Date()): QrisStatus | null {
  if (body.order_id !== reference) return null;
  if (fromMidtransAmount(body.gross_amount) === null) return null;
  const status = toQrisStatus(body.transaction_status);
  return {
    status,
    vendorOrderId: text(body.transaction_id),
    qrisString: text(body.qr_string),
    paidAt: status === 'PAID' ? (parseJakartaTime(body.settlement_time) ?? parseJakartaTime(body.transaction_time) ?? now) : null,
    rrn: status === 'PAID' ? (text(body.rrn) ?? text(body.reference_id)) : null,
    amount: status === 'PAID' ? fromMidtransAmount(body.gross_amount) : null,
  };
}

// ---------------------------------------------------------------- refunds

export function toRefundRequest(input: { refundReference: string; amount: number }) {
  return { refund_key: input.refundReference, amount: input.amount, reason: 'Refund requested by the merchant' };
}

export interface ListedRefund {
  refundKey: string;
  vendorRefundId: string;
  amount: number | null;
}

/** The refunds a status answer lists (`refunds[]`), in the order given. */
export function refundsOf(body: Record<string, unknown>): ListedRefund[] {
  if (!Array.isArray(body.refunds)) return [];
  return body.refunds.filter(isRecord).flatMap((r) => {
    const refundKey = text(r.refund_key);
    if (!refundKey) return [];
    const id = r.refund_chargeback_id;
    return [{ refundKey, vendorRefundId: typeof id === 'number' || typeof id === 'string' ? String(id) : refundKey, amount: fromMidtransAmount(r.refund_amount) }];
  });
}

// ---------------------------------------------------------------- notifications

export interface CoreNotification {
  orderId: string;
  statusCode: string;
  grossAmount: string;
  signatureKey: string;
  body: Record<string, unknown>;
}

/** The four signed fields of a Core notification, exactly as sent; null when it is not one. */
export function readNotification(raw: Buffer): CoreNotification | null {
  let body: unknown;
  try {
    body = JSON.parse(raw.toString('utf8'));
  } catch {
    return null;
  }
  if (!isRecord(body)) return null;
  const { order_id: orderId, status_code: statusCode, gross_amount: grossAmount, signature_key: signatureKey } = body;
  if (typeof orderId !== 'string' || typeof statusCode !== 'string' || typeof grossAmount !== 'string' || typeof signatureKey !== 'string') return null;
  return { orderId, statusCode, grossAmount, signatureKey, body };
}

// ---------------------------------------------------------------- Iris

export type IrisStatus = 'queued' | 'approved' | 'processed' | 'completed' | 'failed' | 'rejected';

const PAYOUT_STATUS = new Map<string, DisbursementStatus['status']>([
  ['queued', 'PROCESSING'],
  ['approved', 'PROCESSING'],
  ['processed', 'PROCESSING'],
  ['completed', 'SUCCESS'],
  ['failed', 'FAILED'],
  ['rejected', 'FAILED'],
]);
export const toPayoutStatus = (theirs: unknown) => PAYOUT_STATUS.get(String(theirs)) ?? 'PROCESSING';

/** Iris's failure as Kasir's failure reason: `<error_code> <error_message>` or the status. */
export function irisFailureReason(body: Record<string, unknown>): string {
  const code = text(body.error_code);
  const message = text(body.error_message);
  const said = [code, message].filter(Boolean).join(' ');
  return (said || String(body.status ?? 'failed').toUpperCase()).slice(0, 200);
}

export function toPayoutRequest(input: { reference: string; amount: number; accountNumber: string; accountName: string; irisBank: string }) {
  if (!Number.isSafeInteger(input.amount) || input.amount < 1) throw new Error(`not a whole-rupiah amount: ${input.amount}`);
  return {
    payouts: [
      {
        beneficiary_name: input.accountName.slice(0, 100),
        beneficiary_account: input.accountNumber,
        beneficiary_bank: input.irisBank,
        amount: String(input.amount),
        // Iris assigns reference_no; Kasir's own reference rides in notes, so a notification (which
        // carries reference_no only) is traced back to the payout by reading it.
        notes: input.reference,
      },
    ],
  };
}

/** The reference_no of a create answer; null when garbled. */
export function fromPayoutCreated(body: unknown): string | null {
  if (!isRecord(body) || !Array.isArray(body.payouts) || body.payouts.length !== 1 || !isRecord(body.payouts[0])) return null;
  return text(body.payouts[0].reference_no);
}

/** Iris's error body in a line: `error_message` and the field errors. */
export function irisErrorOf(http: number, body: unknown): string {
  const record = isRecord(body) ? body : {};
  const message = text(record.error_message) ?? '';
  const errors = record.errors === undefined ? '' : ` ${JSON.stringify(record.errors).slice(0, 200)}`;
  return `HTTP ${http}${message ? ` ${message.slice(0, 150)}` : ''}${errors}`;
}

/** An account validation error that means "no such account" (errors.account), else null. */
export function accountRefusal(body: unknown): string | null {
  if (!isRecord(body) || !isRecord(body.errors)) return null;
  const account = body.errors.account;
  if (Array.isArray(account) && account.length > 0) return `INVALID_ACCOUNT: ${String(account[0]).slice(0, 150)}`;
  return null;
}

/** Account numbers in logs: the last four digits only. */
export const lastFour = (accountNumber: string) => `***${accountNumber.slice(-4)}`;
