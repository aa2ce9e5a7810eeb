// SNAP BI, pure: Kasir's requests in SNAP's shapes and SNAP's answers in Kasir's terms, the
// string-to-sign formulas, amounts, timestamps and the responseCode table. No I/O here; the
// client (snap-client.ts) sends and signs, the adapter (snap.ts) classifies.
//
// Amounts are whole rupiah both ways: out as {value: "150000.00", currency: "IDR"}; back only
// when the value has no fraction (or ".00"). A provider's "10000.50" is refused, never rounded:
// an answer with it is treated as garbled.
import type { CallbackAnswer, DisbursementStatus, QrisStatus } from '../gateway.ts';

// ---------------------------------------------------------------- service codes and paths

/** Service codes (the middle two digits of a responseCode). */
export const SERVICE = {
  inquiry: '16',
  transferInterbank: '18',
  transferStatus: '36',
  qrGenerate: '47',
  qrQuery: '51',
  qrNotify: '52',
  token: '73',
  qrRefund: '78',
} as const;

/** Paths below the provider's base URL; the signed EndpointUrl is the full path (base + this). */
export const PATHS = {
  token: '/v1.0/access-token/b2b',
  qrGenerate: '/v1.0/qr/qr-mpm-generate',
  qrQuery: '/v1.0/qr/qr-mpm-query',
  qrRefund: '/v1.0/qr/qr-mpm-refund',
  qrNotify: '/v1.0/qr/qr-mpm-notify',
  inquiry: '/v1.0/account-inquiry-external',
  transferInterbank: '/v1.0/transfer-interbank',
  transferStatus: '/v1.0/transfer/status',
} as const;

/** Paths providers call on Kasir (after /callbacks/<code>); some use version 1.1 (BRI). */
export const isNotifyPath = (path: string) => /^\/v1\.\d\/qr\/qr-mpm-notify$/.test(path);
export const isTokenPath = (path: string) => /^\/v1\.\d\/access-token\/b2b$/.test(path);

// ---------------------------------------------------------------- time

const JAKARTA_OFFSET_MS = 7 * 3600_000;

/** X-TIMESTAMP as the standard writes it: `2024-01-01T10:00:00+07:00` (Jakarta time, no millis). */
export function jakartaTimestamp(at: Date = new Date()): string {
  return `${new Date(at.getTime() + JAKARTA_OFFSET_MS).toISOString().slice(0, 19)}+07:00`;
}

/** The Jakarta calendar day of an instant, `yyyyMMdd` (X-EXTERNAL-ID is unique per such day). */
export function jakartaDay(at: Date = new Date()): string {
  return new Date(at.getTime() + JAKARTA_OFFSET_MS).toISOString().slice(0, 10).replaceAll('-', '');
}

// Providers send `+07:00` or `Z`, with or without milliseconds (CONTRACTS.md 3.3).
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?(Z|[+-]\d{2}:\d{2})$/;

/** An ISO 8601 timestamp with an offset, or null. */
export function parseTimestamp(value: unknown): Date | null {
  if (typeof value !== 'string' || !TIMESTAMP.test(value)) return null;
  const at = new Date(value);
  return Number.isNaN(at.getTime()) ? null : at;
}

// ---------------------------------------------------------------- amounts

export interface SnapAmount {
  value: string;
  currency: 'IDR';
}

/** Whole rupiah to SNAP's String(16,2). */
export function toSnapAmount(rupiah: number): SnapAmount {
  if (!Number.isSafeInteger(rupiah) || rupiah < 0) throw new Error(`not a whole-rupiah amount: ${rupiah}`);
  return { value: `${rupiah}.00`, currency: 'IDR' };
}

/** SNAP's amount object to whole rupiah; null for anything else (a fraction, another currency). */
export function fromSnapAmount(amount: unknown): number | null {
  if (typeof amount !== 'object' || amount === null) return null;
  const { value, currency } = amount as { value?: unknown; currency?: unknown };
  if (currency !== 'IDR' || typeof value !== 'string') return null;
  const match = /^(\d{1,16})(?:\.(\d{1,2}))?$/.exec(value);
  if (!match || (match[2] !== undefined && !/^0+$/.test(match[2]))) return null;
  const rupiah = Number(match[1]);
  return Number.isSafeInteger(rupiah) ? rupiah : null;
}

