// The shapes Kasir answers with, as zod schemas: the OpenAPI document's components
// (api/openapi/document.ts turns them into JSON Schema) and what test/api/openapi.test.ts
// validates real responses with, so the documented shapes are the produced ones.
//
// Records are strict objects: a presenter that gains or loses a field fails the test (for the
// records the test samples) and, for every record, the type check at the bottom of this file,
// which holds each schema's keys equal to its presenter's. Enums come from the db modules'
// own row schemas, so a status added there is documented here.
import { z } from 'zod';
import { emailAddress } from '../http/validate.ts';
import type { presentBrand } from '../http/brand.ts';
import type { presentBeneficiary } from '../../db/present/beneficiaries.ts';
import type { presentDisbursement, presentLegacyDisbursement } from '../../db/present/disbursements.ts';
import type { presentImport, presentRefusal } from '../../db/present/disbursement-imports.ts';
import type { ExportEvent, presentExport } from '../../db/present/exports.ts';
import type { presentMovement } from '../../db/present/ledger.ts';
import type { presentBank, presentEwallet } from '../../db/present/master-data.ts';
import type { OrderEvent, presentLegacyOrder, presentOrder, presentOrderEvent } from '../../db/present/orders.ts';
import type { presentRefund, RefundEvent } from '../../db/present/refunds.ts';
import type { presentSettlement } from '../../db/present/settlements.ts';
import type { presentDelivery } from '../../db/present/webhook-deliveries.ts';
import type { presentUser } from '../../db/present/users.ts';
import { verificationStatus } from '../../db/beneficiaries.sql.ts';
import { disbursementStatus } from '../../db/disbursements.sql.ts';
import { errorCatalogue, type ErrorCode } from '../../db/errors.ts';
import { exportStatus, exportType } from '../../db/exports.sql.ts';
import { transferKind } from '../../db/ledger.sql.ts';
import { orderStatus } from '../../db/orders.sql.ts';
import type { ProfitTotals } from '../../db/reports.sql.ts';
import { refundStatus } from '../../db/refunds.sql.ts';
import { settlementStatus } from '../../db/settlements.sql.ts';
import { role } from '../../db/users.sql.ts';
import { calendarDay } from '../http/list-filters.ts';

/** A schema with an id (zod's global registry) becomes `#/components/schemas/<id>` in the document. */
function named<S extends z.ZodType>(id: string, description: string, schema: S): S {
  return schema.meta({ id, description });
}

const uuid = z.uuid();
const instant = z.iso.datetime().meta({ description: 'ISO 8601 UTC', examples: ['2026-11-21T08:30:00.000Z'] });
const day = calendarDay().meta({ format: 'date', examples: ['2026-11-21'] });
const phone = z.string().regex(/^62\d+$/).meta({ description: 'Normalised to 62…', examples: ['6281234567890'] });
const rupiah = z.number().int().describe('Whole Rupiah');
const count = z.number().int().min(0);
const channel = z.enum(['BANK', 'EWALLET']);
const text = z.string();
const bankShortCode = z.string().meta({ description: 'The short code of the bank named by bank_id (GET /v1/banks)', examples: ['BCA'] });
const requestId = named('RequestId',
  'The request\'s id, also in the X-Request-Id header: the caller\'s own X-Request-Id when it sent a usable one, else one Kasir made. Quote it to support.',
  z.string().regex(/^[A-Za-z0-9._-]{1,100}$/));

export const pageMeta = named('PageMeta', 'Pagination of a list: page from 1, limit per page, the total of items and of pages.', z.strictObject({
  page: z.number().int().min(1),
  limit: z.number().int().min(1),
  total: count,
  total_pages: count,
  next_cursor: z.string().nullable().optional().describe('Only in a cursor walk (GET /v1/orders with cursor): the cursor of the next page, null after the last'),
}));

// ---------- V1 records

/** CREATING and FAILED are internal attempts, never listed or returned (docs/decisions.md). */
export const visibleOrderStatus = orderStatus.exclude(['CREATING', 'FAILED']);

