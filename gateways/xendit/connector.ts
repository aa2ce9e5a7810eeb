// Kasir's Xendit adapter: QRIS through the QR Codes API (api-version 2022-07-31), refunds of
// QR payments, bank and e-wallet payouts through Payouts v2, and callbacks authenticated by
// the account's verification token. The shapes live in xendit-transforms.ts; the operator's
// side in docs/vendors/xendit.md.
//
// How each unknown outcome is resolved (and why no money moves twice):
// - QR create: Xendit has no idempotency key for QR codes and no lookup by reference_id. A
//   create whose answer was lost is taken as not made (queryQris without Xendit's QR id
//   answers NOT_FOUND): Kasir never handed its QR string to anyone, so no payer can pay it,
//   and it expires at Xendit unused. The attempt fails and the merchant's retry makes a new one.
// - Payout: the disbursement's reference is the Idempotency-key (required, xendit-node
//   payout/apis/Payout.ts); a reused key is refused with 400 DUPLICATE_TRANSACTION_ERROR or a
//   409 of any code (DUPLICATE_ERROR as Xendit's SDK answers a reused key elsewhere, or a
//   request still in progress). Each is "already received": resolved by reading the payout by reference_id (getPayouts), never by sending
//   again, and never failed over. A duplicate the read cannot show is unresolvable.
// - Refund: POST /qr_codes/payments/{id}/refunds documents only `amount`: no idempotency key,
//   no metadata echoed, no lookup by Kasir's reference. So a refund is POSTed once; its id from
//   that answer is the only way back to it (queryRefund reads by it, the qr.refund callback is
//   matched by it), and a refund whose POST went unanswered has no id and no read that could
//   prove it absent: unresolvable, an operator settles it (gateway.ts, the rule).
//
// Classification: 2xx is read (unreadable → unknown); 429 RATE_LIMIT_EXCEEDED and every other
// 4xx are failed (Xendit did nothing); 5xx and lost answers are unknown.
import { timingSafeEqual } from 'node:crypto';
import { logger } from '../../db/logger.ts';
import { observeVendorRateLimited } from '../../db/metrics.ts';
import type { AccountInquiry, Gateway, Outcome, QrisStatus, RefundStatus, VendorRecord } from '../gateway.ts';
import { interpretAnswer, vendorCall, type HttpAnswer } from '../http.ts';
import { failed, headerOf, ok, PAYOUT_NOT_FOUND, QR_NOT_FOUND, unknown, unresolvable } from '../results.ts';
import { validateVendorQris } from '../qris.ts';
import { checkPermissions } from './permissions.ts';
import { xenditReport } from './report.ts';
import {
  channelCodeOf,
  DUPLICATE_PAYOUT,
  isPaid,
  errorBody,
  fromPayments,
  fromPayout,
  fromPayouts,
  fromQrCode,
  fromQrCreated,
  fromRefund,
  PATHS,
  QR_API_VERSION,
  toCallbackEvent,
  toCreateQrRequest,
  toDisbursementStatus,
  toPayoutRequest,
  toQrisStatus,
  toRefundRequest,
  toRefundStatus,
} from './transforms.ts';

/** Below the API's default 10 s wait for a create, so a timeout still leaves time to answer. */
const DEFAULT_TIMEOUT_MS = 5000;


export interface XenditCredentials {
  secretKey: string;
  callbackToken: string;
}

export function xenditCredentials(vendor: VendorRecord): XenditCredentials {
  const { secretKey, callbackToken } = vendor.credentials;
  if (!secretKey || !callbackToken) throw new Error(`vendor ${vendor.code}: credentials.secretKey and credentials.callbackToken are required for kind xendit`);
  return { secretKey, callbackToken };
}

function createClient(vendor: VendorRecord, creds: XenditCredentials, timeoutMs: number) {
  const base = vendor.baseUrl.replace(/\/+$/, '');
  // HTTP Basic: the secret key is the user name, the password is empty.
  const authorization = `Basic ${Buffer.from(`${creds.secretKey}:`).toString('base64')}`;
  const log = logger.child({ vendor: vendor.code });
  return async function request(method: 'GET' | 'POST', path: string, payload?: object, headers: Record<string, string> = {}): Promise<Outcome<HttpAnswer>> {
    const answer = await vendorCall(log, {
      method,
      url: base + path,
      body: payload === undefined ? undefined : JSON.stringify(payload),
      headers: {
        authorization,
        ...(payload === undefined ? {} : { 'content-type': 'application/json' }),
        ...(path.startsWith('/qr_codes') ? { 'api-version': QR_API_VERSION } : {}),
        ...headers,
      },
      timeoutMs,
    });
    if (answer.kind === 'ok' && answer.value.status === 429) observeVendorRateLimited(vendor.code);
    return answer;
  };
}