// ---------------------------------------------------------------- signing strings

/**
 * JSON with the whitespace outside strings removed, everything else byte for byte: key order,
 * escapes and number spelling stay as sent (the standard's "minify"; re-serialising parsed
 * JSON could change them and break a signature).
 */
export function minifyJson(text: string): string {
  let out = '';
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      out += c;
      if (c === '\\') out += text[++i] ?? '';
      else if (c === '"') inString = false;
    } else if (c === '"') {
      inString = true;
      out += c;
    } else if (c !== ' ' && c !== '\n' && c !== '\r' && c !== '\t') {
      out += c;
    }
  }
  return out;
}

/** B2B token request: `clientKey|timestamp`, signed SHA256withRSA by the caller's private key. */
export const tokenStringToSign = (clientKey: string, timestamp: string) => `${clientKey}|${timestamp}`;

/** Service call: `METHOD:path:token:lowerhex(sha256(minified body)):timestamp`, HMAC-SHA512 with the client secret. */
export const serviceStringToSign = (method: string, path: string, token: string, bodySha256Hex: string, timestamp: string) =>
  `${method.toUpperCase()}:${path}:${token}:${bodySha256Hex.toLowerCase()}:${timestamp}`;

/** Provider → Kasir notify (asymmetric): `POST:path:lowerhex(sha256(minified body)):timestamp`, no token. */
export const notifyStringToSign = (path: string, bodySha256Hex: string, timestamp: string) => `POST:${path}:${bodySha256Hex.toLowerCase()}:${timestamp}`;

// ---------------------------------------------------------------- responseCode

export interface ResponseCode {
  http: number;
  service: string;
  case: string;
}

/** `4011801` → {http: 401, service: '18', case: '01'}; null when not 7 digits. */
export function parseResponseCode(value: unknown): ResponseCode | null {
  if (typeof value !== 'string') return null;
  const match = /^([1-5]\d{2})(\d{2})(\d{2})$/.exec(value);
  return match ? { http: Number(match[1]), service: match[2], case: match[3] } : null;
}

/**
 * What a SNAP answer means, before any service's own reading of it:
 * - success: 200/202 in both the HTTP status and the responseCode (202 = accepted, in progress).
 * - refused: a 4xx responseCode (or a bare 4xx without one): the provider did not do it.
 * - duplicate: 409, the provider already has this X-EXTERNAL-ID (case 00) or reference (case 01):
 *   it may have acted on the first, so the caller resolves by querying, never by sending again.
 * - unknown: 5xx in either, a contradiction between them, or no readable responseCode on a 2xx.
 */
export type Verdict =
  | { kind: 'success'; http: 200 | 202; body: Record<string, unknown> }
  | { kind: 'refused'; http: number; case: string | null; reason: string }
  | { kind: 'duplicate'; case: string; reason: string }
  | { kind: 'unknown'; reason: string };

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

export function verdictOf(status: number, body: unknown): Verdict {
  const record = isRecord(body) ? body : null;
  const code = parseResponseCode(record?.responseCode);
  const message = typeof record?.responseMessage === 'string' ? record.responseMessage.slice(0, 150) : '';
  const said = code ? `${record!.responseCode as string} ${message}`.trim() : 'no responseCode';
  const reason = `HTTP ${status} ${said}`;
  if (status >= 500 || (code && code.http >= 500)) return { kind: 'unknown', reason };
  if (status >= 200 && status < 300) {
    if (!code) return { kind: 'unknown', reason: `unreadable ${reason}` };
    if (code.http === 200 || code.http === 202) return { kind: 'success', http: code.http, body: record! };
    if (code.http >= 400 && code.http < 500) return code.http === 409 ? { kind: 'duplicate', case: code.case, reason } : { kind: 'refused', http: code.http, case: code.case, reason };
    return { kind: 'unknown', reason: `unexpected ${reason}` };
  }
  if (status >= 400 && status < 500) {
    // Some providers answer every refusal with one HTTP status: the responseCode is the finer word.
    if (code && code.http < 400) return { kind: 'unknown', reason: `contradictory ${reason}` };
    const http = code?.http ?? status;
    if (http === 409) return { kind: 'duplicate', case: code?.case ?? '00', reason };
    return { kind: 'refused', http, case: code?.case ?? null, reason };
  }
  return { kind: 'unknown', reason: `unexpected ${reason}` };
}

