// Xendit's wire shapes ⇄ Kasir's terms, pure: request bodies, channel codes, statuses, error
// verdicts and callbacks (docs/vendors/xendit.md; ../shared/vendors/CONTRACTS.md part 1).
// Amounts are JSON integers of rupiah both ways; a fractional amount from Xendit is refused,
// never rounded.
import { z } from 'zod';
import type { CallbackEvent, CreateQrisInput, DisburseInput, DisbursementStatus, QrisStatus, RefundResult } from '../gateway.ts';

/** The QR Codes API version Kasir speaks; its callbacks carry the same `api_version`. */
export const QR_API_VERSION = '2022-07-31';

export const PATHS = {
  qrCodes: '/qr_codes',
  qrCode: (id: string) => `/qr_codes/${encodeURIComponent(id)}`,
  qrPayments: (id: string) => `/qr_codes/${encodeURIComponent(id)}/payments`,
  qrRefunds: (paymentId: string) => `/qr_codes/payments/${encodeURIComponent(paymentId)}/refunds`,
  qrRefund: (paymentId: string, refundId: string) => `/qr_codes/payments/${encodeURIComponent(paymentId)}/refunds/${encodeURIComponent(refundId)}`,
  payouts: '/v2/payouts',
  payoutsByReference: (reference: string) => `/v2/payouts?reference_id=${encodeURIComponent(reference)}`,
  balance: '/balance',
} as const;

// ---------------------------------------------------------------- channel codes

/**
 * Kasir's bank and e-wallet short codes → Xendit payout channel codes. ID_BCA, ID_MANDIRI and
 * ID_DANA are in Xendit's docs; the rest follow the same ID_<bank> pattern and are checked
 * against Xendit's channel list at go-live (docs/vendors/xendit.md). A code missing here is
 * refused before anything is sent, so routing can take the payout elsewhere.
 */
const BANK_CHANNELS: Readonly<Record<string, string>> = {
  BCA: 'ID_BCA',
  MANDIRI: 'ID_MANDIRI',
  BNI: 'ID_BNI',
  BRI: 'ID_BRI',
  CIMB: 'ID_CIMB',
  PERMATA: 'ID_PERMATA',
  BTN: 'ID_BTN',
  DANAMON: 'ID_DANAMON',
  PANIN: 'ID_PANIN',
  MAYBANK: 'ID_MAYBANK',
  BSI: 'ID_BSI',
  OCBC: 'ID_OCBC',
  MEGA: 'ID_MEGA',
  BTPN: 'ID_BTPN',
  SINARMAS: 'ID_SINARMAS',
  UOB: 'ID_UOB',
  MUAMALAT: 'ID_MUAMALAT',
  JAGO: 'ID_JAGO',
  SEABANK: 'ID_SEABANK',
  BJB: 'ID_BJB',
  DKI: 'ID_DKI',
  HSBC: 'ID_HSBC',
  CITIBANK: 'ID_CITIBANK',
  DBS: 'ID_DBS',
};

/** GOPAYDRIVER and KASPRO have no Xendit payout channel. */
const EWALLET_CHANNELS: Readonly<Record<string, string>> = {
  DANA: 'ID_DANA',
  OVO: 'ID_OVO',
  GOPAY: 'ID_GOPAY',
  SHOPEEPAY: 'ID_SHOPEEPAY',
  LINKAJA: 'ID_LINKAJA',
};

export function channelCodeOf(input: { channel: 'BANK' | 'EWALLET'; bankCode: string | null; ewalletCode: string | null }): string | null {
  const table = input.channel === 'BANK' ? BANK_CHANNELS : EWALLET_CHANNELS;
  const code = (input.channel === 'BANK' ? input.bankCode : input.ewalletCode)?.toUpperCase();
  return code !== undefined && Object.hasOwn(table, code) ? table[code] : null;
}

// ---------------------------------------------------------------- requests

export function toCreateQrRequest(input: CreateQrisInput) {
  return {
    reference_id: input.reference,
    type: 'DYNAMIC',
    currency: 'IDR',
    amount: input.amount,
    ...(input.expiresAt ? { expires_at: input.expiresAt.toISOString() } : {}),
  };
}

export function toPayoutRequest(input: DisburseInput, channelCode: string, accountName: string) {
  return {
    reference_id: input.reference,
    channel_code: channelCode,
    channel_properties: { account_number: input.accountNumber, account_holder_name: accountName },
    amount: input.amount,
    currency: 'IDR',
    description: `Kasir ${input.reference}`,
  };
}

/**
 * The QR refund body: `amount` is all Xendit documents for this endpoint (help centre article
 * 17209624920345). No metadata, no reason: nothing Kasir could find the refund by again, so the
 * refund is found by the id Xendit answers with (docs/vendors/xendit.md).
 */
