// Kasir's adapter for the simulator gateway (API in docs/simulator.md), split like every vendor
// adapter: a client (HTTP, signing), pure transforms (ours ⇄ theirs) and outcome classification.
//
// Classification decides failover, so it errs toward `unknown` whenever the vendor may have
// acted: only a request that surely never arrived (refused connection, DNS failure, connect
// timeout) or a 4xx answer is `failed`. A 404 on a query is a real answer (NOT_FOUND) only when
// the vendor names the missing resource; a bare 404 may be a wrong base URL.
import { createHmac, createSecretKey, timingSafeEqual, type KeyObject } from 'node:crypto';
import { z } from 'zod';
import { logger } from '../../db/logger.ts';
import type {
  AccountInquiry,
  AccountInquiryInput,
  CallbackEvent,
  CreateQrisInput,
  DisburseInput,
  DisbursementStatus,
  Gateway,
  Outcome,
  QrisCreated,
  QrisStatus,
  RefundInput,
  RefundResult,
  VendorRecord,
} from '../gateway.ts';
import { interpretAnswer, vendorCall, type HttpAnswer } from '../http.ts';
import { parseQris, validateVendorQris } from '../qris.ts';
import { simulatorReport } from './connector-report.ts';
import { holderRefusal, holderToCheck } from '../name-rule.ts';
import { failed, ok, PAYOUT_NOT_FOUND, QR_NOT_FOUND } from '../results.ts';

/** Below the API's default 10 s wait for a create, so a timeout still leaves time to answer. */
const DEFAULT_TIMEOUT_MS = 5000;
/** Callbacks signed further from now than this are refused (replays of captured callbacks). */
const MAX_SKEW_SECONDS = 300;


// ---------------------------------------------------------------- client

// The client keys with a KeyObject made once: Node prepares a string key anew on every
// createHmac, ~30 µs a call against ~5 µs (db/signatures.ts says more).
const sign = (secret: string | KeyObject, timestamp: string, body: Buffer | string) =>
  createHmac('sha256', secret).update(`${timestamp}.`).update(body).digest();

export { classifyTransportError } from '../http.ts';

function createClient(vendor: VendorRecord, timeoutMs: number) {
  const key = createSecretKey(Buffer.from(vendor.credentials.secret, 'utf8'));
  const base = vendor.baseUrl.replace(/\/+$/, '');
  const log = logger.child({ vendor: vendor.code });
  return function request(method: 'GET' | 'POST', path: string, payload?: object): Promise<Outcome<HttpAnswer>> {
    const body = payload === undefined ? '' : JSON.stringify(payload);
    const timestamp = String(Math.floor(Date.now() / 1000));
    return vendorCall(log, {
      method,
      url: base + path,
      body: payload === undefined ? undefined : body,
      headers: {
        ...(payload === undefined ? {} : { 'content-type': 'application/json' }),
        'x-sim-timestamp': timestamp,
        'x-sim-signature': sign(key, timestamp, body).toString('hex'),
      },
      timeoutMs,
    });
  };
}

// ---------------------------------------------------------------- transforms (pure)

// Anything the vendor adds later maps to "still in progress": it is never mistaken for final.
const QRIS_STATUS = new Map<string, QrisStatus['status']>([
  ['PENDING', 'PENDING'],
  ['PAID', 'PAID'],
  ['EXPIRED', 'EXPIRED'],
]);
const DISBURSEMENT_STATUS = new Map<string, DisbursementStatus['status']>([
  ['PROCESSING', 'PROCESSING'],
  ['SUCCESS', 'SUCCESS'],
  ['FAILED', 'FAILED'],
]);
const REFUND_STATUS = new Map<string, RefundResult['status']>([
  ['SUCCEEDED', 'SUCCEEDED'],
  ['PENDING', 'PENDING'],
  ['FAILED', 'FAILED'],
]);
export const toQrisStatus = (theirs: string) => QRIS_STATUS.get(theirs) ?? 'PENDING';
export const toDisbursementStatus = (theirs: string) => DISBURSEMENT_STATUS.get(theirs) ?? 'PROCESSING';
export const toRefundStatus = (theirs: string) => REFUND_STATUS.get(theirs) ?? 'PENDING';

