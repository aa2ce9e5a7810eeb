// Kasir's adapter for SNAP BI (Bank Indonesia's Standar Nasional Open API Pembayaran): QRIS MPM,
// account inquiry and interbank transfers, behind the Gateway interface. docs/vendors/snap.md
// says what an operator configures and which responseCodes Kasir acts on. Split like every
// adapter: client (snap-client.ts: token, signing), pure transforms (snap-transforms.ts), and
// here the classification of each service's answers into Outcomes.
//
// Classification decides failover:
// - ok on 200/202 with a readable answer for our reference;
// - failed on a definite refusal (4xx responseCode), and on anything that stopped the request
//   before it was sent (no token, no BI code, e-wallet payouts, a refused account inquiry);
// - unknown on 5xx, timeouts after sending, contradictory or garbled answers (a fractional amount
//   included), never retried elsewhere;
// - 409 (the provider already has this X-EXTERNAL-ID or partnerReferenceNo) is "already
//   received": resolved by asking the provider about our reference, never by sending again.
// The rule on unclear answers (gateway.ts), per service:
// - transfer: the status inquiry by partnerReferenceNo proves a transfer absent (404xx01); a
//   409 the inquiry cannot show is unresolvable.
// - refund: QR MPM has no refund query. The payment's query settles a refund only when the
//   provider lists refunds in it (additionalInfo.refundHistory, not in the standard) or the
//   whole payment is refunded by this one refund; otherwise the refund is unresolvable.
import type { AccountInquiry, AccountInquiryInput, CallbackEvent, Gateway, Outcome, QrisCreated, QrisStatus, RefundResult, RefundStatus, VendorRecord } from '../gateway.ts';
import { validateVendorQris } from '../qris.ts';
import { holderRefusal } from '../name-rule.ts';
import { failed, ok, PAYOUT_NOT_FOUND, QR_NOT_FOUND, unknown, unresolvable } from '../results.ts';
import { biCodeOf } from './banks.ts';
import { snapReport } from './report.ts';
import { answerTokenRequest, createSnapClient, externalIdFor, randomExternalId, snapCredentials, verifyNotify, type SnapAnswer } from './client.ts';
import {
  accountRefusal,
  CLOSING_STATUS,
  fromGenerated,
  fromNotify,
  fromQueried,
  fromSnapAmount,
  fromTransferStatus,
  isNotifyPath,
  isTokenPath,
  PATHS,
  refundInHistory,
  snapAnswer,
  toGenerateRequest,
  toInquiryRequest,
  toQueryRequest,
  toRefundRequest,
  toTransferRequest,
  toTransferStatusRequest,
  verdictOf,
  type Verdict,
} from './transforms.ts';

/** Below the API's default 10 s wait for a create, so a timeout still leaves time to answer. */
const DEFAULT_TIMEOUT_MS = 5000;


const text = (value: unknown): string | null => (typeof value === 'string' && value.length > 0 ? value : null);
const same = (id: string) => () => id;

/** A 404 the provider names as "Transaction Not Found" (case 01): a real answer, unlike a bare 404. */
const isNotFound = (v: Verdict) => v.kind === 'refused' && v.http === 404 && v.case === '01';