export function toRefundRequest(amount: number) {
  return { amount };
}

// ---------------------------------------------------------------- answers

const rupiah = z.number().int().nonnegative();
const stamp = z.iso.datetime({ offset: true });

const qrCode = z.object({
  id: z.string().min(1),
  reference_id: z.string(),
  qr_string: z.string().min(1),
  amount: rupiah.nullish(),
  status: z.string(),
  expires_at: stamp.nullish(),
});

const qrPayment = z.object({
  id: z.string().min(1),
  qr_id: z.string().nullish(),
  reference_id: z.string().nullish(),
  amount: rupiah,
  status: z.string(),
  created: stamp,
  payment_detail: z.object({ receipt_id: z.string().nullish() }).nullish(),
});

const refund = z.object({
  id: z.string().min(1),
  status: z.string(),
  refund_amount: rupiah.nullish(),
  failure_code: z.string().nullish(),
  metadata: z.record(z.string(), z.unknown()).nullish(),
});

const payout = z.object({
  id: z.string().min(1),
  reference_id: z.string(),
  amount: rupiah,
  status: z.string(),
  failure_code: z.string().nullish(),
});

/** A list answer: `{data: [...]}` or a bare array (Xendit's list endpoints differ). */
const listOf = <T extends z.ZodType>(item: T) => z.union([z.object({ data: z.array(item) }).transform((l) => l.data), z.array(item)]);

export const errorBody = z.object({ error_code: z.string(), message: z.string().optional() });

export function fromQrCreated(body: unknown, reference: string): { vendorOrderId: string; qrisString: string } | null {
  const parsed = qrCode.safeParse(body);
  if (!parsed.success || parsed.data.reference_id !== reference) return null;
  return { vendorOrderId: parsed.data.id, qrisString: parsed.data.qr_string };
}

export function fromQrCode(body: unknown, reference: string) {
  const parsed = qrCode.safeParse(body);
  return parsed.success && parsed.data.reference_id === reference ? parsed.data : null;
}

export function fromPayments(body: unknown) {
  const parsed = listOf(qrPayment).safeParse(body);
  return parsed.success ? parsed.data : null;
}

export function fromRefund(body: unknown) {
  const parsed = refund.safeParse(body);
  return parsed.success ? parsed.data : null;
}

export function fromRefunds(body: unknown) {
  const parsed = listOf(refund).safeParse(body);
  return parsed.success ? parsed.data : null;
}

export function fromPayout(body: unknown) {
  const parsed = payout.safeParse(body);
  return parsed.success ? parsed.data : null;
}

export function fromPayouts(body: unknown) {
  const parsed = listOf(payout).safeParse(body);
  return parsed.success ? parsed.data : null;
}

/** A QR payment that took the payer's money (COMPLETED is the V1 API's word for it). */
export const isPaid = (status: string) => status === 'SUCCEEDED' || status === 'COMPLETED';

/** A QR and its payments → Kasir's view. ACTIVE until paid; INACTIVE or past expiry is EXPIRED. */
export function toQrisStatus(qr: z.infer<typeof qrCode>, payments: z.infer<typeof qrPayment>[], now = new Date()): QrisStatus {
  const paid = payments.find((p) => isPaid(p.status));
  if (paid) return { status: 'PAID', vendorOrderId: qr.id, qrisString: qr.qr_string, paidAt: new Date(paid.created), rrn: paid.payment_detail?.receipt_id ?? paid.id, amount: paid.amount };
  const expired = qr.status === 'INACTIVE' || (qr.expires_at != null && new Date(qr.expires_at) <= now);
  return { status: expired ? 'EXPIRED' : 'PENDING', vendorOrderId: qr.id, qrisString: qr.qr_string, paidAt: null, rrn: null, amount: null };
}

/**
 * Answers to a reused payout key: v2's documented 400 DUPLICATE_TRANSACTION_ERROR, and any 409
 * whatever its code (DUPLICATE_ERROR as Xendit's SDK answers a reused key, a request still in
 * progress...): a conflict means Xendit already received this key, never "did nothing".
 */
export const DUPLICATE_PAYOUT = (status: number, code: string | null) => (status === 400 && code === 'DUPLICATE_TRANSACTION_ERROR') || status === 409;

const REFUND_STATUS: Readonly<Record<string, RefundResult['status']>> = { SUCCEEDED: 'SUCCEEDED', FAILED: 'FAILED', CANCELLED: 'FAILED' };
/** Anything else (PENDING, or a status Xendit adds later) is still in progress. */
export const toRefundStatus = (theirs: string): RefundResult['status'] => REFUND_STATUS[theirs] ?? 'PENDING';

/**
 * Payout statuses. REVERSED is a payout that SUCCEEDED and then bounced: Xendit returned the money
 * to the account's balance ("Funds have been refunded back to the merchant's available balance",
 * payout webhook page), so it reads as FAILED with `reversed` (docs/vendors/xendit.md). Unknown
 * statuses are still in progress: never mistaken for final.
 */