export const order = named('Order', 'A QRIS payment order.', z.strictObject({
  id: uuid,
  ref_code: z.string().regex(/^ORD-\d+-[0-9A-Z]+$/).meta({ examples: ['ORD-1763713800-7K3M9Q2X4B'] }),
  merchant_order_id: z.string().max(255),
  amount: rupiah.min(1),
  refunded_amount: rupiah.min(0).describe('What the order\'s refunds not FAILED took: PENDING ones included, their money is held'),
  refundable_amount: rupiah.min(0).describe('What a refund may still take: amount − refunded_amount while PAID, else 0'),
  status: visibleOrderStatus,
  qris_string: text.describe('Raw QRIS data, to be rendered as a QR code'),
  qr_url: z.url().meta({ description: 'PNG of the QR code (public, no API key)', examples: ['https://api.kasir.example/qr/q8Xw2LrT0pZk9sVbN4mC.png'] }),
  checkout_url: z.url().meta({ description: 'The hosted checkout page for the payer (public, no API key)', examples: ['https://api.kasir.example/pay/ORD-1763713800-7K3M9Q2X4B'] }),
  expires_at: instant.nullable().describe('Null when the order has no expiry (expire_minutes 0)'),
  paid_at: instant.nullable(),
  is_settled: z.boolean(),
  vendor_rrn: text.nullable(),
  customer_name: text.nullable(),
  customer_email: text.nullable(),
  customer_phone: phone.nullable(),
  notify_url: text.nullable(),
  return_url: text.nullable(),
  metadata: z.record(z.string(), z.unknown()).nullable().describe('The object sent at creation, returned as sent (key order and number spelling kept)'),
  created_at: instant,
}));

export const orderEvent = named('OrderEvent', 'One entry of an order\'s status timeline, oldest first.', z.strictObject({
  status: visibleOrderStatus,
  event: text.describe('order.created, order.paid, order.expired, refund.requested, refund.succeeded, refund.failed, …'),
  source: text.describe('Who caused it: vendor-worker, callback:<vendor>, reconcile:<vendor>, scheduler, api, …'),
  refund_ref_code: text.nullable().describe('refund.* events: the refund\'s ref_code; null otherwise'),
  refund_amount: rupiah.min(1).nullable().describe('refund.* events: the refund\'s amount; null otherwise'),
  refunded_amount: rupiah.min(0).nullable().describe('refund.* events: the order\'s refunded_amount after the event; null otherwise'),
  refundable_amount: rupiah.min(0).nullable().describe('refund.* events: the order\'s refundable_amount after the event; null otherwise'),
  late: z.boolean().describe('true on an order.paid that came after the order expired (its order.expired was sent) or after its creation failed: money arrived for an order the shop may have given up on (docs/webhooks.md, "Late payments"); false otherwise'),
  created_at: instant,
}));

export const refund = named('Refund', 'A refund of a PAID order (docs/money.md, Refunds).', z.strictObject({
  id: uuid,
  ref_code: text,
  order_ref_code: text,
  amount: rupiah.min(1),
  reason: text.nullable(),
  status: refundStatus,
  failure_reason: text.nullable().describe('Why the vendor refused a FAILED refund; null otherwise'),
  completed_at: instant.nullable().describe('When it became SUCCEEDED or FAILED; null while PENDING'),
  created_at: instant,
}));

export const disbursement = named('Disbursement', 'A payout from the wallet to a bank account or e-wallet.', z.strictObject({
  id: uuid,
  ref_code: z.string().regex(/^DSB-\d+-[0-9A-Z]+$/).meta({ examples: ['DSB-1763713800-4B7N2P9R1K'] }),
  idempotency_key: text,
  channel,
  bank_id: uuid.nullable(),
  bank_short_code: bankShortCode.nullable(),
  account_number: text.nullable(),
  account_name: text.nullable(),
  ewallet_provider: text.nullable(),
  ewallet_phone: phone.nullable(),
  request_amount: rupiah.min(1),
  fee: rupiah.min(0),
  final_amount: rupiah.min(1).describe('What the payee receives; never includes the fee'),
  total_debit: rupiah.min(1).describe('request_amount + fee, taken from the wallet'),
  vendor_disbursement_id: text.nullable(),
  source: text.describe('API (V1 and legacy) or IMPORT (CSV import)'),
  status: disbursementStatus,
  failure_reason: text.nullable().describe('Why a FAILED disbursement failed, null otherwise: ACCOUNT_NAME_MISMATCH (the bank names another '
    + 'holder than account_name and accept_name_mismatch was not sent), NO_VENDOR or VENDOR_ERROR (no gateway took it), else the '
    + 'gateway\'s code (ACCOUNT_CLOSED, INVALID_ACCOUNT, ...). Not in spec 2.3'),
  requested_at: instant,
  created_at: instant,
}));