// ---------------------------------------------------------------- status tables

// latestTransactionStatus (CONTRACTS.md 3.4): 00 Success, 01 Initiated, 02 Paying, 03 Pending,
// 04 Refunded, 05 Canceled, 06 Failed, 07 Not found, 08 Expired, 09 Rejected. Anything else is
// "still in progress", never mistaken for final.
const QR_STATUS = new Map<string, QrisStatus['status']>([
  ['00', 'PAID'],
  ['01', 'PENDING'],
  ['02', 'PENDING'],
  ['03', 'PENDING'],
  // Refunds are Kasir's own (only Kasir asks for them): a refunded QR was paid.
  ['04', 'PAID'],
  // Canceled, failed, expired, rejected: the QR can no longer be paid.
  ['05', 'EXPIRED'],
  ['06', 'EXPIRED'],
  ['07', 'NOT_FOUND'],
  ['08', 'EXPIRED'],
  ['09', 'EXPIRED'],
]);
export const toQrisStatus = (theirs: unknown) => QR_STATUS.get(String(theirs)) ?? 'PENDING';

const TRANSFER_STATUS = new Map<string, DisbursementStatus['status']>([
  ['00', 'SUCCESS'],
  ['01', 'PROCESSING'],
  ['02', 'PROCESSING'],
  ['03', 'PROCESSING'],
  // A transfer refunded back to the source, canceled, failed, expired or rejected paid nobody.
  ['04', 'FAILED'],
  ['05', 'FAILED'],
  ['06', 'FAILED'],
  ['07', 'NOT_FOUND'],
  ['08', 'FAILED'],
  ['09', 'FAILED'],
]);
export const toTransferStatus = (theirs: unknown) => TRANSFER_STATUS.get(String(theirs)) ?? 'PROCESSING';

/** Why an account inquiry's refusal means "no such account can receive money" (else: not an answer). */
const ACCOUNT_REFUSALS = new Map<string, string>([
  ['404:11', 'INVALID_ACCOUNT'],
  ['403:18', 'INACTIVE_ACCOUNT'],
  ['403:09', 'DORMANT_ACCOUNT'],
]);
export const accountRefusal = (http: number, caseCode: string | null) => (caseCode === null ? null : (ACCOUNT_REFUSALS.get(`${http}:${caseCode}`) ?? null));

// ---------------------------------------------------------------- requests

export interface SnapSettings {
  merchantId: string;
  terminalId: string | null;
  qrQueryServiceCode: '47' | '51';
  bankBranchCode: string | null;
  sourceAccountNo: string | null;
}

/** beneficiaryBankCode as the provider takes it: the 3-digit BI code, or it and a 4-digit branch code. */
export const beneficiaryBankCode = (biCode: string, settings: Pick<SnapSettings, 'bankBranchCode'>) => biCode + (settings.bankBranchCode ?? '');

export function toGenerateRequest(input: { reference: string; amount: number; expiresAt: Date | null }, settings: SnapSettings) {
  return {
    partnerReferenceNo: input.reference,
    amount: toSnapAmount(input.amount),
    merchantId: settings.merchantId,
    ...(settings.terminalId ? { terminalId: settings.terminalId } : {}),
    ...(input.expiresAt ? { validityPeriod: jakartaTimestamp(input.expiresAt) } : {}),
  };
}

/** originalReferenceNo is the provider's referenceNo from the generate answer (Kasir's vendor_order_id). */
export function toQueryRequest(reference: string, vendorOrderId: string, settings: SnapSettings) {
  return { originalReferenceNo: vendorOrderId, originalPartnerReferenceNo: reference, serviceCode: settings.qrQueryServiceCode, merchantId: settings.merchantId };
}

export function toRefundRequest(input: { reference: string; vendorOrderId: string; refundReference: string; amount: number }, settings: SnapSettings) {
  return {
    merchantId: settings.merchantId,
    originalPartnerReferenceNo: input.reference,
    originalReferenceNo: input.vendorOrderId,
    partnerRefundNo: input.refundReference,
    refundAmount: toSnapAmount(input.amount),
    reason: 'Refund requested by the merchant',
  };
}

