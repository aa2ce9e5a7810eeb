// The simulator's shared records: Maps in memory, each change also put in the journal
// (journal.ts), so with SIMULATOR_STATE_FILE set a restart finds them again as a real gateway's
// database would. Records are changed in place and saved in the step that changes them; the
// journal serializes them when the step's changes are written (before its answer leaves).
import { randomBytes, randomInt } from 'node:crypto';
import { z } from 'zod';
import type { Journal } from './journal.ts';

/** The vendor dialects (dialects/*.ts); a record made by one gets its callbacks from it. */
export type DialectName = 'xendit' | 'midtrans' | 'iris' | 'snap';
export type Origin = 'native' | DialectName;
const origin = z.enum(['native', 'xendit', 'midtrans', 'iris', 'snap']);

export interface QrRecord {
  id: string;
  reference: string;
  amount: number;
  qrisString: string;
  expiresAt: Date | null;
  callbackUrl: string;
  createdAt: Date;
  paidAt: Date | null;
  rrn: string | null;
  refunded: number;
  /** Who created it: a dialect sends its own payment callback (docs/simulator.md), native the native one. */
  dialect: Origin;
}

export interface RefundRecord {
  id: string;
  refundReference: string;
  reference: string;
  amount: number;
  createdAt: Date;
}

export interface DisbursementRecord {
  id: string;
  reference: string;
  channel: 'BANK' | 'EWALLET';
  bankCode: string | null;
  ewalletCode: string | null;
  accountNumber: string;
  accountName: string | null;
  amount: number;
  callbackUrl: string;
  status: 'PROCESSING' | 'SUCCESS' | 'FAILED';
  failureReason: string | null;
  createdAt: Date;
  updatedAt: Date;
  /** Who accepted it: a dialect sends its own final-status callback, native the native one. */
  dialect: Origin;
}

const date = z.coerce.date();
const qrSchema = z.object({
  id: z.string(),
  reference: z.string(),
  amount: z.number().int(),
  qrisString: z.string(),
  expiresAt: date.nullable(),
  callbackUrl: z.string(),
  createdAt: date,
  paidAt: date.nullable(),
  rrn: z.string().nullable(),
  refunded: z.number().int(),
  dialect: origin,
});
export const refundSchema = z.object({ id: z.string(), refundReference: z.string(), reference: z.string(), amount: z.number().int(), createdAt: date });
const disbursementSchema = z.object({
  id: z.string(),
  reference: z.string(),
  channel: z.enum(['BANK', 'EWALLET']),
  bankCode: z.string().nullable(),
  ewalletCode: z.string().nullable(),
  accountNumber: z.string(),
  accountName: z.string().nullable(),
  amount: z.number().int(),
  callbackUrl: z.string(),
  status: z.enum(['PROCESSING', 'SUCCESS', 'FAILED']),
  failureReason: z.string().nullable(),
  createdAt: date,
  updatedAt: date,
  dialect: origin,
});

/** The records the journal holds, loaded again; changes go through the save functions. */
export function createStore(journal: Journal) {
  /** By Kasir's reference, the idempotency key of a create. */
  const qrs = new Map<string, QrRecord>(journal.loaded('qr', qrSchema));
  /** By refund_reference. */
  const refunds = new Map<string, RefundRecord>(journal.loaded('refund', refundSchema));
  /** By Kasir's reference. */
  const disbursements = new Map<string, DisbursementRecord>(journal.loaded('disbursement', disbursementSchema));
  return {
    qrs,
    refunds,
    disbursements,
    saveQr(qr: QrRecord) {
      qrs.set(qr.reference, qr);
      journal.put('qr', qr.reference, qr);
    },
    saveRefund(refund: RefundRecord) {
      refunds.set(refund.refundReference, refund);
      journal.put('refund', refund.refundReference, refund);
    },
    /** A further refund under a reference already used (a vendor that refunded twice), kept under a key of its own. */
    saveRefundCopy(key: string, refund: RefundRecord) {
      refunds.set(key, refund);
      journal.put('refund', key, refund);
    },
    saveDisbursement(d: DisbursementRecord) {
      disbursements.set(d.reference, d);
      journal.put('disbursement', d.reference, d);
    },
  };
}

export type Store = ReturnType<typeof createStore>;

// Ids are cut from a pool of random bytes, 512 ids at a time: randomBytes(8) per id was a system
// call per created QR (4 % of the simulator's busy time in a profile of the orders bench). Kasir's
// reference codes do the same in db/ref-codes.ts; the simulator's side imports nothing of Kasir's
// (.dependency-cruiser.cjs), so it keeps its own few lines.
let idBytes = Buffer.alloc(0);
let idAt = 0;
export function newId(prefix: string): string {
  if (idAt + 8 > idBytes.length) {
    idBytes = randomBytes(4096);
    idAt = 0;
  }
  idAt += 8;
  return `${prefix}_${idBytes.toString('hex', idAt - 8, idAt)}`;
}

/** Retrieval reference number: 12 digits, as ISO 8583 switches assign them. */
export const newRrn = () => String(randomInt(0, 1e12)).padStart(12, '0');

/** Expiry is evaluated when read, so no sweeper is needed. */
export function qrStatus(qr: QrRecord, now = new Date()): 'PENDING' | 'PAID' | 'EXPIRED' {
  if (qr.paidAt) return 'PAID';
  if (qr.expiresAt && qr.expiresAt <= now) return 'EXPIRED';
  return 'PENDING';
}

export const qrJson = (qr: QrRecord) => ({
  id: qr.id,
  reference: qr.reference,
  status: qrStatus(qr),
  amount: qr.amount,
  qris_string: qr.qrisString,
  expires_at: qr.expiresAt?.toISOString() ?? null,
  created_at: qr.createdAt.toISOString(),
  paid_at: qr.paidAt?.toISOString() ?? null,
  rrn: qr.rrn,
  refunded_amount: qr.refunded,
});

export const refundJson = (refund: RefundRecord) => ({
  id: refund.id,
  refund_reference: refund.refundReference,
  reference: refund.reference,
  amount: refund.amount,
  status: 'SUCCEEDED',
  created_at: refund.createdAt.toISOString(),
});

export const disbursementJson = (d: DisbursementRecord) => ({
  id: d.id,
  reference: d.reference,
  status: d.status,
  failure_reason: d.failureReason,
  channel: d.channel,
  bank_code: d.bankCode,
  ewallet_code: d.ewalletCode,
  account_number: d.accountNumber,
  amount: d.amount,
  created_at: d.createdAt.toISOString(),
  updated_at: d.updatedAt.toISOString(),
});