const importedRow = z.strictObject({
  row: z.number().int().min(1),
  idempotency_key: text,
  status: z.enum(['ACCEPTED', 'ALREADY_IMPORTED']),
  disbursement_id: uuid,
  ref_code: text,
  disbursement_status: disbursementStatus,
  total_debit: rupiah,
});

export const importResult = named('DisbursementImport', 'The outcome of a CSV import, one result per data row in file order (docs/decisions.md, CSV import).', z.strictObject({
  import_id: uuid,
  idempotency_prefix: text,
  rows: count,
  accepted: count,
  already_imported: count,
  refused: count,
  skipped: count,
  queued: count,
  total_debit: rupiah.describe('What this request took from the wallet'),
  results: z.array(z.discriminatedUnion('status', [
    importedRow.extend({ status: z.literal('ACCEPTED') }),
    importedRow.extend({ status: z.literal('ALREADY_IMPORTED') }),
    z.strictObject({
      row: z.number().int().min(1),
      idempotency_key: text,
      status: z.literal('REFUSED'),
      error: z.strictObject({ code: z.enum(Object.keys(errorCatalogue) as [ErrorCode, ...ErrorCode[]]), message: text }),
    }),
    z.strictObject({ row: z.number().int().min(1), idempotency_key: text, status: z.literal('SKIPPED') }),
  ])),
}));

export const errorCode = z.enum(Object.keys(errorCatalogue) as [ErrorCode, ...ErrorCode[]]).describe('Every V1 error code');

export const importRecord = named('DisbursementImportRecord', 'A past CSV import: who uploaded it, when, and what it decided (the counts of its answer).', z.strictObject({
  id: uuid.describe('The import_id of the import\'s answer'),
  idempotency_prefix: text,
  file_name: text.nullable(),
  file_sha256: z.string().regex(/^[0-9a-f]{64}$/).describe('SHA-256 of the uploaded file, lowercase hex'),
  file_bytes: count,
  uploaded_by: z.strictObject({
    user_id: uuid.nullable().describe('The team user whose key uploaded it; null: the merchant\'s own key'),
    full_name: text.nullable().describe('The team user\'s name; null for the merchant\'s own key'),
    role: role.describe('The role the key acted with'),
  }).nullable().describe('Null for imports recorded before uploaders were'),
  rows: count,
  accepted: count,
  already_imported: count,
  refused: count,
  skipped: count,
  total_debit: rupiah.describe('What the import took from the wallet'),
  created_at: instant,
}));

export const importRefusal = named('DisbursementImportRefusal', 'A refused row of a past import, with the reason its answer gave.', z.strictObject({
  row: z.number().int().min(1),
  idempotency_key: text,
  error: z.strictObject({ code: errorCode, message: text }),
}));

export const importDetail = named('DisbursementImportDetail', 'A past CSV import with its refused rows in file order.',
  importRecord.extend({ refused_rows: z.array(importRefusal) }));

export const balance = named('Balance', 'The WALLET balance.', z.strictObject({
  merchant_id: uuid,
  balance: rupiah.min(0),
}));

export const movement = named('BalanceMovement', 'One posting on the WALLET account, newest first (docs/money.md).', z.strictObject({
  id: uuid,
  type: transferKind,
  amount: rupiah.describe('Signed: negative leaves the wallet'),
  balance_before: rupiah,
  balance_after: rupiah,
  reference_type: z.enum(['ORDER', 'DISBURSEMENT', 'DISBURSEMENT_IMPORT', 'ADJUSTMENT', 'REFUND', 'SETTLEMENT'])
    .describe('DISBURSEMENT_IMPORT: one debit for all the disbursements a CSV import accepted; reference_id is the import (GET /v1/disbursements/imports), ref_code null'),
  reference_id: uuid,
  ref_code: text.nullable(),
  description: text.nullable(),
  created_at: instant,
}));