export function toCreateQrisRequest(input: CreateQrisInput) {
  return {
    reference: input.reference,
    amount: input.amount,
    expires_at: input.expiresAt?.toISOString() ?? null,
    merchant_name: input.merchantName,
    merchant_city: input.merchantCity,
    callback_url: input.callbackUrl,
  };
}

export function toDisburseRequest(input: DisburseInput) {
  return {
    reference: input.reference,
    channel: input.channel,
    bank_code: input.bankCode,
    ewallet_code: input.ewalletCode,
    account_number: input.accountNumber,
    account_name: input.accountName,
    amount: input.amount,
    callback_url: input.callbackUrl,
  };
}

export function toInquiryRequest(input: AccountInquiryInput) {
  return { channel: input.channel, bank_code: input.bankCode, ewallet_code: input.ewalletCode, account_number: input.accountNumber, account_name: input.accountName ?? null };
}

const timestamp = z.iso.datetime({ offset: true });
const qrisBody = z.object({
  id: z.string().min(1),
  reference: z.string(),
  status: z.string(),
  qris_string: z.string().min(1),
  amount: z.number().int().positive().optional(),
  paid_at: timestamp.nullish(),
  rrn: z.string().nullish(),
});
const disbursementBody = z.object({ id: z.string().min(1), reference: z.string(), status: z.string(), failure_reason: z.string().nullish() });
const refundBody = z.object({ id: z.string().min(1), status: z.string() });
const inquiryBody = z.object({ account_name: z.string().min(1) });
const errorBody = z.object({ error: z.object({ code: z.string(), message: z.string() }) });

export function fromQrisCreated(body: unknown, reference: string): QrisCreated | null {
  const parsed = qrisBody.safeParse(body);
  if (!parsed.success || parsed.data.reference !== reference) return null;
  return { vendorOrderId: parsed.data.id, qrisString: parsed.data.qris_string };
}

/** null when the answer is garbled: another order's, a PAID without paid_at, or a corrupt QRIS. */
export function fromQrisStatus(body: unknown, reference: string): QrisStatus | null {
  const parsed = qrisBody.safeParse(body);
  if (!parsed.success || parsed.data.reference !== reference) return null;
  const data = parsed.data;
  const status = toQrisStatus(data.status);
  if (status === 'PAID' && (!data.paid_at || !data.rrn)) return null;
  if (!parseQris(data.qris_string).ok) return null;
  return {
    status,
    vendorOrderId: data.id,
    qrisString: data.qris_string,
    paidAt: data.paid_at ? new Date(data.paid_at) : null,
    rrn: data.rrn ?? null,
    // A QR is paid its own amount: the amount the simulator's record of it shows.
    amount: status === 'PAID' ? (data.amount ?? null) : null,
  };
}

export function fromDisbursementStatus(body: unknown, reference: string): DisbursementStatus | null {
  const parsed = disbursementBody.safeParse(body);
  if (!parsed.success || parsed.data.reference !== reference) return null;
  const status = toDisbursementStatus(parsed.data.status);
  return { status, vendorDisbursementId: parsed.data.id, failureReason: status === 'FAILED' ? (parsed.data.failure_reason ?? 'UNKNOWN') : null };
}

const callbackBody = z.discriminatedUnion('type', [
  z.object({
    event_id: z.string().min(1),
    type: z.literal('qris.paid'),
    reference: z.string().min(1),
    id: z.string().min(1),
    amount: z.number().int().positive(),
    paid_at: timestamp,
    rrn: z.string().min(1),
  }),
  z.object({
    event_id: z.string().min(1),
    type: z.literal('disbursement.updated'),
    reference: z.string().min(1),
    id: z.string().min(1),
    // Only final states are callbacks Kasir acts on; anything else is not one we accept.
    status: z.enum(['SUCCESS', 'FAILED']),
    failure_reason: z.string().nullish(),
  }),
]);