const errorCodeOf = (body: unknown) => {
  const parsed = errorBody.safeParse(body);
  return parsed.success ? parsed.data.error_code : null;
};

/** 2xx: the parsed value, or unknown if unreadable; 4xx (429 included): failed; else unknown. */
function interpret<T>(answer: HttpAnswer, parse: (body: unknown) => T | null): Outcome<T> {
  return interpretAnswer(answer, parse, ({ status, body }) => {
    const error = errorBody.safeParse(body);
    return `HTTP ${status}${error.success ? ` ${error.data.error_code}${error.data.message ? `: ${error.data.message}` : ''}` : ''}`;
  });
}

function sameToken(expected: string, given: string | null): boolean {
  if (given === null) return false;
  const a = Buffer.from(expected);
  const b = Buffer.from(given);
  return a.length === b.length && timingSafeEqual(a, b);
}

export function createXenditGateway(vendor: VendorRecord, opts: { timeoutMs?: number } = {}): Gateway {
  const creds = xenditCredentials(vendor);
  const request = createClient(vendor, creds, opts.timeoutMs ?? DEFAULT_TIMEOUT_MS);

  /** The QR's succeeded payment id, which refunds are made against (null: not paid). */
  async function paymentOf(qrId: string): Promise<Outcome<string | null>> {
    const answer = await request('GET', PATHS.qrPayments(qrId));
    if (answer.kind !== 'ok') return answer;
    const payments = interpret(answer.value, fromPayments);
    return payments.kind === 'ok' ? ok(payments.value.find((p) => isPaid(p.status))?.id ?? null) : payments;
  }


  async function payoutByReference(reference: string): Promise<Outcome<ReturnType<typeof toDisbursementStatus>>> {
    const answer = await request('GET', PATHS.payoutsByReference(reference));
    if (answer.kind !== 'ok') return answer;
    return interpret(answer.value, (body) => {
      const payouts = fromPayouts(body)?.filter((p) => p.reference_id === reference);
      if (!payouts) return null;
      // One reference, one payout (the Idempotency-key); the latest wins if Xendit ever lists more.
      const latest = payouts.at(-1);
      return latest ? toDisbursementStatus(latest) : PAYOUT_NOT_FOUND;
    });
  }

  return {
    async createQris(input) {
      const answer = await request('POST', PATHS.qrCodes, toCreateQrRequest(input));
      if (answer.kind !== 'ok') return answer;
      const outcome = interpret(answer.value, (body) => fromQrCreated(body, input.reference));
      if (outcome.kind !== 'ok') return outcome;
      const problem = validateVendorQris(outcome.value.qrisString, input.amount);
      return problem ? failed(`Xendit returned an unusable QRIS: ${problem}`) : outcome;
    },

    async queryQris(reference, vendorOrderId): Promise<Outcome<QrisStatus>> {
      // No lookup by reference_id: without Xendit's id the QR was never handed out (see top).
      if (!vendorOrderId) return ok(QR_NOT_FOUND);
      const qrAnswer = await request('GET', PATHS.qrCode(vendorOrderId));
      if (qrAnswer.kind !== 'ok') return qrAnswer;
      if (qrAnswer.value.status === 404 && errorCodeOf(qrAnswer.value.body) === 'DATA_NOT_FOUND') {
        return ok(QR_NOT_FOUND);
      }
      const qr = interpret(qrAnswer.value, (body) => fromQrCode(body, reference));
      if (qr.kind !== 'ok') return qr;
      const paymentsAnswer = await request('GET', PATHS.qrPayments(vendorOrderId));
      if (paymentsAnswer.kind !== 'ok') return paymentsAnswer;
      const payments = interpret(paymentsAnswer.value, fromPayments);
      if (payments.kind !== 'ok') return payments;
      return ok(toQrisStatus(qr.value, payments.value));
    },

    async refund(input) {
      const payment = await paymentOf(input.vendorOrderId);
      if (payment.kind !== 'ok') return payment;
      if (!payment.value) return failed(`no succeeded payment on Xendit QR ${input.vendorOrderId}`);
      // Sent once: a second POST would be a second refund (see top).
      const answer = await request('POST', PATHS.qrRefunds(payment.value), toRefundRequest(input.amount));
      if (answer.kind !== 'ok') return answer;
      return interpret(answer.value, (body) => {
        const refund = fromRefund(body);
        if (!refund || (refund.refund_amount != null && refund.refund_amount !== input.amount)) return null;
        return { vendorRefundId: refund.id, status: toRefundStatus(refund.status) };
      });
    },

    async queryRefund(query): Promise<Outcome<RefundStatus>> {
      if (!query.vendorRefundId) {
        return unresolvable(`Xendit never answered refund ${query.refundReference}'s POST, shows QR refunds only by its own id, and dedupes nothing: whether it exists only Xendit's dashboard can tell`);
      }
      const payment = await paymentOf(query.vendorOrderId);
      if (payment.kind !== 'ok') return payment;
      if (!payment.value) return unknown(`Xendit QR ${query.vendorOrderId} shows no succeeded payment, yet refund ${query.vendorRefundId} was made against it`);
      const answer = await request('GET', PATHS.qrRefund(payment.value, query.vendorRefundId));
      if (answer.kind !== 'ok') return answer;
      // An id Xendit gave is never "not found": a 404 is a read that did not work.
      if (answer.value.status === 404) return unknown(`Xendit does not show refund ${query.vendorRefundId} it made`);
      return interpret(answer.value, (body) => {
        const refund = fromRefund(body);
        if (!refund || refund.id !== query.vendorRefundId) return null;
        const status = toRefundStatus(refund.status);
        return { status, vendorRefundId: refund.id, failureReason: status === 'FAILED' ? (refund.failure_code ?? refund.status) : null };
      });
    },

    async disburse(input) {
      const channelCode = channelCodeOf(input);
      if (!channelCode) return failed(`Xendit has no payout channel for ${input.channel} ${input.bankCode ?? input.ewalletCode}`);
      // Xendit requires the holder's name and matches it exactly; it is never guessed.
      if (!input.accountName) return failed('Xendit payouts need the account holder name');
      const answer = await request('POST', PATHS.payouts, toPayoutRequest(input, channelCode, input.accountName), { 'idempotency-key': input.reference });
      if (answer.kind !== 'ok') return answer;
      if (DUPLICATE_PAYOUT(answer.value.status, errorCodeOf(answer.value.body))) {
        // Already received under this reference: read it, never send again, never fail over.
        const known = await payoutByReference(input.reference);
        if (known.kind !== 'ok') return unknown(`duplicate reference, and reading it back failed: ${known.reason}`);
        if (known.value.vendorDisbursementId) return ok({ vendorDisbursementId: known.value.vendorDisbursementId });
        return unresolvable(`Xendit calls ${input.reference} a duplicate (HTTP ${answer.value.status}) yet lists no payout under it`);
      }
      return interpret(answer.value, (body) => {
        const payout = fromPayout(body);
        return payout && payout.reference_id === input.reference ? { vendorDisbursementId: payout.id } : null;
      });
    },

    queryDisbursement: payoutByReference,

    async inquireAccount(): Promise<Outcome<AccountInquiry>> {
      // Xendit offers no account-name inquiry: name checks go to the next routed vendor.
      return failed('Xendit has no account name inquiry');
    },

    // One probe per permission Kasir's key will use (permissions.ts).
    check: () => checkPermissions(request),

    reportDay: (day) => xenditReport(request, day),

    // x-callback-token is a static token the account holder reads in its dashboard.
    paymentCallbacksAreHints: true,

    async parseCallback(headers, rawBody) {
      if (!sameToken(creds.callbackToken, headerOf(headers, 'x-callback-token'))) return null;
      let body: unknown;
      try {
        body = JSON.parse(rawBody.toString('utf8'));
      } catch {
        return null;
      }
      return toCallbackEvent(body);
    },
  };
}