export const beneficiary = named('Beneficiary', 'A saved payout destination.', z.strictObject({
  id: uuid,
  organization_id: uuid.describe('The merchant\'s id: each merchant is an organisation of one'),
  merchant_id: uuid,
  label: text,
  channel,
  bank_id: uuid.nullable(),
  bank_short_code: bankShortCode.nullable(),
  account_number: text.nullable(),
  account_name: text.nullable(),
  ewallet_provider: text.nullable(),
  ewallet_phone: phone.nullable(),
  verification_status: verificationStatus,
  verified_name: text.nullable(),
  is_default: z.boolean(),
  is_enabled: z.boolean(),
  created_at: instant,
  updated_at: instant,
}));

export const settlement = named('Settlement', 'A settlement of a MANUAL merchant\'s paid orders for one day (net_payout = gross_amount − mdr_total − refund_total − disbursement_fee).', z.strictObject({
  id: uuid,
  ref_code: z.string().regex(/^STL-\d{8}-\d+$/).meta({ examples: ['STL-20261121-000042'] }),
  settlement_date: day,
  period_start: instant,
  period_end: instant,
  gross_amount: rupiah,
  mdr_total: rupiah,
  platform_fee: rupiah,
  aggregator_fee: rupiah,
  refund_total: rupiah.describe('Negative when failed refunds counted earlier are given back'),
  disbursement_fee: rupiah,
  net_payout: rupiah.min(1),
  order_count: count,
  bank_id: uuid,
  bank_short_code: bankShortCode,
  account_number: text,
  account_name: text,
  status: settlementStatus,
  created_at: instant,
  updated_at: instant,
}));

const deliveryStatus = z.enum(['PENDING', 'DELIVERED', 'FAILED']);

const deliveryFields = {
  id: uuid.describe('The delivery\'s id: the webhook-id header and, in a V1 body, event_id'),
  event: z.string().meta({ examples: ['order.paid'] }),
  sample: z.boolean().describe('A sample of the event (POST /v1/webhook-deliveries/samples, ops webhooks:trigger), not a real event'),
  url: text,
  status: deliveryStatus,
  resource: z.strictObject({
    type: z.enum(['ORDER', 'DISBURSEMENT', 'SETTLEMENT', 'EXPORT']),
    ref_code: text.nullable().describe('The resource\'s ref_code; an export\'s id'),
  }).nullable().describe('Null for a sample'),
  attempts: count,
  last_status_code: z.number().int().nullable(),
  last_error: text.nullable(),
  next_attempt_at: instant.nullable(),
  delivered_at: instant.nullable(),
  created_at: instant,
  body: text.describe('The exact text that was signed and sent'),
};

export const webhookDelivery = named('WebhookDelivery', 'A webhook Kasir sent (or is sending) to the merchant, with the resource it reports on.', z.strictObject(deliveryFields));

export const webhookDeliveryDetail = named('WebhookDeliveryDetail', 'A webhook delivery with every attempt.', z.strictObject({
  ...deliveryFields,
  attempt_log: z.array(z.strictObject({ attempt: count, status_code: z.number().int().nullable(), latency_ms: count, error: text.nullable(), created_at: instant })),
}));

export const bank = named('Bank', 'An enabled bank destination (GET /v1/banks); bi_code is the Bank Indonesia clearing code.', z.strictObject({
  id: uuid,
  name: text,
  short_code: text,
  bi_code: z.string().regex(/^\d{3}$/),
  is_enabled: z.boolean(),
  sort_order: z.number().int(),
}));

export const ewallet = named('Ewallet', 'An enabled e-wallet destination.', z.strictObject({
  id: uuid,
  name: text,
  short_code: text,
  logo_url: z.url(),
  is_enabled: z.boolean(),
  sort_order: z.number().int(),
}));

export const exportJob = named('ExportJob', 'An asynchronous CSV export; download it once COMPLETED.', z.strictObject({
  id: uuid,
  type: exportType,
  status: exportStatus,
  date_from: day.nullable(),
  date_to: day.nullable(),
  row_count: count.nullable(),
  download_url: z.url().nullable().meta({
    description: 'Where the CSV downloads from (GET /v1/reports/exports/{id}/download, with your API key) once COMPLETED; null before and when FAILED',
    examples: ['https://api.kasir.example/v1/reports/exports/3f0c2a8e-5b7d-4c1e-9a6f-2d8b7e4c1a90/download'],
  }),
  created_at: instant,
  completed_at: instant.nullable(),
  error: text.nullable(),
}));

