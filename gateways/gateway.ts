// What Kasir asks of an upstream payment gateway ("vendor"), whatever its wire protocol.
//
// Every call answers with an Outcome, and callers decide failover on it:
//   ok      — the vendor did it; value holds what it said.
//   failed  — the vendor surely did nothing (connection refused before sending, 4xx, explicit
//             rejection). Safe to try the next vendor.
//   unknown — the request may have been acted on (timeout after sending, 5xx, garbled answer).
//             Never retried elsewhere: the caller reconciles by querying this same vendor.

export type Outcome<T> =
  | { kind: 'ok'; value: T }
  | { kind: 'failed'; reason: string }
  | { kind: 'unknown'; reason: string };

export type { VendorRecord } from '../db/vendors.ts';

export interface CreateQrisInput {
  /** Kasir's order ref_code; the vendor echoes it as the bill number and in callbacks. */
  reference: string;
  amount: number;
  expiresAt: Date | null;
  merchantName: string;
  merchantCity: string;
  /** Where the vendor posts payment callbacks for this order. */
  callbackUrl: string;
}

export interface QrisCreated {
  vendorOrderId: string;
  qrisString: string;
}

export interface QrisStatus {
  /** NOT_FOUND: the vendor never accepted this reference (so a create that timed out did nothing). */
  status: 'PENDING' | 'PAID' | 'EXPIRED' | 'NOT_FOUND';
  vendorOrderId: string | null;
  qrisString: string | null;
  paidAt: Date | null;
  rrn: string | null;
}

export interface RefundInput {
  reference: string;
  vendorOrderId: string;
  refundReference: string;
  amount: number;
}

export interface RefundResult {
  vendorRefundId: string;
  status: 'SUCCEEDED' | 'PENDING' | 'FAILED';
}

export interface DisburseInput {
  reference: string;
  channel: 'BANK' | 'EWALLET';
  bankCode: string | null;
  ewalletCode: string | null;
  accountNumber: string;
  accountName: string | null;
  amount: number;
  callbackUrl: string;
}

export interface DisbursementStatus {
  status: 'PROCESSING' | 'SUCCESS' | 'FAILED' | 'NOT_FOUND';
  vendorDisbursementId: string | null;
  failureReason: string | null;
}

export interface AccountInquiryInput {
  channel: 'BANK' | 'EWALLET';
  bankCode: string | null;
  ewalletCode: string | null;
  accountNumber: string;
}

/**
 * The vendor's word on an account: its holder's name, or that no such account can receive
 * money (NOT_FOUND, with the vendor's reason). Not being able to ask is an Outcome, not this.
 */
export type AccountInquiry = { status: 'FOUND'; accountName: string } | { status: 'NOT_FOUND'; reason: string };

/**
 * One movement of money as a vendor reports it for a day (its list or statement, or its answer
 * about one record): what reconciliation compares with Kasir's books (docs/money.md).
 */
export interface VendorLine {
  /** PAYMENT: a payer paid a QR; PAYOUT: money sent to an account; REFUND: money returned to a payer. */
  kind: 'PAYMENT' | 'PAYOUT' | 'REFUND';
  /** Kasir's reference the line carries: the order's ref_code, the payout reference, the refund's ref_code. */
  reference: string | null;
  /** The vendor's own id of what moved (its payment, payout or refund id), when it gives one. */
  vendorId: string | null;
  /** For a refund that names only the payment it returns: that order's ref_code. */
  orderReference?: string | null;
  /** Whole rupiah, before the vendor's fee. */
  amount: number;
  /** SUCCESS: the money moved; FAILED: it did not, or came back; PENDING: not final yet. */
  status: 'SUCCESS' | 'PENDING' | 'FAILED';
  /** When the vendor says it happened. */
  at: Date;
  /** The vendor's fee on this line, in whole rupiah, when it reports one. */
  fee: number | null;
}

/** A record Kasir sent a vendor, for vendors that can only be read record by record. */
export interface SentRecord {
  kind: 'PAYMENT' | 'PAYOUT' | 'REFUND';
  /** Kasir's reference, as sent. */
  reference: string;
  /** The vendor's id for it, when Kasir holds one. */
  vendorId: string | null;
  /** A refund's order: its ref_code and the vendor's id for the payment. */
  orderReference?: string;
  orderVendorId?: string | null;
}

/** The day a reconciliation asks a vendor about. */
export interface ReportDay {
  /** The WIB calendar day, YYYY-MM-DD. */
  date: string;
  /** The instants to read: the day, widened by a margin (lines in the margin only complete matches). */
  from: Date;
  to: Date;
  /** What Kasir sent this vendor around that day; read only by vendors without a list. */
  sent(): Promise<readonly SentRecord[]>;
}