export function createSnapGateway(vendor: VendorRecord, opts: { timeoutMs?: number } = {}): Gateway {
  const creds = snapCredentials(vendor);
  const client = createSnapClient(vendor, creds, opts.timeoutMs ?? DEFAULT_TIMEOUT_MS);
  const settings = {
    merchantId: creds.merchantId,
    terminalId: creds.terminalId,
    qrQueryServiceCode: creds.qrQueryServiceCode,
    bankBranchCode: creds.bankBranchCode,
    sourceAccountNo: creds.sourceAccountNo,
  };
  const createId = (operation: string, key: string) => same(externalIdFor(creds.partnerId, operation, key));

  async function ask(path: string, payload: object, externalId: () => string = () => randomExternalId()): Promise<Outcome<Verdict>> {
    const answer: Outcome<SnapAnswer> = await client.call(path, payload, externalId);
    return answer.kind === 'ok' ? ok(verdictOf(answer.value.status, answer.value.body)) : answer;
  }

  /**
   * The query of a QR by the provider's referenceNo (originalReferenceNo: mandatory at Finpay,
   * Qoin, PayCloud, iFortepay; sent by the Midtrans SDK example) and Kasir's reference. Without
   * the provider's id Kasir never got the generate answer, so it never showed that QR to anyone:
   * NOT_FOUND without asking, as for Xendit.
   */
  async function queryQris(reference: string, vendorOrderId: string | null | undefined): Promise<Outcome<{ status: QrisStatus; body: Record<string, unknown> | null }>> {
    if (!vendorOrderId) return ok({ status: QR_NOT_FOUND, body: null });
    const asked = await ask(PATHS.qrQuery, toQueryRequest(reference, vendorOrderId, settings));
    if (asked.kind !== 'ok') return asked;
    const v = asked.value;
    if (isNotFound(v)) return ok({ status: QR_NOT_FOUND, body: null });
    if (v.kind === 'success') {
      const status = fromQueried(v.body, reference);
      return status ? ok({ status, body: v.body }) : unknown(`unreadable query answer for ${reference}`);
    }
    if (v.kind === 'refused') return failed(v.reason);
    return unknown(v.reason);
  }

  async function queryTransfer(reference: string) {
    const asked = await ask(PATHS.transferStatus, toTransferStatusRequest(reference));
    if (asked.kind !== 'ok') return asked;
    const v = asked.value;
    if (isNotFound(v)) return ok(PAYOUT_NOT_FOUND);
    if (v.kind === 'success') {
      const status = fromTransferStatus(v.body, reference);
      return status ? ok(status) : unknown(`unreadable transfer status for ${reference}`);
    }
    if (v.kind === 'refused') return failed(v.reason);
    return unknown(v.reason);
  }

  async function inquireAccount(input: AccountInquiryInput): Promise<Outcome<AccountInquiry>> {
    if (input.channel !== 'BANK') return failed('e-wallet account inquiries are not offered by this SNAP provider');
    const biCode = input.bankCode ? biCodeOf(input.bankCode) : null;
    if (!biCode) return failed(`bank ${input.bankCode ?? '(none)'} has no BI code known to the SNAP adapter`);
    const asked = await ask(PATHS.inquiry, toInquiryRequest(biCode, input.accountNumber, settings));
    if (asked.kind !== 'ok') return asked;
    const v = asked.value;
    if (v.kind === 'success') {
      const name = text(v.body.beneficiaryAccountName);
      return name ? ok({ status: 'FOUND', accountName: name }) : unknown('account inquiry answer without beneficiaryAccountName');
    }
    if (v.kind === 'refused') {
      const reason = accountRefusal(v.http, v.case);
      return reason ? ok({ status: 'NOT_FOUND', reason }) : failed(v.reason);
    }
    return unknown(v.reason);
  }

  return {
    async createQris(input) {
      const asked = await ask(PATHS.qrGenerate, toGenerateRequest(input, settings), createId('qr-mpm-generate', input.reference));
      if (asked.kind !== 'ok') return asked;
      const v = asked.value;
      let created: QrisCreated | null;
      if (v.kind === 'success') {
        created = fromGenerated(v.body, input.reference);
        if (!created) return unknown(`unreadable generate answer for ${input.reference}`);
      } else if (v.kind === 'duplicate') {
        // Already received, and its answer (the provider's referenceNo, the only key the query
        // takes) was lost: Kasir never showed that QR, so nobody can pay it, and a second
        // generate would not be answered either. Another vendor may serve the order.
        return failed(`${v.reason}; the provider holds ${input.reference}, whose QR Kasir never received or showed`);
      } else {
        return v.kind === 'refused' ? failed(v.reason) : unknown(v.reason);
      }
      // A QR payers' apps would refuse is not repaired by asking again: a definite failure.
      const problem = validateVendorQris(created.qrisString, input.amount);
      return problem ? failed(`provider returned an unusable QRIS: ${problem}`) : ok(created);
    },

    async queryQris(reference, vendorOrderId) {
      const queried = await queryQris(reference, vendorOrderId);
      return queried.kind === 'ok' ? ok(queried.value.status) : queried;
    },

    async refund(input): Promise<Outcome<RefundResult>> {
      const asked = await ask(PATHS.qrRefund, toRefundRequest(input, settings), createId('qr-mpm-refund', input.refundReference));
      if (asked.kind !== 'ok') return asked;
      const v = asked.value;
      if (v.kind === 'success') {
        if (v.body.refundAmount !== undefined && fromSnapAmount(v.body.refundAmount) !== input.amount) return unknown(`refund answer for another amount: ${JSON.stringify(v.body.refundAmount)}`);
        const vendorRefundId = text(v.body.refundNo) ?? text(v.body.referenceNo) ?? input.refundReference;
        return ok({ vendorRefundId, status: v.http === 202 ? 'PENDING' : 'SUCCEEDED' });
      }
      if (v.kind === 'duplicate') {
        // There is no refund query in QR MPM: the payment's query tells, when it lists refunds,
        // or when the whole payment is refunded and this refund was all of it.
        const queried = await queryQris(input.reference, input.vendorOrderId);
        if (queried.kind !== 'ok') return unknown(`${v.reason}; the query after it: ${queried.reason}`);
        const { body } = queried.value;
        const listed = body ? refundInHistory(body, input.refundReference) : null;
        if (listed) return ok(listed);
        if (body?.latestTransactionStatus === '04' && fromSnapAmount(body.amount) === input.amount) return ok({ vendorRefundId: input.refundReference, status: 'SUCCEEDED' });
        return unknown(`${v.reason}; the payment's query does not say what became of ${input.refundReference}`);
      }
      return v.kind === 'refused' ? failed(v.reason) : unknown(v.reason);
    },

    async queryRefund(query): Promise<Outcome<RefundStatus>> {
      const queried = await queryQris(query.reference, query.vendorOrderId);
      if (queried.kind !== 'ok') return queried;
      const { body } = queried.value;
      if (!body) return unknown(`the provider does not find payment ${query.reference}, refunded by ${query.refundReference}`);
      const listed = refundInHistory(body, query.refundReference);
      if (listed) return ok({ status: listed.status, vendorRefundId: listed.vendorRefundId, failureReason: listed.status === 'FAILED' ? 'REFUSED_BY_PROVIDER' : null });
      // A provider that lists refunds and not this one proves it never took it.
      if (Array.isArray((body.additionalInfo as { refundHistory?: unknown } | undefined)?.refundHistory)) return ok({ status: 'NOT_FOUND', vendorRefundId: null, failureReason: null });
      if (body.latestTransactionStatus === '04' && fromSnapAmount(body.amount) === query.amount) return ok({ status: 'SUCCEEDED', vendorRefundId: query.vendorRefundId, failureReason: null });
      return unresolvable(`the provider's query does not list refunds, so what became of ${query.refundReference} only the provider can tell`);
    },

    async disburse(input) {
      if (input.channel !== 'BANK') return failed('e-wallet payouts are not offered by this SNAP provider');
      const biCode = input.bankCode ? biCodeOf(input.bankCode) : null;
      if (!biCode) return failed(`bank ${input.bankCode ?? '(none)'} has no BI code known to the SNAP adapter`);
      // The bank's name for the account goes into the transfer; no answer, no transfer sent.
      const inquiry = await inquireAccount({ channel: 'BANK', bankCode: input.bankCode, ewalletCode: null, accountNumber: input.accountNumber });
      if (inquiry.kind !== 'ok') return failed(`account inquiry before the transfer: ${inquiry.reason}`);
      if (inquiry.value.status === 'NOT_FOUND') return failed(`account inquiry: ${inquiry.value.reason}`);
      // The bank's name goes into the transfer: one that is not the payout's holder is refused
      // unless the request accepted it.
      const refusal = holderRefusal(input, inquiry, 'the bank');
      if (refusal) return refusal;
      const request = toTransferRequest({ reference: input.reference, amount: input.amount, accountNumber: input.accountNumber, accountName: inquiry.value.accountName, biCode }, settings);
      const asked = await ask(PATHS.transferInterbank, request, createId('transfer-interbank', input.reference));
      if (asked.kind !== 'ok') return asked;
      const v = asked.value;
      if (v.kind === 'success') {
        if (v.body.partnerReferenceNo !== undefined && v.body.partnerReferenceNo !== input.reference) return unknown(`transfer answer for another reference: ${String(v.body.partnerReferenceNo)}`);
        return ok({ vendorDisbursementId: text(v.body.referenceNo) ?? input.reference });
      }
      if (v.kind === 'duplicate') {
        const status = await queryTransfer(input.reference);
        if (status.kind !== 'ok') return unknown(`${v.reason}; the status inquiry after it: ${status.reason}`);
        if (status.value.status === 'NOT_FOUND') return unresolvable(`${v.reason}, yet the status inquiry finds no ${input.reference}`);
        return ok({ vendorDisbursementId: status.value.vendorDisbursementId ?? input.reference });
      }
      return v.kind === 'refused' ? failed(v.reason) : unknown(v.reason);
    },

    queryDisbursement: queryTransfer,

    inquireAccount,

    async check() {
      client.dropToken();
      const token = await client.accessToken();
      if (token.kind !== 'ok') return token;
      // A token proves the key pair; the signed service calls prove the client secret and that
      // the partner may use them: a query of a made-up QR and transfer must be "not found".
      const probe = `kasir-check-${Date.now()}`;
      const lines = [`access token issued (partner ${creds.partnerId})`];
      const qr = await queryQris(probe, probe);
      if (qr.kind !== 'ok') return { kind: qr.kind, reason: `QR query (payment confirmation): ${qr.reason}` };
      lines.push('QR query signed and answered (a made-up QR is not found)');
      const transfer = await queryTransfer(probe);
      if (transfer.kind !== 'ok') return { kind: transfer.kind, reason: `transfer status (payout confirmation): ${transfer.reason}` };
      lines.push('transfer status signed and answered (a made-up transfer is not found)');
      return ok(lines.join('; '));
    },

    async parseCallback(headers, rawBody, path = '') {
      if (!isNotifyPath(path)) return null;
      if (!verifyNotify(creds, headers, rawBody, [path, `/callbacks/${vendor.code}${path}`])) return null;
      let body: unknown;
      try {
        body = JSON.parse(rawBody.toString('utf8'));
      } catch {
        return null;
      }
      const notify = fromNotify(body);
      // Not a QR notify Kasir can read (no originalReferenceNo, a payment without a whole amount):
      // refused, so the provider keeps it in its retries and alerts, never acknowledged unread.
      if (!notify) return null;
      // One event per QR and status, however often the provider repeats the notify.
      const eventId = `snap:${notify.vendorOrderId}:${notify.status}`;
      // Without originalPartnerReferenceNo the order is the one holding the provider's id.
      const reference = notify.reference ?? '';
      if ('amount' in notify) {
        return { type: 'qris.paid', eventId, reference, vendorOrderId: notify.vendorOrderId, amount: notify.amount, paidAt: notify.paidAt, rrn: notify.rrn };
      }
      const closing = CLOSING_STATUS[notify.status];
      const what = `latestTransactionStatus ${notify.status}${notify.description ? ` ${notify.description}` : ''}`;
      // Canceled, failed, expired, rejected: final, the QR can no longer be paid.
      if (closing) return { type: 'qris.closed', eventId, reference, vendorOrderId: notify.vendorOrderId, status: closing, what };
      // Initiated, paying, pending, refunded (Kasir's own), not found, or a status yet unknown.
      return { type: 'noted', eventId, reference, what };
    },

    reportDay: (day) => snapReport(ask, settings, day),

    // An HMAC notify is signed with the client secret the merchant holds too; an RSA notify with
    // the provider's private key, which only the provider holds.
    paymentCallbacksAreHints: creds.notifySignature === 'hmac',

    answerCallback: snapAnswer,

    // HMAC-notify providers first fetch a B2B token from Kasir, at <notify base>/v1.x/access-token/b2b.
    answerRequest: (path, headers, rawBody) => (isTokenPath(path) ? answerTokenRequest(creds, headers, rawBody) : null),
  };
}
