// Kasir's adapter for Midtrans: QRIS through the Core API (charge, status, refund, payment
// notifications) and payouts through Iris (create with the creator key, approve with the
// approver key, notifications signed with the merchant key). docs/vendors/midtrans.md says what
// an operator configures and how sure each fact is. Split like every adapter: the client
// (midtrans-client.ts), pure transforms (midtrans-transforms.ts) and, here, the outcomes.
//
// Classification (Midtrans answers HTTP 200 with its code in status_code: the body decides):
// - ok on 200/201/202 for our order_id; failed on a 4xx (429 included: nothing was done);
//   unknown on 5xx, timeouts after sending and garbled answers (a fractional amount included).
// Unknown outcomes, per operation:
// - charge: the status of our order_id answers it (404: never created → the attempt fails).
// - refund: refund_key is Kasir's refund reference, sent also as the documented Idempotency-Key
//   header, and the same refund_key is the same refund at Midtrans. queryRefund reads the
//   order's status, whose refunds[] carry their refund_key: listed is done; not listed is
//   NOT_FOUND. An in-flight refund is not listed yet, so a re-send may be refused (406 key used,
//   412 exceeds the refundable amount) because of the first: such a refusal is never failed; the
//   status decides, and when it does not list the refund, an operator (unresolvable).
// - payout: the create carries X-Idempotency-Key = Kasir's reference (documented for Payouts:
//   the same key re-sent after a timeout answers the first result). A create can answer
//   `processed` or `completed` (accounts that approve on their own), so a create without a
//   readable answer may pay: it is re-sent once with the same key to recover its reference_no,
//   and when that does not answer either, the payout is unresolvable (Iris reads payouts by
//   reference_no only): an operator settles it, and it is never sent to another vendor. Once
//   created `queued`, disburse never answers unknown: an approval refused or unanswered is
//   settled by reading the payout (approved → ok; still queued → rejected, then failed; not
//   readable → ok with its reference_no, and Iris's final notification decides).
// - notifications are trusted only with a valid signature, then (like the official SDKs) the
//   payment's status, or the Iris payout, is re-read, and only what the re-read says is acted
//   on; a re-read that fails is answered 503 (retry_later) so the notification comes again.
//   Authentic notifications Kasir does not act on (pending, expire, Iris's approved...) are
//   `noted`: recorded and acknowledged, or Midtrans would keep retrying them and mail the merchant.
import type {
  AccountInquiry,
  AccountInquiryInput,
  CallbackEvent,
  DisburseInput,
  DisbursementStatus,
  Gateway,
  Outcome,
  PayoutAccepted,
  QrisCreated,
  QrisStatus,
  RefundInput,
  RefundResult,
  RefundStatus,
  VendorRecord,
} from '../gateway.ts';
import { ReportUnavailable } from '../gateway.ts';
import { IRIS_BANKS, irisBankOf } from './iris-banks.ts';
import { logger } from '../../db/logger.ts';
import { createMidtransClient, midtransCredentials, type MidtransAnswer } from './client.ts';
import {
  accountRefusal,
  acquirerOf,
  coreVerdict,
  fromCharge,
  fromMidtransAmount,
  fromPayoutCreated,
  fromStatus,
  irisErrorOf,
  irisFailureReason,
  irisSignature,
  lastFour,
  notificationSignature,
  parseJakartaTime,
  readNotification,
  refundsOf,
  sameHex,
  text,
  toChargeRequest,
  toPayoutRequest,
  toPayoutStatus,
  toRefundRequest,
  type CoreVerdict,
} from './transforms.ts';
import { validateVendorQris } from '../qris.ts';
import { midtransReport, probeStatement } from './report.ts';
import { holderRefusal } from '../name-rule.ts';
import { failed, headerOf, ok, PAYOUT_NOT_FOUND, QR_NOT_FOUND, unknown, unresolvable } from '../results.ts';