export const profits = named('ProfitsReport', 'The merchant\'s totals over WIB calendar days date_from..date_to, inclusive.', z.strictObject({
  date_from: day,
  date_to: day,
  order_count: count,
  gross_amount: rupiah,
  mdr_total: rupiah,
  refund_total: rupiah,
  net_amount: rupiah.describe('gross_amount − mdr_total − refund_total'),
  disbursement_count: count,
  disbursement_total: rupiah,
  disbursement_fee_total: rupiah,
}));

export const user = named('User', 'A team user (docs/decisions.md, Team and roles).', z.strictObject({
  id: uuid,
  full_name: text,
  email: emailAddress(),
  phone_number: phone.nullable(),
  role,
  created_at: instant,
}));

export const brand = named('Brand', 'The brand of the domain called.', z.strictObject({
  name: text,
  domain: text,
  logo_url: text.nullable(),
  support_email: text.nullable(),
}));

export const health = named('Health', 'Liveness with the database reachability (a bare object, not the V1 envelope).', z.strictObject({
  status: z.enum(['ok', 'unavailable']),
  db: z.enum(['ok', 'unreachable']),
  sandbox: z.literal(true).optional().describe('Present while a vendor is marked `--sandbox` (ops vendor:add): this stack must take no real money'),
}));

// ---------- V1 envelopes (spec 2.1)

export function v1Data<S extends z.ZodType>(data: S) {
  return z.strictObject({ success: z.literal(true), data });
}

export function v1List<S extends z.ZodType>(item: S) {
  return z.strictObject({ success: z.literal(true), data: z.array(item) });
}

export function v1Page<S extends z.ZodType>(item: S) {
  return z.strictObject({ success: z.literal(true), data: z.array(item), meta: pageMeta });
}

export const retainedPageMeta = named('RetainedPageMeta',
  'Pagination of a log kept for a while: PageMeta, and how far back the log reaches.', pageMeta.extend({
    retained_since: instant.describe('Deliveries that ended (delivered, or failed for good) before this instant have been retired and are no longer listed: WEBHOOK_RETENTION_DAYS before now'),
  }));

/** A page of a log that retires its old entries (retainedPageMeta). */
export function v1RetainedPage<S extends z.ZodType>(item: S) {
  return z.strictObject({ success: z.literal(true), data: z.array(item), meta: retainedPageMeta });
}

export const deleted = v1Data(z.strictObject({ deleted: z.literal(true) }));

export const duplicateDisbursement = named('DuplicateDisbursement',
  'DUPLICATE_IDEMPOTENCY_KEY\'s details: the disbursement holding the key, and whether it is this request. same_request '
  + '(same amount and destination) means a retry of a request whose answer was lost: read the disbursement. Otherwise '
  + 'the key was used for another payout, a bug: use a new key. same_fee compares the fee it was charged with what this '
  + 'request would be charged now; not part of same_request, since the client does not send the fee.',
  z.strictObject({
    id: uuid,
    ref_code: text,
    status: disbursementStatus,
    same_request: z.boolean().describe('same_amount and same_destination'),
    same_amount: z.boolean(),
    same_destination: z.boolean().describe('Channel, bank and account, or e-wallet and phone'),
    same_fee: z.boolean(),
  }));

/** The V1 error envelope, its code narrowed to `codes` (an operation's answers of one status). */
export function v1Error(codes: readonly [ErrorCode, ...ErrorCode[]]) {
  const details = codes.includes('DUPLICATE_IDEMPOTENCY_KEY') ? { details: duplicateDisbursement.optional() } : {};
  return z.strictObject({ success: z.literal(false), error: z.strictObject({ code: z.enum(codes), message: text, request_id: requestId, ...details }) });
}

export const errorEnvelope = named('Error', 'The V1 error envelope. Clients branch on error.code: several errors share an HTTP status.',
  v1Error(Object.keys(errorCatalogue) as [ErrorCode, ...ErrorCode[]]));

// ---------- Legacy (spec 2.8, 2.9, 4.10)

export const wibTime = z.string().regex(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/).meta({ description: 'WIB (UTC+7) wall time', examples: ['2026-11-21 15:30:00'] });
export const decimal = z.string().regex(/^\d+\.\d{2}$/).meta({ description: 'Whole Rupiah as a decimal string with two decimals', examples: ['150000.00'] });

export function legacyOk<S extends z.ZodType>(data: S) {
  return z.strictObject({ code: z.literal(200), message: z.literal('Success'), data });
}