export function toCallbackEvent(body: unknown): CallbackEvent | null {
  const parsed = callbackBody.safeParse(body);
  if (!parsed.success) return null;
  const c = parsed.data;
  if (c.type === 'qris.paid') {
    return { type: c.type, eventId: c.event_id, reference: c.reference, vendorOrderId: c.id, amount: c.amount, paidAt: new Date(c.paid_at), rrn: c.rrn };
  }
  return {
    type: c.type,
    eventId: c.event_id,
    reference: c.reference,
    vendorDisbursementId: c.id,
    status: c.status,
    failureReason: c.status === 'FAILED' ? (c.failure_reason ?? 'UNKNOWN') : null,
  };
}

// ---------------------------------------------------------------- classification

const vendorErrorCode = (body: unknown) => {
  const parsed = errorBody.safeParse(body);
  return parsed.success ? parsed.data.error.code : null;
};

/** 2xx: the parsed value, or unknown if unreadable; 4xx: failed; anything else: unknown. */
function interpret<T>(answer: HttpAnswer, parse: (body: unknown) => T | null): Outcome<T> {
  return interpretAnswer(answer, parse, ({ status, body }) => {
    const error = errorBody.safeParse(body);
    return `HTTP ${status}${error.success ? ` ${error.data.error.code}: ${error.data.error.message}` : ''}`;
  });
}

function verifyCallback(secret: string, headers: Record<string, string | string[] | undefined>, rawBody: Buffer): boolean {
  const lower = new Map(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]));
  const timestamp = lower.get('x-sim-timestamp');
  const signature = lower.get('x-sim-signature');
  if (typeof timestamp !== 'string' || typeof signature !== 'string') return false;
  if (!/^\d{1,12}$/.test(timestamp) || Math.abs(Date.now() / 1000 - Number(timestamp)) > MAX_SKEW_SECONDS) return false;
  if (!/^[0-9a-fA-F]{64}$/.test(signature)) return false;
  return timingSafeEqual(Buffer.from(signature, 'hex'), sign(secret, timestamp, rawBody));
}

