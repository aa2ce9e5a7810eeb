// What Kasir asks of an upstream payment gateway ("vendor"), whatever its wire protocol.
//
// Every call answers with an Outcome, and callers decide failover on it:
//   ok      — the vendor did it; value holds what it said.
//   failed  — the vendor surely did nothing (connection refused before sending, 4xx, explicit
//             rejection). Safe to try the next vendor.
//   unknown — the request may have been acted on (timeout after sending, 5xx, garbled answer).
//             Never retried elsewhere: the caller reconciles by querying this same vendor.
//
// THE RULE ON UNCLEAR ANSWERS: an unclear answer never becomes a second payment.
// - A payout or refund whose send has an unknown outcome is never sent to another vendor, and
//   never sent again to the same one, until a read at that vendor proves it does not have it
//   (queryDisbursement or queryRefund answering NOT_FOUND). Nothing else proves absence: not a
//   refusal of the second send, not a list that cannot show Kasir's reference.
// - Each connector keeps the vendor's own id from the first answer (vendorDisbursementId,
//   vendorRefundId; the workers store it) and reads by it. A read by an id the vendor gave
//   never answers NOT_FOUND: the vendor made it.
// - Where the vendor offers no read that can prove either way, the connector answers unknown
//   with `unresolvable`: the worker stops, the record waits in a state operators see
//   (unresolved_at; kasir_rows_in_state{status="UNRESOLVED"} and its alert) and an operator
//   settles it with the vendor's evidence (ops unresolved:list, refunds:settle, refunds:resend,
//   payouts:settle). docs/vendors/*.md say, per vendor, which reads prove what.

export type Outcome<T> =
  | { kind: 'ok'; value: T }
  /**
   * `payoutRefusal`: the payout itself is refused, whichever vendor would be asked (the bank
   * names another account holder and the request did not accept that): it fails with this code
   * instead of going to the next vendor.
   */
  | { kind: 'failed'; reason: string; payoutRefusal?: 'ACCOUNT_NAME_MISMATCH' }
  /** `unresolvable`: no read at this vendor can tell what became of it; an operator must. */
  | { kind: 'unknown'; reason: string; unresolvable?: true };

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
  /**
   * What the vendor's own record of this QR shows paid, in whole rupiah (null unless PAID, or
   * when the read names no amount). Kasir credits a payment it learns by reading only when this
   * equals the order's amount: a read that shows PAID without it confirms nothing.
   */
  amount: number | null;
}

export interface RefundInput {
  reference: string;
  vendorOrderId: string;
  refundReference: string;
  amount: number;
  /**
   * True when Kasir sent this refund before and a read proved nothing of it: a refusal of this
   * send may be about the first one, still in flight, so it is never "failed".
   */
  resent?: boolean;
}

export interface RefundResult {
  vendorRefundId: string;
  status: 'SUCCEEDED' | 'PENDING' | 'FAILED';
}

/** A refund Kasir sent before: what it knows of that send. */
export interface RefundQuery extends RefundInput {
  /** The vendor's id from an earlier answer; null when no answer was ever read. */
  vendorRefundId: string | null;
  /** When Kasir first sent it. */
  firstSentAt: Date;
}

export interface RefundStatus {
  /** NOT_FOUND: the vendor proves it never took this refund, so it may be sent again. */
  status: 'SUCCEEDED' | 'PENDING' | 'FAILED' | 'NOT_FOUND';
  vendorRefundId: string | null;
  failureReason: string | null;
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
  /**
   * Pay even if the vendor's account inquiry names another holder than accountName; otherwise
   * every connector whose vendor can inquire refuses the payout with payoutRefusal
   * ACCOUNT_NAME_MISMATCH (the name rule, gateways/name-rule.ts).
   */
  acceptNameMismatch?: boolean;
}

/** A payout the vendor took: its own id for it, which every later read goes by. */
export interface PayoutAccepted {
  vendorDisbursementId: string;
}