/** Legacy errors: HTTP status equal to code, the contract's message, data null. */
export function legacyError(status: 400 | 401 | 404 | 500 | 503) {
  return z.strictObject({ code: z.literal(status), message: text, data: z.null() });
}

export const legacyOrder = named('LegacyOrder', 'A legacy order.', z.strictObject({
  refCode: text,
  transactionTime: wibTime,
  orderId: text,
  totalAmount: rupiah.min(1),
  customerName: text.nullable(),
  customerEmail: text.nullable(),
  customerPhone: phone.nullable(),
  notifyUrl: text.nullable(),
  returnUrl: text.nullable(),
  status: visibleOrderStatus,
  paidAt: wibTime.nullable(),
  qrString: text,
}));

export const legacyBalance = named('LegacyBalance', 'The legacy wallet balance.', z.strictObject({
  clientId: text,
  balance: decimal,
}));

const legacyAmounts = {
  requestAmount: decimal,
  disbursementFee: decimal,
  disbursementAmount: decimal.describe('Delivered to the payee; the fee is never added'),
  status: disbursementStatus,
  requestAt: wibTime,
};

const legacyBankFields = {
  refCode: text,
  orderId: text,
  accountNumber: text,
  accountName: text,
  bank: z.strictObject({ name: text, code: text }),
  ...legacyAmounts,
};

const legacyEwallet = z.strictObject({
  refCode: text,
  orderId: text,
  method: z.literal('EWALLET'),
  ewallet: z.strictObject({ code: text, accountNumber: z.string().regex(/^08\d+$/).meta({ examples: ['081234567890'] }) }),
  ...legacyAmounts,
});

export const legacyDisbursement = named('LegacyDisbursement', 'A legacy disbursement as the query shows it.',
  z.union([z.strictObject({ ...legacyBankFields, method: z.literal('BANK_ACCOUNT') }), legacyEwallet]));

export const legacyBankDisbursementCreated = named('LegacyBankDisbursementCreated', 'The answer to a legacy bank disbursement create (no method).',
  z.strictObject(legacyBankFields));

export const legacyEwalletDisbursementCreated = named('LegacyEwalletDisbursementCreated', 'The answer to a legacy e-wallet disbursement create.', legacyEwallet);

// ---------- Webhook bodies (docs/webhooks.md, docs/webhook-events.md)

/** What every V1 webhook body ends with: the event's identity, fixed when the event is recorded. */
const eventStamp = {
  event_id: uuid.meta({
    description: 'The event\'s id: the delivery\'s id and the webhook-id header, the same on every retry and resend. Signed with the body, so a receiver that verifies X-Signature dedupes on it (docs/webhooks.md).',
    examples: ['7c9e6679-7425-40de-944b-e07fc1f90ae7'],
  }),
  event_created_at: instant.describe('When the event happened (ISO 8601 UTC); the same on every retry and resend'),
  sample: z.literal(true).optional().describe('Present, and true, only on a sample (ops webhooks:trigger, POST /v1/webhook-deliveries/samples): not a real event. '
    + 'Its ids are sample ids (ORD-0-SAMPLE, SAMPLE-ORDER, UUIDs of zeros), never a real resource\'s'),
};

export const orderStatusEvent = z.enum(['order.paid', 'order.expired']);
export const orderRefundEvent = z.enum(['order.refunded', 'order.partially_refunded', 'order.refund_failed']);

const orderWebhookFields = {
  ref_code: text.describe('The order\'s ref_code (ORD-…)'),
  merchant_order_id: text.describe('Your id of the order'),
  amount: rupiah.min(1),
  status: visibleOrderStatus.describe('The order\'s status after the event'),
};
const paidAt = instant.nullable().describe('When the payer paid; null if never');

export const orderWebhook = named('OrderWebhook', 'The V1 order webhook of a payment or an expiry.', z.strictObject({
  ...orderWebhookFields,
  event: orderStatusEvent,
  paid_at: paidAt,
  late: z
    .literal(true)
    .optional()
    .describe('order.paid only: present (true) when the payment came after the order expired (after its order.expired) or after its creation failed. EXPIRED is not final for money that arrives: refund it or fulfil the order (docs/webhooks.md, "Late payments"). Absent on a payment in time'),
  ...eventStamp,
}));