export function createSimulatorGateway(vendor: VendorRecord, opts: { timeoutMs?: number } = {}): Gateway {
  const secret = vendor.credentials.secret;
  if (!secret) throw new Error(`vendor ${vendor.code}: credentials.secret is required for kind simulator`);
  const request = createClient(vendor, opts.timeoutMs ?? DEFAULT_TIMEOUT_MS);
  const path = (template: string, reference: string) => template.replace(':ref', encodeURIComponent(reference));

  async function inquire(input: AccountInquiryInput): Promise<Outcome<AccountInquiry>> {
    const answer = await request('POST', '/v1/account-inquiry', toInquiryRequest(input));
    if (answer.kind !== 'ok') return answer;
    const code = vendorErrorCode(answer.value.body);
    if (answer.value.status === 404 && code === 'ACCOUNT_NOT_FOUND') return ok({ status: 'NOT_FOUND', reason: code });
    return interpret(answer.value, (body) => {
      const parsed = inquiryBody.safeParse(body);
      return parsed.success ? { status: 'FOUND' as const, accountName: parsed.data.account_name } : null;
    });
  }

  return {
    async createQris(input) {
      const answer = await request('POST', '/v1/qris', toCreateQrisRequest(input));
      if (answer.kind !== 'ok') return answer;
      const outcome = interpret(answer.value, (body) => fromQrisCreated(body, input.reference));
      if (outcome.kind !== 'ok') return outcome;
      // A QR payers' apps would refuse cannot be repaired by asking this vendor again (creates
      // are idempotent on reference, so it returns the same string): a definite failure here.
      const problem = validateVendorQris(outcome.value.qrisString, input.amount);
      return problem ? failed(`vendor returned an unusable QRIS: ${problem}`) : outcome;
    },

    async queryQris(reference) {
      const answer = await request('GET', path('/v1/qris/:ref', reference));
      if (answer.kind !== 'ok') return answer;
      if (answer.value.status === 404 && vendorErrorCode(answer.value.body) === 'QR_NOT_FOUND') {
        return ok(QR_NOT_FOUND);
      }
      return interpret(answer.value, (body) => fromQrisStatus(body, reference));
    },

    async refund(input: RefundInput) {
      const answer = await request('POST', path('/v1/qris/:ref/refunds', input.reference), {
        refund_reference: input.refundReference,
        amount: input.amount,
      });
      if (answer.kind !== 'ok') return answer;
      return interpret(answer.value, (body) => {
        const parsed = refundBody.safeParse(body);
        return parsed.success ? { vendorRefundId: parsed.data.id, status: toRefundStatus(parsed.data.status) } : null;
      });
    },

    async queryRefund(query) {
      const answer = await request('GET', `${path('/v1/qris/:ref/refunds', query.reference)}/${encodeURIComponent(query.refundReference)}`);
      if (answer.kind !== 'ok') return answer;
      if (answer.value.status === 404 && vendorErrorCode(answer.value.body) === 'REFUND_NOT_FOUND') {
        return ok({ status: 'NOT_FOUND' as const, vendorRefundId: null, failureReason: null });
      }
      return interpret(answer.value, (body) => {
        const parsed = refundBody.safeParse(body);
        if (!parsed.success) return null;
        const status = toRefundStatus(parsed.data.status);
        return { status, vendorRefundId: parsed.data.id, failureReason: status === 'FAILED' ? 'FAILED' : null };
      });
    },

    async disburse(input) {
      // The name rule (gateways/name-rule.ts): the bank's holder must be the payout's. An
      // inquiry that gives no holder leaves the account to the transfer, which the simulator
      // settles by its own magic numbers (a missing account FAILED INVALID_ACCOUNT).
      if (holderToCheck(input)) {
        const refusal = holderRefusal(input, await inquire({ channel: input.channel, bankCode: input.bankCode, ewalletCode: input.ewalletCode, accountNumber: input.accountNumber, accountName: input.accountName }), 'the bank');
        if (refusal) return refusal;
      }
      const answer = await request('POST', '/v1/disbursements', toDisburseRequest(input));
      if (answer.kind !== 'ok') return answer;
      return interpret(answer.value, (body) => {
        const parsed = disbursementBody.safeParse(body);
        return parsed.success && parsed.data.reference === input.reference ? { vendorDisbursementId: parsed.data.id } : null;
      });
    },

    async queryDisbursement(reference) {
      const answer = await request('GET', path('/v1/disbursements/:ref', reference));
      if (answer.kind !== 'ok') return answer;
      if (answer.value.status === 404 && vendorErrorCode(answer.value.body) === 'DISBURSEMENT_NOT_FOUND') {
        return ok(PAYOUT_NOT_FOUND);
      }
      return interpret(answer.value, (body) => fromDisbursementStatus(body, reference));
    },

    inquireAccount: inquire,

    async check() {
      // A signed query for a reference no order has: the vendor's named 404 proves the URL and
      // the secret; a signature refusal (401) or anything else says what is wrong.
      const answer = await request('GET', path('/v1/qris/:ref', 'KASIR-CHECK'));
      if (answer.kind !== 'ok') return answer;
      const { status, body } = answer.value;
      if (status === 404 && vendorErrorCode(body) === 'QR_NOT_FOUND') return ok('signed query answered');
      return interpret<string>(answer.value, () => null);
    },

    reportDay: (day) => simulatorReport(request, day),

    // The callback secret is the account's shared HMAC secret: whoever holds the account can sign.
    paymentCallbacksAreHints: true,

    async parseCallback(headers, rawBody) {
      if (!verifyCallback(secret, headers, rawBody)) return null;
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