export function toInquiryRequest(biCode: string, accountNumber: string, settings: Pick<SnapSettings, 'bankBranchCode'>) {
  return { beneficiaryBankCode: beneficiaryBankCode(biCode, settings), beneficiaryAccountNo: accountNumber };
}

export function toTransferRequest(
  input: { reference: string; amount: number; accountNumber: string; accountName: string; biCode: string },
  settings: Pick<SnapSettings, 'bankBranchCode' | 'sourceAccountNo'>,
  at: Date = new Date(),
) {
  return {
    partnerReferenceNo: input.reference,
    amount: toSnapAmount(input.amount),
    beneficiaryAccountName: input.accountName.slice(0, 100),
    beneficiaryAccountNo: input.accountNumber,
    beneficiaryBankCode: beneficiaryBankCode(input.biCode, settings),
    ...(settings.sourceAccountNo ? { sourceAccountNo: settings.sourceAccountNo } : {}),
    transactionDate: jakartaTimestamp(at),
    // The standard's extension slot; some providers require a remark (Midtrans: String(50)).
    additionalInfo: { remark: input.reference.slice(0, 50) },
  };
}

export function toTransferStatusRequest(reference: string) {
  return { originalPartnerReferenceNo: reference, serviceCode: SERVICE.transferInterbank };
}

// ---------------------------------------------------------------- answers

const text = (value: unknown): string | null => (typeof value === 'string' && value.length > 0 ? value : null);
const info = (body: Record<string, unknown>): Record<string, unknown> => (isRecord(body.additionalInfo) ? body.additionalInfo : {});

/** Some providers add the QR string to a query answer (top level or additionalInfo); most do not. */
const qrContentOf = (body: Record<string, unknown>) => text(body.qrContent) ?? text(info(body).qrContent);
/** The payment's retrieval reference number, where providers put it. */
const rrnOf = (body: Record<string, unknown>) => {
  const extra = info(body);
  return text(extra.rrn) ?? text(extra.retrievalReferenceNo) ?? text(extra.referenceNumber) ?? text(body.rrn);
};
const paidTimeOf = (body: Record<string, unknown>) => parseTimestamp(body.paidTime) ?? parseTimestamp(info(body).paidTime);

/** A generate answer for our reference; null when garbled (another reference, no QR, no id). */
export function fromGenerated(body: Record<string, unknown>, reference: string): { vendorOrderId: string; qrisString: string } | null {
  const qrContent = text(body.qrContent);
  const referenceNo = text(body.referenceNo);
  if (!qrContent || !referenceNo) return null;
  if (body.partnerReferenceNo !== undefined && body.partnerReferenceNo !== reference) return null;
  return { vendorOrderId: referenceNo, qrisString: qrContent };
}

/** A query answer for our reference; null when garbled (another reference, a fractional amount). */
export function fromQueried(body: Record<string, unknown>, reference: string, now: Date = new Date()): QrisStatus | null {
  if (body.originalPartnerReferenceNo !== undefined && body.originalPartnerReferenceNo !== reference) return null;
  if (body.amount !== undefined && fromSnapAmount(body.amount) === null) return null;
  const status = toQrisStatus(body.latestTransactionStatus);
  const vendorOrderId = text(body.originalReferenceNo);
  if (status === 'NOT_FOUND') return { status, vendorOrderId: null, qrisString: null, paidAt: null, rrn: null, amount: null };
  return {
    status,
    vendorOrderId,
    qrisString: qrContentOf(body),
    // paidTime is conditional in the standard: without it, the moment Kasir learned of the payment.
    paidAt: status === 'PAID' ? (paidTimeOf(body) ?? now) : null,
    rrn: status === 'PAID' ? rrnOf(body) : null,
    amount: status === 'PAID' && body.amount !== undefined ? fromSnapAmount(body.amount) : null,
  };
}