export const orderRefundWebhook = named('OrderRefundWebhook', 'The V1 order webhook of a refund\'s change: the order, its amounts after the change, and the refund.', z.strictObject({
  ...orderWebhookFields,
  event: orderRefundEvent,
  paid_at: paidAt,
  refunded_amount: rupiah.min(0).describe('The order\'s refunded_amount after the refund\'s change'),
  refundable_amount: rupiah.min(0).describe('The order\'s refundable_amount after the refund\'s change'),
  refund,
  ...eventStamp,
}));

export const legacyOrderWebhook = named('LegacyOrderWebhook', 'The webhook of an order created through the legacy API: the legacy shape, unchanged (no event fields: the event is in the X-Kasir-Event header, its id in webhook-id).', z.strictObject({
  refCode: text,
  orderId: text,
  totalAmount: rupiah.min(1),
  status: visibleOrderStatus,
  paidAt: wibTime.nullable(),
}));

export const disbursementWebhook = named('DisbursementWebhook', 'The V1 disbursement with the event.',
  disbursement.extend({ event: z.string().regex(/^disbursement\.[a-z_]+$/), ...eventStamp }));

export const settlementWebhook = named('SettlementWebhook', 'The settlement with the event.',
  settlement.extend({ event: z.string().regex(/^settlement\.[a-z_]+$/), ...eventStamp }));

export const exportEvent = z.enum(['export.completed', 'export.failed']);

export const exportWebhook = named('ExportWebhook', 'The export with the event, once it is COMPLETED (download_url set) or FAILED (error set).',
  exportJob.extend({ event: exportEvent, ...eventStamp }));

// ---------- Each schema's keys are its presenter's (a type check; `npm test` runs tsc first).

type SameKeys<A, B> = [Exclude<keyof A, keyof B> | Exclude<keyof B, keyof A>] extends [never] ? true : false;
type Holds<T extends true> = T;
type Shown<F extends (...args: never[]) => unknown> = ReturnType<F>;
type Documented<S extends z.ZodType> = z.output<S>;
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;

export type PresentersMatchSchemas = [
  Holds<SameKeys<Shown<typeof presentOrder>, Documented<typeof order>>>,
  Holds<SameKeys<Shown<typeof presentRefund>, Documented<typeof refund>>>,
  Holds<SameKeys<Shown<typeof presentOrderEvent>, Documented<typeof orderEvent>>>,
  Holds<SameKeys<Shown<typeof presentDisbursement>, Documented<typeof disbursement>>>,
  Holds<SameKeys<Shown<typeof presentMovement>, Documented<typeof movement>>>,
  Holds<SameKeys<Shown<typeof presentImport>, Documented<typeof importRecord>>>,
  Holds<SameKeys<Shown<typeof presentRefusal>, Documented<typeof importRefusal>>>,
  Holds<SameKeys<Shown<typeof presentBeneficiary>, Documented<typeof beneficiary>>>,
  Holds<SameKeys<Shown<typeof presentSettlement>, Documented<typeof settlement>>>,
  Holds<SameKeys<Omit<Shown<typeof presentDelivery>, 'attempt_log'>, Documented<typeof webhookDelivery>>>,
  Holds<SameKeys<Shown<typeof presentBank>, Documented<typeof bank>>>,
  Holds<SameKeys<Shown<typeof presentEwallet>, Documented<typeof ewallet>>>,
  Holds<SameKeys<Shown<typeof presentExport>, Documented<typeof exportJob>>>,
  Holds<SameKeys<Shown<typeof presentUser>, Documented<typeof user>>>,
  Holds<SameKeys<Shown<typeof presentBrand>, Documented<typeof brand>>>,
  Holds<SameKeys<Shown<typeof presentLegacyOrder>, Documented<typeof legacyOrder>>>,
  Holds<SameKeys<ProfitTotals & { date_from: string; date_to: string }, Documented<typeof profits>>>,
  Holds<SameKeys<Shown<typeof presentLegacyDisbursement>, Documented<typeof legacyDisbursement>>>,
  Holds<Same<OrderEvent, Documented<typeof orderStatusEvent> | Documented<typeof orderRefundEvent>>>,
  Holds<Same<RefundEvent, Documented<typeof orderRefundEvent>>>,
  Holds<Same<ExportEvent, Documented<typeof exportEvent>>>,
];