const PAYOUT_STATUS: Readonly<Record<string, DisbursementStatus['status']>> = {
  SUCCEEDED: 'SUCCESS',
  FAILED: 'FAILED',
  CANCELLED: 'FAILED',
  COMPLIANCE_REJECTED: 'FAILED',
  REVERSED: 'FAILED',
};
export const toPayoutStatus = (theirs: string): DisbursementStatus['status'] => PAYOUT_STATUS[theirs] ?? 'PROCESSING';

export function toDisbursementStatus(p: z.infer<typeof payout>): DisbursementStatus {
  const status = toPayoutStatus(p.status);
  const failureReason = status === 'FAILED' ? (p.status === 'REVERSED' ? reversalReason(p.failure_code) : (p.failure_code ?? p.status)) : null;
  return { status, vendorDisbursementId: p.id, failureReason, ...(p.status === 'REVERSED' ? { reversed: true as const } : {}) };
}

/** The failure_reason of a reversed payout: says it was reversed, with Xendit's code when it gives one. */
export function reversalReason(failureCode: string | null | undefined): string {
  return failureCode ? `REVERSED: ${failureCode}` : 'REVERSED';
}

// ---------------------------------------------------------------- callbacks

const callback = z.object({
  event: z.string(),
  data: z.record(z.string(), z.unknown()),
});

/**
 * A verified callback body → the event Kasir acts on; one it does not act on is `noted` (so
 * Xendit stops retrying it); null only when the body is not a Xendit callback at all. Event
 * ids dedupe on the object id and its final status, so a repeated or reordered delivery
 * changes nothing twice.
 */
export function toCallbackEvent(body: unknown): CallbackEvent | null {
  const parsed = callback.safeParse(body);
  if (!parsed.success) return null;
  const event = actedOn(parsed.data.event, parsed.data.data);
  if (event) return event;
  const { data } = parsed.data;
  const id = typeof data.id === 'string' ? data.id : '';
  const reference = typeof data.reference_id === 'string' ? data.reference_id : '';
  const status = typeof data.status === 'string' ? data.status : '';
  return { type: 'noted', eventId: `xendit:${parsed.data.event}:${id}:${status}`, reference, what: `${parsed.data.event} ${status}`.trim() };
}

// The payment a callback reports must name its QR and Kasir's reference (a module constant: see db/row-shapes.ts on why).
const qrPaymentCallback = qrPayment.extend({ qr_id: z.string().min(1), reference_id: z.string().min(1) });

function actedOn(event: string, data: Record<string, unknown>): CallbackEvent | null {
  if (event === 'qr.payment') {
    const p = qrPaymentCallback.safeParse(data);
    if (!p.success || p.data.status !== 'SUCCEEDED') return null;
    return {
      type: 'qris.paid',
      eventId: `xendit:${p.data.id}`,
      reference: p.data.reference_id,
      vendorOrderId: p.data.qr_id,
      amount: p.data.amount,
      paidAt: new Date(p.data.created),
      rrn: p.data.payment_detail?.receipt_id ?? p.data.id,
    };
  }
  if (event === 'payout.succeeded' || event === 'payout.failed') {
    const p = payout.safeParse(data);
    if (!p.success) return null;
    const status = event === 'payout.succeeded' ? 'SUCCESS' : 'FAILED';
    return {
      type: 'disbursement.updated',
      eventId: `xendit:${p.data.id}:${status}`,
      reference: p.data.reference_id,
      vendorDisbursementId: p.data.id,
      status,
      failureReason: status === 'FAILED' ? (p.data.failure_code ?? 'FAILED') : null,
    };
  }
  if (event === 'payout.reversed') {
    // A hint, like a payment: the read of the payout at Xendit decides (api/payment-hints.ts).
    const p = payout.safeParse(data);
    if (!p.success) return null;
    return {
      type: 'disbursement.reversed',
      eventId: `xendit:${p.data.id}:REVERSED`,
      reference: p.data.reference_id,
      vendorDisbursementId: p.data.id,
      failureReason: reversalReason(p.data.failure_code),
    };
  }
  if (event === 'qr.refund') {
    const r = refund.safeParse(data);
    if (!r.success) return null;
    const status = toRefundStatus(r.data.status);
    if (status === 'PENDING') return null;
    // Xendit does not echo Kasir's reference: the refund is the one Xendit gave this id.
    return {
      type: 'refund.updated',
      eventId: `xendit:${r.data.id}:${status}`,
      reference: '',
      vendorRefundId: r.data.id,
      status,
      failureReason: status === 'FAILED' ? (r.data.failure_code ?? 'FAILED') : null,
    };
  }
  return null;
}