/** The refund of `partnerRefundNo` in a query answer's additionalInfo.refundHistory, if listed. */
export function refundInHistory(body: Record<string, unknown>, partnerRefundNo: string): { vendorRefundId: string; status: 'SUCCEEDED' | 'PENDING' | 'FAILED' } | null {
  const history = info(body).refundHistory;
  if (!Array.isArray(history)) return null;
  for (const entry of history) {
    if (!isRecord(entry) || entry.partnerRefundNo !== partnerRefundNo) continue;
    const status = entry.refundStatus === '00' ? 'SUCCEEDED' : entry.refundStatus === '06' || entry.refundStatus === '09' ? 'FAILED' : 'PENDING';
    return { vendorRefundId: text(entry.refundNo) ?? partnerRefundNo, status };
  }
  return null;
}

export function fromTransferStatus(body: Record<string, unknown>, reference: string): DisbursementStatus | null {
  if (body.originalPartnerReferenceNo !== undefined && body.originalPartnerReferenceNo !== reference) return null;
  if (body.amount !== undefined && fromSnapAmount(body.amount) === null) return null;
  const status = toTransferStatus(body.latestTransactionStatus);
  if (status === 'NOT_FOUND') return { status, vendorDisbursementId: null, failureReason: null };
  const desc = text(body.transactionStatusDesc);
  return {
    status,
    vendorDisbursementId: text(body.originalReferenceNo) ?? text(body.referenceNo),
    failureReason: status === 'FAILED' ? `${String(body.latestTransactionStatus)}${desc ? ` ${desc}` : ''}`.slice(0, 200) : null,
  };
}

// ---------------------------------------------------------------- notify

/**
 * A QR MPM notify, whatever its status. originalReferenceNo (the provider's id, Kasir's
 * vendor_order_id) is the mandatory key; originalPartnerReferenceNo is optional at Finpay and
 * absent at Netzme (null here). A payment (00) must carry a whole-rupiah amount.
 */
export type Notify =
  | { status: '00'; vendorOrderId: string; reference: string | null; amount: number; paidAt: Date; rrn: string | null }
  | { status: string; vendorOrderId: string; reference: string | null; description: string | null };

/** Statuses after which the QR can no longer be paid (the order's state machine may close it). */
export const CLOSING_STATUS: Readonly<Record<string, 'CANCELLED' | 'FAILED' | 'EXPIRED' | 'REJECTED'>> = { '05': 'CANCELLED', '06': 'FAILED', '08': 'EXPIRED', '09': 'REJECTED' };

/** A QR MPM notify body; null when it is not one (no originalReferenceNo or status, a payment without a whole amount). */
export function fromNotify(body: unknown, now: Date = new Date()): Notify | null {
  if (!isRecord(body)) return null;
  const vendorOrderId = text(body.originalReferenceNo);
  const reference = text(body.originalPartnerReferenceNo);
  const status = text(body.latestTransactionStatus);
  if (!vendorOrderId || !status) return null;
  if (status !== '00') return { status, vendorOrderId, reference, description: text(body.transactionStatusDesc) };
  const amount = fromSnapAmount(body.amount);
  if (amount === null) return null;
  return { status: '00', vendorOrderId, reference, amount, paidAt: paidTimeOf(body) ?? now, rrn: rrnOf(body) };
}

const ANSWERS: Record<CallbackAnswer, { status: number; case: string; message: string }> = {
  accepted: { status: 200, case: '00', message: 'Successful' },
  // Already applied: the provider's retry gets the same success.
  duplicate: { status: 200, case: '00', message: 'Successful' },
  bad_signature: { status: 401, case: '00', message: 'Unauthorized. Invalid Signature' },
  invalid_body: { status: 400, case: '02', message: 'Invalid Mandatory Field' },
  unknown_reference: { status: 404, case: '01', message: 'Transaction Not Found' },
  amount_mismatch: { status: 404, case: '13', message: 'Invalid Amount' },
};

/** Kasir's answer to a provider's call, in SNAP's format, with the service code of the path. */
export function snapAnswer(path: string, result: CallbackAnswer): { status: number; body: { responseCode: string; responseMessage: string } } {
  const service = isNotifyPath(path) ? SERVICE.qrNotify : isTokenPath(path) ? SERVICE.token : null;
  if (service === null) return { status: 404, body: { responseCode: '4040002', responseMessage: 'Invalid Routing' } };
  const answer = ANSWERS[result];
  return { status: answer.status, body: { responseCode: `${answer.status}${service}${answer.case}`, responseMessage: answer.message } };
}
