// The simulator's state: plain Maps in memory. A restart forgets every QR, refund and
// disbursement (queries then answer 404 / NOT_FOUND), which is acceptable for a sandbox and is
// itself a case Kasir's reconciliation must survive.
import { randomBytes, randomInt } from 'node:crypto';
import type { Fault } from './faults.ts';

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
  /**
   * Set by the vendor dialect that created the QR (docs/simulator.md): sends that vendor's own
   * payment callback once the QR is paid. Without it the native callback goes out.
   */
  notifyPaid?: (qr: QrRecord, callbackFault: Fault | null) => void;
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
  /** Set by the vendor dialect that accepted the payout: sends its own final-status callback. */
  notifySettled?: (d: DisbursementRecord, callbackFault: Fault | null) => void;
}

export function createStore() {
  return {
    /** By Kasir's reference, the idempotency key of a create. */
    qrs: new Map<string, QrRecord>(),
    /** By refund_reference. */
    refunds: new Map<string, RefundRecord>(),
    /** By Kasir's reference. */
    disbursements: new Map<string, DisbursementRecord>(),
  };
}

export type Store = ReturnType<typeof createStore>;

export const newId = (prefix: string) => `${prefix}_${randomBytes(8).toString('hex')}`;

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