/** A vendor's report of a day: how it was read ('list', 'statement', 'records', or a mix) and its lines. */
export interface VendorReport {
  source: string;
  lines: AsyncIterable<VendorLine>;
}

/** The vendor could not be read for the day (unreachable, refused, garbled): the run fails with this. */
export class ReportUnavailable extends Error {
  override name = 'ReportUnavailable';
}

/** A verified vendor callback, translated into Kasir's terms. */
export type CallbackEvent =
  | { type: 'qris.paid'; eventId: string; reference: string; vendorOrderId: string; amount: number; paidAt: Date; rrn: string }
  | { type: 'disbursement.updated'; eventId: string; reference: string; vendorDisbursementId: string; status: 'SUCCESS' | 'FAILED'; failureReason: string | null }
  /**
   * A refund's final word; `reference` is Kasir's refund ref_code (RFD-…). `orderReference`: the
   * order the vendor reports it under, when it names one (Midtrans): a refund of another order
   * is not applied.
   */
  | { type: 'refund.updated'; eventId: string; reference: string; vendorRefundId: string; status: 'SUCCEEDED' | 'FAILED'; failureReason: string | null; orderReference?: string }
  /**
   * Authentic, but nothing for Kasir to do (a refund still pending, an event it does not act
   * on): recorded and acknowledged, so the vendor stops retrying it.
   */
  | { type: 'noted'; eventId: string; reference: string; what: string }
  /**
   * Authentic, but Kasir cannot act on it now because the vendor cannot be read (the status
   * re-read failed): not recorded, answered 503 so the vendor sends it again, and never
   * counted as a failed authentication. `eventId` and `reference` are for logs.
   */
  | { type: 'retry_later'; eventId: string; reference: string; reason: string };

/** What Kasir made of a callback, for vendors that prescribe the answer (answerCallback). */
export type CallbackAnswer = 'accepted' | 'duplicate' | 'bad_signature' | 'unknown_reference' | 'amount_mismatch' | 'invalid_body';

export interface Gateway {
  createQris(input: CreateQrisInput): Promise<Outcome<QrisCreated>>;
  /**
   * What became of an order's QR. `vendorOrderId` is the vendor's id for it when Kasir has one;
   * a vendor that cannot look a QR up by Kasir's reference (Xendit) decides without it by its
   * stated rule (docs/vendors/).
   */
  queryQris(reference: string, vendorOrderId?: string | null): Promise<Outcome<QrisStatus>>;
  refund(input: RefundInput): Promise<Outcome<RefundResult>>;
  disburse(input: DisburseInput): Promise<Outcome<{ vendorDisbursementId: string }>>;
  /** `vendorDisbursementId`: the vendor's id when Kasir has one (Iris finds payouts by it only). */
  queryDisbursement(reference: string, vendorDisbursementId?: string | null): Promise<Outcome<DisbursementStatus>>;
  inquireAccount(input: AccountInquiryInput): Promise<Outcome<AccountInquiry>>;
  /**
   * Authenticates and parses a callback. Returns null when the signature is missing or wrong
   * or the body is not a callback this vendor sends. Async because some vendors' callbacks
   * are only trusted after re-reading the resource from the vendor (Midtrans), and such a
   * vendor answers `retry_later` when the re-read fails.
   */
  parseCallback(headers: Record<string, string | string[] | undefined>, rawBody: Buffer, path?: string): Promise<CallbackEvent | null>;
  /**
   * The HTTP answer this vendor expects to a callback, when it prescribes one (SNAP's
   * responseCode bodies). `path` is the part of the URL after /callbacks/<code> ('' for none);
   * `result` is what Kasir made of it. Without this method, Kasir answers 200 with its own body.
   */
  answerCallback?(path: string, result: CallbackAnswer): { status: number; body: unknown };
  /**
   * A request from the vendor under /callbacks/<code> that is not a callback and that Kasir
   * answers on its own (a SNAP provider asking Kasir for the token it signs notifies with).
   * Null when `path` is a callback path.
   */
  answerRequest?(path: string, headers: Record<string, string | string[] | undefined>, rawBody: Buffer): { status: number; body: unknown } | null;
  /**
   * One authenticated call that changes nothing at the vendor (`ops vendor:check`): ok with a
   * line saying what was checked, or failed/unknown saying why not (bad key, unreachable, ...).
   */
  check(): Promise<Outcome<string>>;
  /**
   * What the vendor reports for a day, line by line, read with Kasir's credentials: its list or
   * statement where it has one, else each record Kasir sent it. Throws (or its lines throw)
   * ReportUnavailable when the vendor cannot be read.
   */
  reportDay?(day: ReportDay): Promise<VendorReport>;
}