/** Below the API's default 10 s wait for a create, so a timeout still leaves time to answer. */
const DEFAULT_TIMEOUT_MS = 5000;


const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);


/** The Gateway, with the payout query taking Iris's reference_no when Kasir has it. */
export interface MidtransGateway extends Gateway {
  queryDisbursement(reference: string, vendorDisbursementId?: string | null): Promise<Outcome<DisbursementStatus>>;
}

export function createMidtransGateway(vendor: VendorRecord, options: { timeoutMs?: number } = {}): MidtransGateway {
  const creds = midtransCredentials(vendor);
  const client = createMidtransClient(vendor, creds, options.timeoutMs ?? DEFAULT_TIMEOUT_MS);
  const log = logger.child({ vendor: vendor.code });
  const acquirer = acquirerOf(creds.qrisAcquirer);

  async function core(method: 'GET' | 'POST', path: string, payload?: object, headers?: Record<string, string>): Promise<Outcome<CoreVerdict>> {
    const answer = await client.core(method, path, payload, headers);
    return answer.kind === 'ok' ? ok(coreVerdict(answer.value.status, answer.value.body)) : answer;
  }

  const statusPath = (orderId: string) => `/v2/${encodeURIComponent(orderId)}/status`;

  /** The status of our order_id: the body too, for refunds and notifications. */
  async function readStatus(reference: string): Promise<Outcome<{ status: QrisStatus; body: Record<string, unknown> | null }>> {
    const asked = await core('GET', statusPath(reference));
    if (asked.kind !== 'ok') return asked;
    const v = asked.value;
    if (v.kind === 'not_found') return ok({ status: QR_NOT_FOUND, body: null });
    if (v.kind === 'success') {
      const status = fromStatus(v.body, reference);
      return status ? ok({ status, body: v.body }) : unknown(`unreadable status answer for ${reference}`);
    }
    return v.kind === 'refused' || v.kind === 'duplicate' ? failed(v.reason) : unknown(v.reason);
  }

  /** The refund the order's status lists under our refund_key, NOT_FOUND when none is listed. */
  async function listedRefund(query: { reference: string; refundReference: string; amount: number }): Promise<Outcome<RefundStatus>> {
    const read = await readStatus(query.reference);
    if (read.kind !== 'ok') return read;
    const listed = read.value.body ? refundsOf(read.value.body).find((r) => r.refundKey === query.refundReference) : undefined;
    if (!listed) return ok({ status: 'NOT_FOUND', vendorRefundId: null, failureReason: null });
    if (listed.amount !== null && listed.amount !== query.amount) return unknown(`refund_key ${query.refundReference} is listed with another amount: ${listed.amount}`);
    return ok({ status: 'SUCCEEDED', vendorRefundId: listed.vendorRefundId, failureReason: null });
  }

  /**
   * A refusal that may be about a refund Midtrans already holds: listed, it is that refund;
   * not listed, it may still be in flight, and Midtrans has no read of an in-flight refund:
   * unresolvable, the refund waits for an operator (ops refunds:settle) or Midtrans's notification.
   */
  async function settleRefusedRefund(input: RefundInput, why: string): Promise<Outcome<RefundResult>> {
    const read = await listedRefund(input);
    if (read.kind !== 'ok') return unknown(`${why}; the status after it: ${read.reason}`);
    if (read.value.status === 'SUCCEEDED') return ok({ vendorRefundId: read.value.vendorRefundId ?? input.refundReference, status: 'SUCCEEDED' });
    log.warn({ refund: input.refundReference, why }, 'Midtrans refused a refund re-send and lists no refund under its key: waiting for an operator');
    return unresolvable(`Midtrans refused ${input.refundReference} (${why}) yet its status lists no refund under that key: it may be in flight; only the Midtrans dashboard can tell`);
  }

  // ---------------------------------------------------------------- Iris

  /** An Iris answer: 2xx with a JSON object, a definite 4xx, or unknown. */
  function irisVerdict(answer: MidtransAnswer): { kind: 'success'; body: Record<string, unknown> } | { kind: 'refused'; http: number; body: unknown; reason: string } | { kind: 'unknown'; reason: string } {
    const reason = irisErrorOf(answer.status, answer.body);
    if (answer.status >= 200 && answer.status < 300) return isRecord(answer.body) ? { kind: 'success', body: answer.body } : { kind: 'unknown', reason: `unreadable answer: ${reason}` };
    if (answer.status === 429) return { kind: 'refused', http: 429, body: answer.body, reason: `rate limited: ${reason}` };
    if (answer.status >= 400 && answer.status < 500 && answer.status !== 404) return { kind: 'refused', http: answer.status, body: answer.body, reason };
    if (answer.status === 404 && isRecord(answer.body) && text(answer.body.error_message)) return { kind: 'refused', http: 404, body: answer.body, reason };
    return { kind: 'unknown', reason };
  }

  async function readPayout(referenceNo: string, reference: string | null): Promise<Outcome<DisbursementStatus & { body: Record<string, unknown> | null }>> {
    const answer = await client.iris('creator', 'GET', `/payouts/${encodeURIComponent(referenceNo)}`);
    if (answer.kind !== 'ok') return answer;
    const v = irisVerdict(answer.value);
    if (v.kind === 'refused' && v.http === 404) return ok({ ...PAYOUT_NOT_FOUND, body: null });
    if (v.kind === 'refused') return failed(v.reason);
    if (v.kind === 'unknown') return unknown(v.reason);
    const body = v.body;
    if (body.reference_no !== undefined && body.reference_no !== referenceNo) return unknown(`payout answer for another reference_no: ${String(body.reference_no)}`);
    if (reference !== null && text(body.notes) !== null && body.notes !== reference) return unknown(`payout ${referenceNo} carries notes ${String(body.notes)}, not ${reference}`);
    if (body.amount !== undefined && fromMidtransAmount(body.amount) === null) return unknown(`payout ${referenceNo} with an unreadable amount ${JSON.stringify(body.amount)}`);
    const status = toPayoutStatus(body.status);
    return ok({ status, vendorDisbursementId: referenceNo, failureReason: status === 'FAILED' ? irisFailureReason(body) : null, body });
  }

  async function inquireAccount(input: AccountInquiryInput): Promise<Outcome<AccountInquiry>> {
    if (!creds.iris) return failed('Iris payouts are not configured for this Midtrans vendor (no Iris keys)');
    if (input.channel !== 'BANK') return failed('e-wallet accounts cannot be checked through Iris by this adapter');
    const bank = irisBankOf(input.bankCode);
    if (!bank) return failed(`bank ${input.bankCode ?? '(none)'} has no Iris code known to the Midtrans adapter`);
    const query = new URLSearchParams({ bank, account: input.accountNumber });
    const answer = await client.iris('creator', 'GET', `/account_validation?${query}`);
    if (answer.kind !== 'ok') return answer;
    const v = irisVerdict(answer.value);
    if (v.kind === 'success') {
      const name = text(v.body.account_name);
      return name ? ok({ status: 'FOUND', accountName: name }) : unknown('account validation answer without account_name');
    }
    if (v.kind === 'refused') {
      const reason = v.http === 429 ? null : accountRefusal(v.body);
      if (reason) log.info({ bank, account: lastFour(input.accountNumber) }, 'Iris says no such account');
      return reason ? ok({ status: 'NOT_FOUND', reason }) : failed(v.reason);
    }
    return unknown(v.reason);
  }

  /**
   * After a create, when the approval was refused or not answered: the payout's own status
   * decides. Never unknown: the payout is known by its reference_no from here on.
   */
  async function settleApproval(referenceNo: string, reference: string, why: string): Promise<Outcome<PayoutAccepted>> {
    const read = await readPayout(referenceNo, reference);
    if (read.kind !== 'ok') {
      log.warn({ reference, referenceNo, why, read: read.reason }, 'Iris approval unsettled; waiting for its notification');
      return ok({ vendorDisbursementId: referenceNo });
    }
    const { status, failureReason, body } = read.value;
    if (status === 'FAILED') return failed(`${why}; payout ${referenceNo}: ${failureReason}`);
    if (status === 'SUCCESS' || (status === 'PROCESSING' && body?.status !== 'queued')) return ok({ vendorDisbursementId: referenceNo });
    if (status === 'NOT_FOUND') return ok({ vendorDisbursementId: referenceNo });
    // Still queued: nobody approved it, so rejecting it makes sure nobody will.
    const rejected = await client.iris('approver', 'POST', '/payouts/reject', { reference_nos: [referenceNo], reject_reason: 'Kasir could not approve this payout' });
    if (rejected.kind === 'ok' && irisVerdict(rejected.value).kind === 'success') return failed(`${why}; payout ${referenceNo} rejected`);
    log.warn({ reference, referenceNo, why }, 'Iris payout neither approved nor rejected; waiting for its notification');
    return ok({ vendorDisbursementId: referenceNo });
  }

  async function disburse(input: DisburseInput): Promise<Outcome<PayoutAccepted>> {
    if (!creds.iris) return failed('Iris payouts are not configured for this Midtrans vendor (no Iris keys)');
    if (input.channel !== 'BANK') return failed('e-wallet payouts are not offered through Iris by this adapter');
    const irisBank = irisBankOf(input.bankCode);
    if (!irisBank) return failed(`bank ${input.bankCode ?? '(none)'} has no Iris code known to the Midtrans adapter`);
    // Iris's account validation names the holder: with no name given, it is the payout's; with
    // one, the bank's must be the same holder unless the request accepted otherwise. A
    // validation that cannot answer leaves a given name to Iris.
    let accountName = input.accountName;
    const inquiry = await inquireAccount({ channel: 'BANK', bankCode: input.bankCode, ewalletCode: null, accountNumber: input.accountNumber });
    if (inquiry.kind === 'ok' && inquiry.value.status === 'NOT_FOUND') return failed(`account validation: ${inquiry.value.reason}`);
    if (!accountName) {
      if (inquiry.kind !== 'ok') return failed(`account validation before the payout: ${inquiry.reason}`);
      accountName = inquiry.value.status === 'FOUND' ? inquiry.value.accountName : null;
      if (!accountName) return failed('account validation gave no holder name');
    } else {
      const refusal = holderRefusal(input, inquiry, 'Iris');
      if (refusal) return refusal;
    }
    const request = toPayoutRequest({ reference: input.reference, amount: input.amount, accountNumber: input.accountNumber, accountName, irisBank });
    const logged = { reference: input.reference, bank: irisBank, account: lastFour(input.accountNumber), amount: input.amount };
    // X-Idempotency-Key = Kasir's reference: the same key re-sent after a timeout answers the
    // first result (kept 24 h), never a second payout.
    const create = () => client.iris('creator', 'POST', '/payouts', request, { 'x-idempotency-key': input.reference });
    let created = await create();
    if (created.kind === 'failed') return created;
    let v = created.kind === 'ok' ? irisVerdict(created.value) : null;
    if (v?.kind === 'refused') return failed(v.reason);
    let referenceNo = v?.kind === 'success' ? fromPayoutCreated(v.body) : null;
    if (!referenceNo) {
      // A create may answer `processed` or `completed` (no approval needed), so a payout made
      // without a readable answer may pay: never failed over. The re-send with the same key
      // recovers its reference_no; when it cannot, Iris has no read by Kasir's reference, so
      // an operator settles it.
      const first = created.kind !== 'ok' ? created.reason : v?.kind === 'unknown' ? v.reason : 'answer without a reference_no';
      log.warn({ ...logged, why: first }, 'Iris create unclear; re-sending with the same X-Idempotency-Key');
      created = await create();
      v = created.kind === 'ok' ? irisVerdict(created.value) : null;
      referenceNo = v?.kind === 'success' ? fromPayoutCreated(v.body) : null;
      if (!referenceNo) {
        const second = created.kind !== 'ok' ? created.reason : v?.kind === 'success' ? 'answer without a reference_no' : v!.reason;
        return unresolvable(`Iris create unclear (${first}), and the re-send with the same X-Idempotency-Key too (${second}): whether Iris made it only the Iris dashboard can tell`);
      }
    }
    const createdStatus = v?.kind === 'success' && Array.isArray(v.body.payouts) && isRecord(v.body.payouts[0]) ? v.body.payouts[0].status : undefined;
    log.info({ ...logged, referenceNo, status: createdStatus }, 'Iris payout created');
    // Created `processed` or `completed`: the account approves on its own; nothing to approve.
    if (createdStatus === 'processed' || createdStatus === 'completed') return ok({ vendorDisbursementId: referenceNo });
    // otp is always sent, as midtrans-go's ApprovePayoutReq does (no omitempty): the approver's
    // current code, or empty when no two-factor secret is configured.
    const approved = await client.iris('approver', 'POST', '/payouts/approve', { reference_nos: [referenceNo], otp: creds.iris.approverOtp?.() ?? '' });
    if (approved.kind !== 'ok') return settleApproval(referenceNo, input.reference, `approval unanswered (${approved.reason})`);
    const a = irisVerdict(approved.value);
    if (a.kind === 'success') return ok({ vendorDisbursementId: referenceNo });
    return settleApproval(referenceNo, input.reference, `approval ${a.kind === 'refused' ? 'refused' : 'unreadable'} (${a.reason})`);
  }

  // ---------------------------------------------------------------- notifications

  /**
   * A Core notification. Midtrans signs only order_id + status_code + gross_amount, with no
   * timestamp: a signed notification stays valid for ever, and every other field of it may
   * have been edited. So it only tells Kasir which order to look at: what Kasir acts on is the
   * status it re-reads from Midtrans for that order_id, and nothing else. When the re-read
   * fails, Midtrans is asked to send it again (and reconciliation settles the order meanwhile).
   */
  async function paymentEvent(raw: Buffer): Promise<CallbackEvent | null> {
    const note = readNotification(raw);
    if (!note) return null;
    const expected = notificationSignature(note.orderId, note.statusCode, note.grossAmount, creds.serverKey);
    if (!sameHex(expected, note.signatureKey)) return null;
    const read = await readStatus(note.orderId);
    if (read.kind !== 'ok') {
      log.warn({ orderId: note.orderId, why: read.reason }, 'Midtrans notification: the status cannot be re-read now; answered 503 so Midtrans retries');
      return { type: 'retry_later', eventId: `midtrans:${note.orderId}:${note.statusCode}`, reference: note.orderId, reason: `status re-read: ${read.reason}` };
    }
    const body = read.value.body;
    if (!body) return { type: 'noted', eventId: `midtrans:${note.orderId}:not_found`, reference: note.orderId, what: 'a signed notification for an order Midtrans does not know' };
    const transactionId = text(body.transaction_id) ?? note.orderId;
    const status = String(body.transaction_status ?? '');
    const noted = (what: string): CallbackEvent => ({ type: 'noted', eventId: `midtrans:${transactionId}:${status || 'unknown'}`, reference: note.orderId, what });
    if (status === 'settlement' || status === 'capture') {
      const amount = fromMidtransAmount(body.gross_amount);
      if (amount === null) return noted(`unreadable gross_amount ${JSON.stringify(body.gross_amount)}`);
      return {
        type: 'qris.paid',
        eventId: `midtrans:${transactionId}:settlement`,
        reference: note.orderId,
        vendorOrderId: transactionId,
        amount,
        paidAt: parseJakartaTime(body.settlement_time) ?? parseJakartaTime(body.transaction_time) ?? new Date(),
        rrn: text(body.rrn) ?? text(body.reference_id),
      };
    }
    if (status === 'refund' || status === 'partial_refund') {
      // Only refunds Midtrans lists for this order. The notification's refund_key (unsigned)
      // may pick one of them, never add one; the refund must then be this order's at Kasir too.
      const listed = refundsOf(body);
      const named = text(note.body.refund_key);
      const refund = (named ? listed.find((r) => r.refundKey === named) : undefined) ?? listed.at(-1);
      if (!refund) return noted(`${status} without a refund Midtrans lists`);
      return {
        type: 'refund.updated',
        eventId: `midtrans:${transactionId}:refund:${refund.refundKey}`,
        reference: refund.refundKey,
        vendorRefundId: refund.vendorRefundId,
        status: 'SUCCEEDED',
        failureReason: null,
        orderReference: note.orderId,
      };
    }
    // pending, expire, cancel, deny...: Kasir keeps its own expiry and acts on payments only.
    return noted(`transaction_status ${status}`);
  }

  async function payoutEvent(headers: Record<string, string | string[] | undefined>, raw: Buffer): Promise<CallbackEvent | null> {
    if (!creds.iris) return null;
    if (!sameHex(irisSignature(raw, creds.iris.merchantKey), headerOf(headers, 'iris-signature'))) return null;
    let body: unknown;
    try {
      body = JSON.parse(raw.toString('utf8'));
    } catch {
      return null;
    }
    const referenceNo = isRecord(body) ? text(body.reference_no) : null;
    if (!isRecord(body) || !referenceNo) return null;
    const said = toPayoutStatus(body.status);
    const noted = (what: string, reference = referenceNo): CallbackEvent => ({ type: 'noted', eventId: `iris:${referenceNo}:${String(body.status)}`, reference, what });
    // queued, approved, processed, topup: nothing for Kasir to do.
    if (said === 'PROCESSING' || !['completed', 'failed', 'rejected'].includes(String(body.status))) return noted(`Iris status ${String(body.status)}`);
    // The notification names Iris's reference_no only; the payout's notes hold Kasir's reference.
    const read = await readPayout(referenceNo, null);
    if (read.kind !== 'ok') {
      // Authentic, but not checkable now: 503, so Iris sends it again, when the payout can be read.
      log.warn({ referenceNo, why: read.reason }, 'Iris notification: the payout cannot be read now; answered 503 so Iris retries');
      return { type: 'retry_later', eventId: `iris:${referenceNo}:${String(body.status)}`, reference: referenceNo, reason: `payout re-read: ${read.reason}` };
    }
    const reference = read.value.body ? text(read.value.body.notes) : null;
    if (!reference || read.value.status === 'NOT_FOUND') return noted('a payout Iris does not know, or without Kasir notes');
    // Only Iris's own read moves money: the notification's status is signed with a key a
    // merchant on its own Iris route may hold. A final word the read does not (yet) confirm is
    // answered 503, so Iris sends it again once its status shows it (or reconciliation does).
    const status = read.value.status;
    if (status === 'PROCESSING') {
      log.warn({ referenceNo, said: String(body.status) }, 'Iris notification: final, but the payout still reads as processing; answered 503 so Iris retries');
      return { type: 'retry_later', eventId: `iris:${referenceNo}:${String(body.status)}`, reference, reason: `Iris says ${String(body.status)}, its status read says processing` };
    }
    if (status !== 'SUCCESS' && status !== 'FAILED') return noted(`Iris status ${String(body.status)}`, reference);
    return {
      type: 'disbursement.updated',
      eventId: `iris:${referenceNo}:${status === 'SUCCESS' ? 'completed' : 'failed'}`,
      reference,
      vendorDisbursementId: referenceNo,
      status,
      failureReason: status === 'FAILED' ? (read.value.failureReason ?? irisFailureReason(body)) : null,
    };
  }

  return {
    async createQris(input) {
      const request = toChargeRequest(input, acquirer);
      const asked = await core('POST', '/v2/charge', request, { 'x-override-notification': input.callbackUrl });
      if (asked.kind !== 'ok') return asked;
      const v = asked.value;
      let created: QrisCreated | null;
      if (v.kind === 'success') {
        created = fromCharge(v.body, input.reference);
        if (!created) return unknown(`unreadable charge answer for ${input.reference}`);
      } else if (v.kind === 'duplicate') {
        // The order_id is taken: what Midtrans holds decides, a second charge would not.
        const read = await readStatus(input.reference);
        if (read.kind !== 'ok') return unknown(`${v.reason}; the status after it: ${read.reason}`);
        const { status } = read.value;
        if (status.status === 'NOT_FOUND') return unknown(`${v.reason}, yet the status finds no ${input.reference}`);
        if (status.status !== 'PENDING') return status.status === 'EXPIRED' ? failed(`${v.reason}; ${input.reference} is no longer payable`) : unknown(`${v.reason}; ${input.reference} is ${status.status}`);
        // Nobody was shown that QR, so nobody can pay it: another vendor may serve the order.
        if (!status.qrisString) return failed(`${v.reason}; Midtrans holds ${input.reference} but its status does not return the QR`);
        created = { vendorOrderId: status.vendorOrderId ?? input.reference, qrisString: status.qrisString };
      } else if (v.kind === 'refused' || v.kind === 'not_found') {
        return failed(v.reason);
      } else {
        return unknown(v.reason);
      }
      // A QR payers' apps would refuse is not repaired by asking again: a definite failure.
      const problem = validateVendorQris(created.qrisString, input.amount);
      return problem ? failed(`Midtrans returned an unusable QRIS: ${problem}`) : ok(created);
    },

    async queryQris(reference) {
      const read = await readStatus(reference);
      return read.kind === 'ok' ? ok(read.value.status) : read;
    },

    async refund(input): Promise<Outcome<RefundResult>> {
      // refund_key = Kasir's refund reference: a re-send is the same refund at Midtrans. The
      // documented Idempotency-Key (Core POSTs, kept 5 minutes) says so too: a re-send while
      // the first is in process answers 202 instead of a refusal.
      const asked = await core('POST', `/v2/${encodeURIComponent(input.reference)}/refund`, toRefundRequest(input), { 'idempotency-key': input.refundReference });
      if (asked.kind !== 'ok') return asked;
      const v = asked.value;
      if (v.kind === 'success') {
        const body = v.body;
        if (body.refund_key !== undefined && body.refund_key !== input.refundReference) return unknown(`refund answer for another refund_key: ${String(body.refund_key)}`);
        if (body.refund_amount !== undefined && fromMidtransAmount(body.refund_amount) !== input.amount) return unknown(`refund answer for another amount: ${JSON.stringify(body.refund_amount)}`);
        const id = body.refund_chargeback_id;
        const vendorRefundId = typeof id === 'number' || typeof id === 'string' ? String(id) : input.refundReference;
        return ok({ vendorRefundId, status: v.code === 200 ? 'SUCCEEDED' : 'PENDING' });
      }
      // 406 "refund_key has already been used" says Midtrans holds a refund under this key; 412
      // "exceeds the refundable amount" after a re-send may be the first refund, in flight and
      // not yet listed, taking the amount. Neither is failed (which would re-credit the
      // merchant): the status decides, and when it does not list the refund no read can.
      const refusedResend = v.kind === 'duplicate' || (input.resent === true && v.kind === 'refused' && v.code === 412);
      if (refusedResend) return settleRefusedRefund(input, v.reason);
      if (v.kind === 'refused' || v.kind === 'not_found') return failed(v.reason);
      return unknown(v.reason);
    },

    queryRefund: (query) => listedRefund(query),

    disburse,

    async queryDisbursement(reference: string, vendorDisbursementId?: string | null): Promise<Outcome<DisbursementStatus>> {
      if (!creds.iris) return failed('Iris payouts are not configured for this Midtrans vendor (no Iris keys)');
      // Iris finds payouts by its reference_no only. Without it (a worker stopped between the
      // approval and storing its answer) Kasir cannot tell "never made" from "made and
      // approved": never NOT_FOUND (which would send again), but unresolvable, for an operator;
      // Iris's notification, traced back through the payout's notes, still completes it.
      if (!vendorDisbursementId) return unresolvable(`Iris looks payouts up by reference_no only, and none is known for ${reference}: whether it was created and approved only the Iris dashboard can tell`);
      const read = await readPayout(vendorDisbursementId, reference);
      if (read.kind !== 'ok') return read;
      const { status, failureReason } = read.value;
      return ok({ status, vendorDisbursementId: status === 'NOT_FOUND' ? null : vendorDisbursementId, failureReason });
    },

    inquireAccount,

    async check() {
      const probe = `kasir-check-${Date.now()}`;
      const asked = await core('GET', statusPath(probe));
      if (asked.kind !== 'ok') return asked;
      const v = asked.value;
      if (v.kind === 'refused' && (v.code === 401 || v.code === 403)) return failed(`server key refused: ${v.reason}`);
      if (v.kind !== 'not_found') return v.kind === 'refused' || v.kind === 'duplicate' ? failed(v.reason) : unknown(`the status of a made-up order: ${v.kind === 'success' ? 'found' : v.reason}`);
      const lines = ['server key accepted (a made-up order is 404)'];
      if (!creds.iris) return ok(`${lines[0]}; no Iris keys, so no payouts`);
      for (const role of ['creator', 'approver'] as const) {
        const banks = await client.iris(role, 'GET', '/beneficiary_banks');
        if (banks.kind !== 'ok') return { kind: banks.kind, reason: `Iris ${role} key: ${banks.reason}` };
        const b = irisVerdict(banks.value);
        if (b.kind !== 'success') return b.kind === 'refused' ? failed(`Iris ${role} key refused: ${b.reason}`) : unknown(`Iris ${role} key: ${b.reason}`);
        if (role === 'creator') {
          const listed = new Set(Array.isArray(b.body.beneficiary_banks) ? b.body.beneficiary_banks.filter(isRecord).map((x) => String(x.code)) : []);
          const missing = Object.entries(IRIS_BANKS).filter(([, code]) => !listed.has(code)).map(([kasir]) => kasir);
          lines.push(missing.length ? `Iris does not list these mapped banks: ${missing.join(', ')}` : 'every mapped bank is listed by Iris');
        }
      }
      lines.splice(1, 0, 'Iris creator and approver keys accepted');
      // Reconciliation reads the statement with the creator key: a key that may pay but not
      // read its statement would fail every night.
      try {
        const count = await probeStatement((method, path, payload) => client.iris('creator', method, path, payload));
        lines.push(`Iris statement read (today: ${count} lines)`);
      } catch (error) {
        if (!(error instanceof ReportUnavailable)) throw error;
        return failed(`Iris statement read (daily reconciliation) refused: ${error.message}`);
      }
      if (!creds.iris.approverOtp) lines.push('no approver TOTP secret: approvals send an empty otp, which Iris refuses where approvers use two-factor codes');
      return ok(lines.join('; '));
    },

    reportDay: (day) => midtransReport({ core: (method, path) => client.core(method, path), iris: creds.iris ? (method, path, payload) => client.iris('creator', method, path, payload) : null }, day),

    async parseCallback(headers, rawBody, path = '') {
      if (path !== '') return null;
      return headerOf(headers, 'iris-signature') !== null ? payoutEvent(headers, rawBody) : paymentEvent(rawBody);
    },
  };
}