export interface DisbursementStatus {
  status: 'PROCESSING' | 'SUCCESS' | 'FAILED' | 'NOT_FOUND';
  vendorDisbursementId: string | null;
  failureReason: string | null;
  /**
   * FAILED only: the payout had succeeded and the vendor reversed it (the bank returned the
   * transfer, and the money is back in the platform's vendor balance: Xendit's REVERSED). For a
   * payout still in flight at Kasir that is FAILED like any other; one Kasir completed is
   * returned to the merchant (db/disbursements.ts returnDisbursement).
   */
  reversed?: true;
}

export interface AccountInquiryInput {
  channel: 'BANK' | 'EWALLET';
  bankCode: string | null;
  ewalletCode: string | null;
  accountNumber: string;
  /**
   * The holder's name as the merchant entered it, for a vendor whose inquiry carries one (the
   * simulator's native API); Iris's and SNAP's inquiries carry none and ignore it. Whatever
   * the vendor answers is compared by the name rule (gateways/name-rule.ts), never trusted.
   */
  accountName?: string | null;
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
  /**
   * True when the vendor reports only what reached the account, net of a fee it does not state:
   * `amount` is that net, and reconciliation adds the fee Kasir assumes for the vendor.
   */
  netOfUnstatedFee?: boolean;
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

/**
 * A verified vendor callback, translated into Kasir's terms. `reference` is Kasir's ref_code, or
 * '' when the vendor names the order by its own id only (`vendorOrderId`; SNAP notifies without
 * originalPartnerReferenceNo): the order is then the one holding that id.
 */
export type CallbackEvent =
  /** `rrn`: the payment's retrieval reference number, null when the vendor gives none. */
  | { type: 'qris.paid'; eventId: string; reference: string; vendorOrderId: string; amount: number; paidAt: Date; rrn: string | null }
  /**
   * The vendor says an order's QR can no longer be paid (SNAP notifies 05 canceled, 06 failed,
   * 08 expired, 09 rejected): a PENDING order expires; any other state is left as it is.
   */
  | { type: 'qris.closed'; eventId: string; reference: string; vendorOrderId: string; status: 'CANCELLED' | 'FAILED' | 'EXPIRED' | 'REJECTED'; what: string }
  | { type: 'disbursement.updated'; eventId: string; reference: string; vendorDisbursementId: string; status: 'SUCCESS' | 'FAILED'; failureReason: string | null }
  /**
   * The vendor says a payout that succeeded was reversed (Xendit's payout.reversed). Only a hint:
   * Kasir reads the payout at the vendor and returns the money only when that read shows it
   * reversed (api/payment-hints.ts confirmReversalHint).
   */
  | { type: 'disbursement.reversed'; eventId: string; reference: string; vendorDisbursementId: string; failureReason: string }
  /**
   * A refund's final word; `reference` is Kasir's refund ref_code (RFD-…), or '' when the vendor
   * does not echo it (Xendit): then the refund is the one its vendor gave `vendorRefundId`.
   * `orderReference`: the order the vendor reports it under, when it names one (Midtrans): a
   * refund of another order is not applied.
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
  /** Sends a refund. Called once per refund, and again only after queryRefund said NOT_FOUND. */
  refund(input: RefundInput): Promise<Outcome<RefundResult>>;
  /** What became of a refund sent before (the rule above: the only way to a second send). */
  queryRefund(input: RefundQuery): Promise<Outcome<RefundStatus>>;
  disburse(input: DisburseInput): Promise<Outcome<PayoutAccepted>>;
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
   * True when this vendor's payment callbacks are authenticated by a secret the account holder
   * can read too (Xendit's static callback token, a shared HMAC secret), not by a signature over
   * the body with a key only the vendor holds. Such a `qris.paid` is only a hint: Kasir reads
   * the order's own QR (queryQris with the vendor id stored at creation) and credits what that
   * read shows (api/payment-hints.ts). Vendors whose parseCallback already answers from its own
   * read (Midtrans) or whose notifies are signed asymmetrically (SNAP RSA) leave it unset.
   */
  paymentCallbacksAreHints?: boolean;
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
