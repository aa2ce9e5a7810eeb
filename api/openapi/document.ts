// The OpenAPI 3.1 document, generated, never written by hand: request bodies are the zod
// schemas the routes validate with (exported from api/v1/*.ts and api/legacy/*.ts), responses
// the record schemas of api/openapi/schemas.ts, error codes and statuses come from
// db/errors.ts, and who may call what from api/http/roles.ts. zod 4's own z.toJSONSchema
// (draft 2020-12, OpenAPI 3.1's dialect) does the conversion; no generator library. What it would
// repeat is written once: records with an id are components, formats are found by their JSON and
// referenced (SHARED_SHAPES), and an error answer several operations give is a shared response.
//
// `operations` is the one list of documented endpoints. test/api/openapi.test.ts holds it equal
// to the routes Express has mounted and validates real responses against it;
// `npm run openapi` writes the document to docs/openapi.json and GET /openapi.json serves it.
import { z } from 'zod';
import { disbursementStatus } from '../../db/disbursements.sql.ts';
import { transferKind } from '../../db/ledger.sql.ts';
import { errorCatalogue, type ErrorCode } from '../../db/errors.ts';
import { refundStatus } from '../../db/refunds.sql.ts';
import { listedOrderStatus } from '../../db/orders.sql.ts';
import { settlementStatus } from '../../db/settlements.sql.ts';
import { role, type Role } from '../../db/users.sql.ts';
import { IMPORT_COLUMNS } from '../csv/parse-import.ts';
import { calendarDay, DAY_PATTERN } from '../http/list-filters.ts';
import { mayDo, permissionFor } from '../http/roles.ts';
import { emailAddress, idempotencyKey } from '../http/validate.ts';
import * as legacyDisbursements from '../legacy/disbursements.ts';
import { legacyMessages } from '../legacy/errors.ts';
import * as legacyOrders from '../legacy/orders.ts';
import * as beneficiaries from '../v1/beneficiaries.ts';
import * as disbursements from '../v1/disbursements.ts';
import * as orders from '../v1/orders.ts';
import * as refunds from '../v1/refunds.ts';
import * as webhookDeliveries from '../v1/webhook-deliveries.ts';
import * as reports from '../v1/reports.ts';
import * as team from '../v1/team.ts';
import * as s from './schemas.ts';
import { legacySampleBody, sampleBody, webhookEvents } from './webhook-events.ts';

export type Method = 'get' | 'post' | 'patch' | 'delete';
type LegacyStatus = 400 | 401 | 404 | 503;
type JsonSchema = Record<string, unknown>;

interface Reply {
  description: string;
  /** JSON body; omitted for other media. */
  schema?: z.ZodType;
  media?: { type: string; description: string };
  headers?: Record<string, { description: string; schema: z.ZodType }>;
}

interface HeaderParam {
  name: string;
  required: boolean;
  description: string;
  schema: z.ZodType;
}

export interface Operation {
  method: Method;
  /** The Express route path (`:name` parameters). */
  path: string;
  tag: string;
  summary: string;
  description?: string;
  /** apiKey (default): X-API-Key, then the role rule; legacy: signed per spec 5.3/5.4. */
  auth?: 'apiKey' | 'none' | 'legacy';
  params?: Record<string, z.ZodType>;
  query?: Record<string, z.ZodType>;
  headers?: HeaderParam[];
  body?: { schema: z.ZodType; required?: boolean; multipart?: boolean };
  responses: Record<number, Reply>;
  /** V1 codes this operation answers beyond those every operation of its kind does (see errorsOf). */
  errors?: ErrorCode[];
  /** Legacy messages by status (the contract's texts). */
  legacyErrors?: Partial<Record<LegacyStatus, string[]>>;
}

// ---------- Parameters the routes read by hand (api/http/pagination.ts, api/v1/reports.ts)

/** Spec 8 pagination; each list passes its own default and maximum (the test checks both). */
function paged(limit = 20, max = 100) {
  return {
    page: z.int().min(1).max(1_000_000).default(1),
    limit: z.int().min(1).max(max).default(limit),
  };
}

const wibDay = calendarDay().meta({ format: 'date', description: 'A WIB (UTC+7) calendar day, YYYY-MM-DD, 1900-01-01 to 9999-12-31, inclusive' });
const uuidParam = z.uuid().describe('A UUID; anything else is 400 INVALID_ID');
const refCode = z.string().describe('The order\'s ref_code (ORD-…)');

/** The refund lists' query (api/v1/refunds.ts, api/http/list-filters.ts). */
const refundFilters = {
  ...paged(),
  status: refundStatus.describe('Only refunds in this status'),
  date_from: wibDay.describe('Refunds created on or after this WIB (UTC+7) day, YYYY-MM-DD'),
  date_to: wibDay.describe('Refunds created on or before this WIB (UTC+7) day, YYYY-MM-DD; not before date_from'),
};

/** A string with something besides white space (the routes trim, and empty is "not given"). */
const NOT_BLANK = { type: 'string', pattern: '\\S' };

const dayJson = { type: 'string', format: 'date', pattern: DAY_PATTERN.source };

/**
 * Fields a route accepts as z.unknown() because the service checks them, in the contract's
 * order, with the contract's codes (db/disbursements.ts, api/v1/reports.ts): documented here as
 * what those checks accept. Keyed by the route's own schema instance.
 */
const checkedByService = new Map<unknown, JsonSchema>([
  [disbursements.createBody.shape.amount, { type: 'integer', minimum: 1, description: 'Whole Rupiah, excluding the fee' }],
  [reports.exportBody.shape.date_from.unwrap(), { ...dayJson, description: 'First WIB day, YYYY-MM-DD (1900-01-01 to 9999-12-31); open-ended when absent' }],
  [reports.exportBody.shape.date_to.unwrap(), { ...dayJson, description: 'Last WIB day, YYYY-MM-DD (1900-01-01 to 9999-12-31); open-ended when absent' }],
  // Validated as any string so that another method is the contract's UNSUPPORTED_PAYMENT_METHOD.
  [orders.createBody.shape.payment_method, { type: 'string', enum: ['QRIS'], description: 'Only QRIS; another method is 400 UNSUPPORTED_PAYMENT_METHOD' }],
  // The legacy route answers another type with its own message (api/legacy/orders.ts).
  [legacyOrders.createBody.shape.paymentType, { type: 'string', enum: ['QRIS'], description: 'Only QRIS; another type is 400 "Merchant setting is not Valid"' }],
  // The destination: a saved beneficiary, or every field its channel needs (db/disbursements.ts
  // refuses the others MISSING_BANK_INFO / MISSING_EWALLET_INFO; blank counts as missing).
  [disbursements.createBody, {
    anyOf: [
      { title: 'Saved beneficiary', required: ['beneficiary_id'], properties: { beneficiary_id: { type: 'string' } } },
      {
        title: 'Bank account',
        required: ['channel', 'bank_short_code', 'account_number', 'account_name'],
        properties: { channel: { const: 'BANK' }, bank_short_code: NOT_BLANK, account_number: NOT_BLANK, account_name: NOT_BLANK },
      },
      {
        title: 'E-wallet',
        required: ['channel', 'ewallet_provider', 'ewallet_phone'],
        properties: { channel: { const: 'EWALLET' }, ewallet_provider: NOT_BLANK, ewallet_phone: NOT_BLANK },
      },
    ],
  }],
  // A beneficiary's channel names the fields it needs (db/beneficiaries.ts; the bank names the holder).
  [beneficiaries.createBody, {
    oneOf: [
      { title: 'Bank account', required: ['bank_short_code', 'account_number'], properties: { channel: { const: 'BANK' }, bank_short_code: NOT_BLANK, account_number: NOT_BLANK } },
      { title: 'E-wallet', required: ['ewallet_provider', 'ewallet_phone'], properties: { channel: { const: 'EWALLET' }, ewallet_provider: NOT_BLANK, ewallet_phone: NOT_BLANK } },
    ],
  }],
]);

/** Request examples, for readers and "Try it out" (annotations only: nothing here validates). */
const examples = new Map<unknown, unknown>([
  [orders.createBody.shape.merchant_order_id, 'INV-1001'],
  [orders.createBody.shape.amount, 150_000],
  [orders.createBody.shape.payment_method, 'QRIS'],
  [orders.createBody.shape.customer_name, 'Budi Santoso'],
  [orders.createBody.shape.customer_phone, '081234567890'],
  [orders.createBody.shape.notify_url, 'https://shop.example/kasir/webhook'],
  [orders.createBody.shape.metadata, { cart_id: 'C-77', channel: 'web' }],
  [orders.createBody.shape.customer_email, 'budi@example.com'],
  [orders.createBody.shape.return_url, 'https://shop.example/orders/INV-1001'],
  [orders.createBody.shape.expire_minutes, 60],
  [refunds.refundBody.shape.amount, 50_000],
  [refunds.refundBody.shape.reason, 'One item returned'],
  [disbursements.createBody.shape.idempotency_key, 'payout-2026-11-21-001'],
  [disbursements.createBody.shape.channel, 'BANK'],
  [disbursements.createBody.shape.bank_short_code, 'BCA'],
  [disbursements.createBody.shape.account_number, '1234567890'],
  [disbursements.createBody.shape.account_name, 'Budi Santoso'],
  [disbursements.createBody.shape.amount, 150_000],
  [beneficiaries.createBody.shape.channel, 'BANK'],
  [beneficiaries.createBody.shape.label, 'Payroll account'],
  [beneficiaries.createBody.shape.bank_short_code, 'BCA'],
  [beneficiaries.createBody.shape.account_number, '1234567890'],
  [beneficiaries.createBody.shape.account_name, 'Budi Santoso'],
  [reports.exportBody.shape.type, 'orders'],
  [reports.exportBody.shape.date_from.unwrap(), '2026-11-01'],
  [reports.exportBody.shape.date_to.unwrap(), '2026-11-30'],
  [team.createBody.shape.full_name, 'Siti Rahma'],
  [team.createBody.shape.email, 'siti@example.com'],
  [team.createBody.shape.phone_number, '081234567890'],
  [team.createBody.shape.role, 'finance'],
  [team.roleBody.shape.role, 'ops'],
  [webhookDeliveries.sampleRequest.shape.event, 'order.paid'],
  [legacyOrders.createBody.shape.orderId, 'INV-2001'],
  [legacyOrders.createBody.shape.paymentType, 'QRIS'],
  [legacyOrders.createBody.shape.totalAmount, 150_000],
  [legacyOrders.createBody.shape.customerName, 'Budi Santoso'],
  [legacyOrders.createBody.shape.customerPhone, '6281234567890'],
  [legacyOrders.queryBody.shape.orderId, 'INV-2001'],
  [legacyDisbursements.bankBody.shape.orderId, 'PAYOUT-2001'],
  [legacyDisbursements.bankBody.shape.bankCode, 'BCA'],
  [legacyDisbursements.bankBody.shape.accountNumber, '1234567890'],
  [legacyDisbursements.bankBody.shape.accountName, 'Budi Santoso'],
  [legacyDisbursements.bankBody.shape.requestAmount, 50_000],
  [legacyDisbursements.ewalletBody.shape.ewalletCode, 'OVO'],
  [legacyDisbursements.ewalletBody.shape.accountNumber, '081234567890'],
]);

const idempotencyHeader: HeaderParam = {
  name: 'Idempotency-Key',
  required: false,
  description: 'Recommended. Stable per intended order; a retry with the same key and byte-identical body replays the '
    + 'stored answer (with `Idempotent-Replayed: true`); the same key with another body is 400 IDEMPOTENCY_KEY_REUSED. '
    + 'Kept at least 24 hours.',
  schema: idempotencyKey,
};

const refundIdempotencyHeader: HeaderParam = {
  name: 'Idempotency-Key',
  required: false,
  description: 'Recommended: one key per intended refund. A retry with the same key and byte-identical body answers the '
    + 'first refund (with `Idempotent-Replayed: true`) and moves no money; the same key with another body is 400 '
    + 'IDEMPOTENCY_KEY_REUSED; a concurrent repeat waits for the first. Kept at least 24 hours.',
  schema: idempotencyKey,
};

const createIdempotencyHeader: HeaderParam = {
  name: 'Idempotency-Key',
  required: false,
  description: 'Optional. A retry with the same key and byte-identical body answers the first request (with '
    + '`Idempotent-Replayed: true`) and creates nothing more; another body is 400 IDEMPOTENCY_KEY_REUSED. Kept at least 24 hours '
    + '(docs/idempotency.md).',
  schema: idempotencyKey,
};

const disbursementIdempotencyHeader: HeaderParam = {
  name: 'Idempotency-Key',
  required: false,
  description: 'The disbursement\'s idempotency_key, as a header: required when the body has no idempotency_key; sent with '
    + 'one, the two must be equal (else 400 INVALID_BODY). Either way the key is unique: a repeat is 409 DUPLICATE_IDEMPOTENCY_KEY.',
  schema: idempotencyKey,
};

const signatureHeader: HeaderParam = {
  name: 'X-Signature',
  required: false,
  description: 'Required when the merchant has a webhook secret: `sha256=<lowercase hex HMAC-SHA256 of the exact raw body>` '
    + 'keyed with the secret string as given (docs/webhooks.md). Absent or wrong: 401 INVALID_SIGNATURE.',
  schema: z.string().regex(/^sha256=[0-9a-f]{64}$/),
};

const legacyRsaHeader: HeaderParam = {
  name: 'X-SIGNATURE',
  required: true,
  description: 'Base64 RSA-SHA256 (PKCS#1 v1.5) signature over `clientId|clientSecret|<lowercase hex SHA-256 of the raw body>`, '
    + 'verified with the merchant\'s stored public key.',
  schema: z.string(),
};

const replayed = { 'Idempotent-Replayed': { description: '`true` when this is the stored answer to the Idempotency-Key, replayed', schema: z.literal('true') } };

const masterDataCache = { 'Cache-Control': { description: '`private, max-age=3600` (the list is cached for an hour)', schema: z.string() } };

const legacy = 'Legacy';

export const operations: readonly Operation[] = [
  // System
  {
    method: 'get', path: '/healthz', tag: 'System', auth: 'none', summary: 'Health check',
    description: 'Answers before any database-dependent middleware; 503 when Postgres does not answer within 2 s.',
    responses: { 200: { description: 'Up', schema: s.health }, 503: { description: 'The database is unreachable', schema: s.health } },
  },
  {
    method: 'get', path: '/v1/brand', tag: 'System', auth: 'none', summary: 'The brand of the domain called',
    responses: { 200: { description: 'Brand metadata', schema: s.v1Data(s.brand) } },
  },

  // Orders
  {
    method: 'get', path: '/v1/orders', tag: 'Orders', summary: 'List orders, newest first',
    description: 'With merchant_order_id: the exact lookup to reconcile with after a timeout, VENDOR_ERROR or '
      + 'ORDER_PENDING_CONFIRMATION: look the order up here before creating it again under a new id.',
    query: {
      ...paged(),
      cursor: z.string().meta({ description: 'Walks the whole list at any depth: empty to start, then the meta.next_cursor of the previous page (null after the last). '
        + 'A walk\'s meta adds next_cursor; not with page.', examples: [''] }),
      merchant_order_id: z.string().meta({ description: 'Exact merchant order id', examples: ['INV-1001'] }),
      status: listedOrderStatus.describe('Only orders in this status'),
      date_from: wibDay.describe('Orders created on or after this WIB (UTC+7) day, YYYY-MM-DD'),
      date_to: wibDay.describe('Orders created on or before this WIB (UTC+7) day, YYYY-MM-DD; not before date_from'),
    },
    responses: { 200: { description: 'A page of orders', schema: s.v1Page(s.order) } },
    errors: ['INVALID_BODY'],
  },
  {
    method: 'post', path: '/v1/orders', tag: 'Orders', summary: 'Create a QRIS order',
    description: 'Waits for the gateway\'s QR. A merchant_order_id with a confirmed order and the same amount answers '
      + 'that order with 200; a different amount is 400 MERCHANT_ORDER_ID_REUSED; an earlier attempt unresolved at a '
      + 'gateway is 409 ORDER_PENDING_CONFIRMATION (reconcile with GET /v1/orders?merchant_order_id= before retrying).',
    headers: [idempotencyHeader, signatureHeader],
    body: { schema: orders.createBody },
    responses: {
      201: { description: 'The order was created', schema: s.v1Data(s.order), headers: replayed },
      200: { description: 'An order with this merchant_order_id and amount exists', schema: s.v1Data(s.order), headers: replayed },
    },
    errors: ['INVALID_SIGNATURE', 'UNSUPPORTED_PAYMENT_METHOD', 'IDEMPOTENCY_KEY_REUSED', 'MERCHANT_ORDER_ID_REUSED',
      'ORDER_PENDING_CONFIRMATION', 'NO_VENDOR', 'VENDOR_ERROR'],
  },
  {
    method: 'get', path: '/v1/orders/:ref_code', tag: 'Orders', summary: 'Read an order',
    params: { ref_code: refCode },
    responses: { 200: { description: 'The order', schema: s.v1Data(s.order) } },
    errors: ['ORDER_NOT_FOUND'],
  },
  {
    method: 'get', path: '/v1/orders/:ref_code/events', tag: 'Orders', summary: 'An order\'s status timeline',
    params: { ref_code: refCode },
    responses: { 200: { description: 'Events, oldest first, no meta', schema: s.v1List(s.orderEvent) } },
    errors: ['ORDER_NOT_FOUND'],
  },
  {
    method: 'post', path: '/v1/orders/:ref_code/fetch-status', tag: 'Orders', summary: 'Reconcile an order with its gateway',
    description: 'Asks the gateway (through the vendor worker), waits for its answer, then answers the order as it is.',
    params: { ref_code: refCode },
    responses: { 200: { description: 'The order after reconciliation', schema: s.v1Data(s.order) } },
    errors: ['ORDER_NOT_FOUND'],
  },
  {
    method: 'post', path: '/v1/orders/:ref_code/refund', tag: 'Orders', summary: 'Refund a PAID order',
    description: 'amount defaults to what remains refundable. The money is held from the wallet (MANUAL merchants: the '
      + 'next settlement) at once; the order\'s events and webhooks tell how the refund ends. The MDR is not returned. '
      + 'Send an Idempotency-Key: a retry after a timeout then answers the first refund instead of refunding twice.',
    params: { ref_code: refCode },
    headers: [refundIdempotencyHeader],
    body: { schema: refunds.refundBody, required: false },
    responses: { 201: { description: 'The refund, PENDING', schema: s.v1Data(s.refund), headers: replayed } },
    errors: ['ORDER_NOT_FOUND', 'INVALID_STATUS', 'AMOUNT_EXCEEDS_ORDER', 'INSUFFICIENT_BALANCE', 'IDEMPOTENCY_KEY_REUSED'],
  },
  {
    method: 'get', path: '/v1/orders/:ref_code/refunds', tag: 'Refunds', summary: 'An order\'s refunds, newest first',
    description: 'The order\'s refunded_amount is the sum of the amounts of its refunds not FAILED. Filters as GET /v1/refunds.',
    params: { ref_code: refCode },
    query: refundFilters,
    responses: { 200: { description: 'A page of the order\'s refunds', schema: s.v1Page(s.refund) } },
    errors: ['INVALID_BODY', 'ORDER_NOT_FOUND'],
  },

  // Refunds
  {
    method: 'get', path: '/v1/refunds', tag: 'Refunds', summary: 'List refunds, newest first',
    description: 'Every refund of the merchant, V1 and legacy orders alike. A filter that is not valid is 400 INVALID_BODY naming it.',
    query: refundFilters,
    responses: { 200: { description: 'A page of refunds', schema: s.v1Page(s.refund) } },
    errors: ['INVALID_BODY'],
  },
  {
    method: 'get', path: '/v1/refunds/:id', tag: 'Refunds', summary: 'Read a refund',
    params: { id: refunds.refundId.describe('The refund\'s UUID or its ref_code (RFD-…); anything else is 400 INVALID_ID') },
    responses: { 200: { description: 'The refund', schema: s.v1Data(s.refund) } },
    errors: ['INVALID_ID', 'REFUND_NOT_FOUND'],
  },

  // Disbursements
  {
    method: 'get', path: '/v1/disbursements', tag: 'Disbursements', summary: 'List disbursements, newest first',
    description: 'After a timeout, idempotency_key finds what a create made (read from the primary, never a lagging replica). '
      + 'A filter that is not valid is 400 INVALID_BODY naming it.',
    query: {
      ...paged(10, 50),
      status: disbursementStatus.describe('Only disbursements in this status'),
      idempotency_key: z.string().min(1).max(255).meta({ description: 'The disbursement created with this key, if any', examples: ['payout-2026-11-21-001'] }),
      date_from: wibDay.describe('Created on or after this WIB (UTC+7) day, YYYY-MM-DD'),
      date_to: wibDay.describe('Created on or before this WIB (UTC+7) day; not before date_from'),
    },
    responses: { 200: { description: 'A page of disbursements', schema: s.v1Page(s.disbursement) } },
    errors: ['NOT_WALLET_MERCHANT', 'INVALID_BODY'],
  },
  {
    method: 'post', path: '/v1/disbursements', tag: 'Disbursements', summary: 'Pay out from the wallet',
    description: 'WALLET merchants only. Checked in this order: idempotency_key unused, destination fields, bank or '
      + 'e-wallet, amount, per-transaction limit; then, holding the wallet, the daily limit and the balance against amount '
      + '+ fee. A beneficiary_id fills the destination from the saved beneficiary (channel then optional; a field that '
      + 'disagrees is INVALID_BODY; a NAME_MISMATCH beneficiary is 422 BENEFICIARY_NAME_MISMATCH unless accept_name_mismatch is '
      + 'true: delete it and save it again with the bank\'s name). Answers PENDING (IN_REVIEW above the merchant\'s review '
      + 'threshold); the worker sends it, and one whose holder the bank names otherwise (the account inquiry of every vendor '
      + 'that can make one, the simulator included) ends FAILED with failure_reason ACCOUNT_NAME_MISMATCH, its debit returned, '
      + 'unless accept_name_mismatch is true. The same rule holds for legacy creates and CSV imports.',
    headers: [disbursementIdempotencyHeader],
    body: { schema: disbursements.createBody },
    responses: { 201: { description: 'The disbursement, debited', schema: s.v1Data(s.disbursement) } },
    errors: ['NOT_WALLET_MERCHANT', 'BENEFICIARY_NOT_FOUND', 'BENEFICIARY_NAME_MISMATCH', 'DUPLICATE_IDEMPOTENCY_KEY', 'MISSING_BANK_INFO', 'MISSING_EWALLET_INFO',
      'BANK_NOT_FOUND', 'BANK_DISABLED', 'AMOUNT_EXCEEDS_LIMIT', 'DAILY_LIMIT_EXCEEDED', 'INSUFFICIENT_BALANCE'],
  },
  {
    method: 'post', path: '/v1/disbursements/import', tag: 'Disbursements', summary: 'Import disbursements from a CSV file',
    description: `multipart/form-data. The file: UTF-8, comma- or semicolon-delimited, a header row naming each of `
      + `${IMPORT_COLUMNS.join(', ')} once (any order). Every row is read as a POST /v1/disbursements body; row n's `
      + 'idempotency key is `<idempotency_prefix>-<n>`, so a retry with the same prefix creates nothing twice. One balance '
      + 'decision for the file, top-down. A file that cannot be read as a whole is INVALID_FILE and writes nothing.',
    body: {
      multipart: true,
      schema: z.object({
        file: z.string().meta({ description: 'The CSV file', format: 'binary', contentMediaType: 'text/csv' }),
        idempotency_prefix: z.string().min(1).max(200).describe('Stable per file; row n is keyed <prefix>-<n>'),
      }),
    },
    responses: { 200: { description: 'One result per data row', schema: s.v1Data(s.importResult) } },
    errors: ['NOT_WALLET_MERCHANT', 'INVALID_FILE'],
  },
  {
    method: 'get', path: '/v1/disbursements/imports', tag: 'Disbursements', summary: 'List past CSV imports, newest first',
    description: 'Every import is recorded with its answer\'s counts and total_debit, when, and who uploaded it (the team '
      + 'user, or the merchant\'s own key, with the role the key acted with).',
    query: paged(),
    responses: { 200: { description: 'A page of imports', schema: s.v1Page(s.importRecord) } },
    errors: ['NOT_WALLET_MERCHANT', 'INVALID_BODY'],
  },
  {
    method: 'get', path: '/v1/disbursements/imports/:id', tag: 'Disbursements', summary: 'Read a past CSV import',
    description: 'The import with its refused rows, in file order, each with the code and message its answer gave.',
    params: { id: uuidParam.describe('The import_id of the import\'s answer; anything but a UUID is 400 INVALID_ID') },
    responses: { 200: { description: 'The import and its refused rows', schema: s.v1Data(s.importDetail) } },
    errors: ['NOT_WALLET_MERCHANT', 'INVALID_ID', 'NOT_FOUND'],
  },
  {
    method: 'get', path: '/v1/disbursements/:id', tag: 'Disbursements', summary: 'Read a disbursement',
    params: { id: z.string().describe('The disbursement\'s UUID or its ref_code (DSB-…)') },
    responses: { 200: { description: 'The disbursement', schema: s.v1Data(s.disbursement) } },
    errors: ['NOT_WALLET_MERCHANT', 'DISBURSEMENT_NOT_FOUND'],
  },

  // Balance
  {
    method: 'get', path: '/v1/balance', tag: 'Balance', summary: 'The wallet balance',
    responses: { 200: { description: 'The balance', schema: s.v1Data(s.balance) } },
    errors: ['NOT_WALLET_MERCHANT'],
  },
  {
    method: 'get', path: '/v1/balance-history', tag: 'Balance', summary: 'Wallet movements, newest first',
    query: {
      ...paged(),
      type: transferKind.describe('Only movements of this type'),
      date_from: wibDay.describe('Posted on or after this WIB (UTC+7) day, YYYY-MM-DD'),
      date_to: wibDay.describe('Posted on or before this WIB (UTC+7) day; not before date_from'),
    },
    responses: { 200: { description: 'A page of movements', schema: s.v1Page(s.movement) } },
    errors: ['NOT_WALLET_MERCHANT', 'INVALID_BODY'],
  },
  {
    method: 'get', path: '/v1/balance-history/:id', tag: 'Balance', summary: 'Read a wallet movement',
    params: { id: uuidParam },
    responses: { 200: { description: 'The movement', schema: s.v1Data(s.movement) } },
    errors: ['NOT_WALLET_MERCHANT', 'INVALID_ID', 'NOT_FOUND'],
  },

  // Beneficiaries
  {
    method: 'get', path: '/v1/beneficiaries', tag: 'Beneficiaries', summary: 'List beneficiaries (default first, then newest)',
    responses: { 200: { description: 'Every live beneficiary, no meta', schema: s.v1List(s.beneficiary) } },
  },
  {
    method: 'post', path: '/v1/beneficiaries', tag: 'Beneficiaries', summary: 'Save a beneficiary',
    description: 'Same destination rules as a disbursement. Created PENDING and verified with the vendors afterwards; '
      + 'is_default true unsets the previous default.',
    headers: [createIdempotencyHeader],
    body: { schema: beneficiaries.createBody },
    responses: { 201: { description: 'The beneficiary', schema: s.v1Data(s.beneficiary), headers: replayed } },
    errors: ['MISSING_BANK_INFO', 'MISSING_EWALLET_INFO', 'BANK_NOT_FOUND', 'BANK_DISABLED', 'IDEMPOTENCY_KEY_REUSED'],
  },
  {
    method: 'get', path: '/v1/beneficiaries/:id', tag: 'Beneficiaries', summary: 'Read a beneficiary',
    params: { id: uuidParam },
    responses: { 200: { description: 'The beneficiary', schema: s.v1Data(s.beneficiary) } },
    errors: ['INVALID_ID', 'BENEFICIARY_NOT_FOUND'],
  },
  {
    method: 'post', path: '/v1/beneficiaries/:id/verify', tag: 'Beneficiaries', summary: 'Check a beneficiary\'s account again',
    description: 'VERIFIED or FAILED: back to PENDING, verified_name cleared, and a new account-name inquiry queued. '
      + 'While a check is PENDING nothing is queued and the beneficiary is answered as it is, so a repeat is harmless. '
      + 'A check whose inquiries all fail ends FAILED.',
    params: { id: uuidParam },
    responses: { 200: { description: 'The beneficiary, PENDING', schema: s.v1Data(s.beneficiary) } },
    errors: ['INVALID_ID', 'BENEFICIARY_NOT_FOUND'],
  },
  {
    method: 'delete', path: '/v1/beneficiaries/:id', tag: 'Beneficiaries', summary: 'Delete a beneficiary (soft)',
    params: { id: uuidParam },
    responses: { 200: { description: 'Deleted; disbursements that used it keep it', schema: s.deleted } },
    errors: ['INVALID_ID', 'BENEFICIARY_NOT_FOUND'],
  },

  // Settlements
  {
    method: 'get', path: '/v1/settlements', tag: 'Settlements', summary: 'List settlements, newest first',
    query: paged(10, 100),
    responses: { 200: { description: 'A page of settlements (none for WALLET merchants)', schema: s.v1Page(s.settlement) } },
    errors: ['INVALID_BODY'],
  },
  {
    method: 'get', path: '/v1/settlements/:id', tag: 'Settlements', summary: 'Read a settlement',
    params: { id: uuidParam },
    responses: { 200: { description: 'The settlement', schema: s.v1Data(s.settlement) } },
    errors: ['INVALID_ID', 'NOT_FOUND'],
  },

  // Webhook deliveries
  {
    method: 'get', path: '/v1/webhook-deliveries', tag: 'Webhooks', summary: 'List the webhooks sent to you, newest first',
    description: 'Every delivery Kasir made or is making to your notify URLs, with its status and the resource it reports on. '
      + 'Deliveries that ended more than the installation\'s retention ago (90 days by default) are retired: meta.retained_since says from when the log is complete.',
    query: { ...paged(), status: webhookDeliveries.listQuery.shape.status, event: webhookDeliveries.listQuery.shape.event.meta({ examples: ['order.paid'] }) },
    responses: { 200: { description: 'A page of deliveries', schema: s.v1RetainedPage(s.webhookDelivery) } },
    errors: ['INVALID_BODY'],
  },
  {
    method: 'get', path: '/v1/webhook-deliveries/:id', tag: 'Webhooks', summary: 'Read a delivery with its attempts',
    params: { id: uuidParam },
    responses: { 200: { description: 'The delivery', schema: s.v1Data(s.webhookDeliveryDetail) } },
    errors: ['INVALID_ID', 'NOT_FOUND'],
  },
  {
    method: 'post', path: '/v1/webhook-deliveries/:id/resend', tag: 'Webhooks', summary: 'Send a delivery again now',
    description: 'The same body and webhook-id, one more attempt now (a delivered one too). Owner keys only.',
    params: { id: uuidParam },
    responses: { 202: { description: 'Queued: the delivery, PENDING', schema: s.v1Data(s.webhookDelivery) } },
    errors: ['INVALID_ID', 'NOT_FOUND'],
  },
  {
    method: 'post', path: '/v1/webhook-deliveries/samples', tag: 'Webhooks', summary: 'Send yourself a sample webhook',
    description: 'A sample of any event of the catalogue (docs/webhook-events.md), sent to notify_url or else your default notify '
      + 'URL through the real outbox: signed with your webhook secret, retried and listed like any delivery. The body says '
      + '`"sample": true` and its ids are sample ids, never one of your resources. At most '
      + `${webhookDeliveries.SAMPLES_PER_MINUTE} a minute per merchant (429 with Retry-After). Owner keys only.`,
    body: { schema: webhookDeliveries.sampleRequest },
    responses: { 202: { description: 'Queued: the sample delivery, PENDING', schema: s.v1Data(s.webhookDelivery) } },
  },

  // Master data
  {
    method: 'get', path: '/v1/banks', tag: 'Master data', summary: 'Enabled banks',
    responses: { 200: { description: 'Enabled banks by sort_order, no meta', schema: s.v1List(s.bank), headers: masterDataCache } },
  },
  {
    method: 'get', path: '/v1/ewallets', tag: 'Master data', summary: 'Enabled e-wallets',
    responses: { 200: { description: 'Enabled e-wallets by sort_order, no meta', schema: s.v1List(s.ewallet), headers: masterDataCache } },
  },

  // Reports
  {
    method: 'get', path: '/v1/reports/profits', tag: 'Reports', summary: 'Financial totals over WIB days',
    description: 'Defaults: the current WIB month.',
    query: { date_from: wibDay, date_to: wibDay, from: wibDay.describe('date_from under another name'), to: wibDay.describe('date_to under another name') },
    responses: { 200: { description: 'The totals', schema: s.v1Data(s.profits) } },
    errors: ['INVALID_BODY'],
  },
  {
    method: 'post', path: '/v1/reports/export', tag: 'Reports', summary: 'Request a CSV export',
    description: 'Built asynchronously: poll GET /v1/reports/exports/{id}, or wait for the export.completed webhook (sent to '
      + 'the merchant\'s default notify URL), then download from download_url. disbursements and balance_history exports '
      + 'are for WALLET merchants.',
    headers: [createIdempotencyHeader],
    body: { schema: reports.exportBody },
    responses: { 201: { description: 'The export, QUEUED', schema: s.v1Data(s.exportJob), headers: replayed } },
    errors: ['NOT_WALLET_MERCHANT', 'IDEMPOTENCY_KEY_REUSED'],
  },
  {
    method: 'get', path: '/v1/reports/exports', tag: 'Reports', summary: 'List exports, newest first',
    query: paged(),
    responses: { 200: { description: 'A page of exports', schema: s.v1Page(s.exportJob) } },
    errors: ['INVALID_BODY'],
  },
  {
    method: 'get', path: '/v1/reports/exports/:id', tag: 'Reports', summary: 'Read an export',
    description: 'Poll it after requesting the export (or wait for the export.completed webhook): download_url is set once '
      + 'it is COMPLETED.',
    params: { id: uuidParam },
    responses: { 200: { description: 'The export', schema: s.v1Data(s.exportJob) } },
    errors: ['INVALID_ID', 'NOT_FOUND'],
  },
  {
    method: 'get', path: '/v1/reports/exports/:id/download', tag: 'Reports', summary: 'Download a completed export',
    params: { id: uuidParam },
    responses: {
      200: {
        description: 'The CSV file',
        media: { type: 'text/csv', description: 'UTF-8 CSV with a header row' },
        headers: { 'Content-Disposition': { description: 'attachment; filename="…"', schema: z.string() } },
      },
    },
    description: 'The contract answers 200 or 404. An export that exists but has no file is 404 under its own code: '
      + 'EXPORT_NOT_READY while QUEUED or PROCESSING (with Retry-After; poll the export or wait for export.completed), '
      + 'EXPORT_FAILED once FAILED (request a new export). NOT_FOUND: no such export for this merchant.',
    errors: ['INVALID_ID', 'NOT_FOUND', 'EXPORT_NOT_READY', 'EXPORT_FAILED'],
  },

  // Team
  {
    method: 'get', path: '/v1/my/users', tag: 'Team', summary: 'List the team\'s users (oldest first)',
    responses: { 200: { description: 'Every current user, no meta', schema: s.v1List(s.user) } },
  },
  {
    method: 'post', path: '/v1/my/users', tag: 'Team', summary: 'Add a user',
    description: 'Users get API keys from a platform operator (`user:issue-key`), not from the API.',
    headers: [createIdempotencyHeader],
    body: { schema: team.createBody },
    responses: { 201: { description: 'The user', schema: s.v1Data(s.user), headers: replayed } },
    errors: ['DUPLICATE_EMAIL', 'IDEMPOTENCY_KEY_REUSED'],
  },
  {
    method: 'patch', path: '/v1/my/users/:user_id/role', tag: 'Team', summary: 'Change a user\'s role',
    params: { user_id: uuidParam },
    body: { schema: team.roleBody },
    responses: { 200: { description: 'The user', schema: s.v1Data(s.user) } },
    errors: ['INVALID_ID', 'USER_NOT_FOUND', 'LAST_OWNER'],
  },
  {
    method: 'delete', path: '/v1/my/users/:user_id/role', tag: 'Team', summary: 'Remove a user',
    description: 'Spec 4.9 removes a user with DELETE on its role. The user\'s API keys are revoked.',
    params: { user_id: uuidParam },
    responses: { 200: { description: 'Removed', schema: s.deleted } },
    errors: ['INVALID_ID', 'USER_NOT_FOUND', 'LAST_OWNER'],
  },

  // Legacy
  {
    method: 'post', path: '/api/order/create', tag: legacy, auth: 'legacy', summary: 'Create a QRIS order (legacy)',
    description: '`signature` = lowercase hex SHA-512 of `clientId|orderId|totalAmount|clientSecret`. A used '
      + 'orderId (from either API) is never answered with the existing order.',
    body: { schema: legacyOrders.createBody },
    responses: { 200: { description: 'The order', schema: s.legacyOk(s.legacyOrder) } },
    legacyErrors: {
      400: [legacyMessages.invalidParameters, legacyMessages.merchantSettingInvalid, legacyMessages.orderIdUsed],
      401: [legacyMessages.invalidClient, legacyMessages.invalidSignature],
      503: ['Order is pending confirmation at the gateway; query it before retrying', 'Payment gateway error; retry later'],
    },
  },
  {
    method: 'post', path: '/api/order/query', tag: legacy, auth: 'legacy', summary: 'Query an order (legacy)',
    description: '`signature` = lowercase hex SHA-512 of `clientId|orderId|clientSecret`. Finds V1-created orders too.',
    body: { schema: legacyOrders.queryBody },
    responses: { 200: { description: 'The order', schema: s.legacyOk(s.legacyOrder) } },
    legacyErrors: {
      400: [legacyMessages.invalidParameters],
      401: [legacyMessages.invalidClient, legacyMessages.invalidSignature],
      404: ['Order with orderId <orderId> not found.'],
    },
  },
  {
    method: 'post', path: '/api/disbursement/get-balance', tag: legacy, auth: 'legacy', summary: 'Wallet balance (legacy)',
    headers: [legacyRsaHeader],
    body: { schema: legacyDisbursements.clientBody },
    responses: { 200: { description: 'The balance as a decimal string', schema: s.legacyOk(s.legacyBalance) } },
    legacyErrors: {
      400: [legacyMessages.invalidParameters, legacyMessages.notWalletMerchant],
      401: [legacyMessages.invalidClient, legacyMessages.publicKeyNotSet, legacyMessages.invalidXSignature],
    },
  },
  {
    method: 'post', path: '/api/disbursement/create', tag: legacy, auth: 'legacy', summary: 'Bank disbursement (legacy)',
    description: 'The orderId is the disbursement\'s idempotency key, in the key space V1 shares.',
    headers: [legacyRsaHeader],
    body: { schema: legacyDisbursements.bankBody },
    responses: { 200: { description: 'The disbursement, PENDING (or IN_REVIEW)', schema: s.legacyOk(s.legacyBankDisbursementCreated) } },
    legacyErrors: {
      400: [legacyMessages.invalidParameters, legacyMessages.notWalletMerchant, 'Disbursement with orderId <orderId> Already Exists.',
        legacyMessages.bankUnusable, legacyMessages.amountAboveLimit, legacyMessages.dailyLimitExceeded, legacyMessages.insufficientBalance],
      401: [legacyMessages.invalidClient, legacyMessages.publicKeyNotSet, legacyMessages.invalidXSignature],
    },
  },
  {
    method: 'post', path: '/api/disbursement/create-ewallet', tag: legacy, auth: 'legacy', summary: 'E-wallet disbursement (legacy)',
    description: 'accountNumber is the e-wallet phone in its local 08… form. DANA needs at least 20,000.',
    headers: [legacyRsaHeader],
    body: { schema: legacyDisbursements.ewalletBody },
    responses: { 200: { description: 'The disbursement, PENDING (or IN_REVIEW)', schema: s.legacyOk(s.legacyEwalletDisbursementCreated) } },
    legacyErrors: {
      400: [legacyMessages.invalidParameters, legacyMessages.notWalletMerchant, legacyMessages.invalidEwalletCode, legacyMessages.danaMinimum,
        'Disbursement with orderId <orderId> Already Exists.', legacyMessages.amountAboveLimit, legacyMessages.dailyLimitExceeded,
        legacyMessages.insufficientBalance],
      401: [legacyMessages.invalidClient, legacyMessages.publicKeyNotSet, legacyMessages.invalidXSignature],
    },
  },
  {
    method: 'post', path: '/api/disbursement/query', tag: legacy, auth: 'legacy', summary: 'Query a disbursement (legacy)',
    description: 'Finds V1-created disbursements by their idempotency_key too.',
    headers: [legacyRsaHeader],
    body: { schema: legacyDisbursements.queryBody },
    responses: { 200: { description: 'The disbursement', schema: s.legacyOk(s.legacyDisbursement) } },
    legacyErrors: {
      400: [legacyMessages.invalidParameters, legacyMessages.notWalletMerchant],
      401: [legacyMessages.invalidClient, legacyMessages.publicKeyNotSet, legacyMessages.invalidXSignature],
      404: ['Disbursement with orderId <orderId> not found.'],
    },
  },
];

const tags = [
  { name: 'System', description: 'Health and brand; no API key.' },
  { name: 'Orders', description: 'QRIS payment orders, their timeline, reconciliation and refunds.' },
  { name: 'Refunds', description: 'Refunds of paid orders, listed and read to reconcile with (docs/money.md, Refunds).' },
  { name: 'Disbursements', description: 'Payouts from the wallet; WALLET merchants only.' },
  { name: 'Balance', description: 'The wallet and its movements; WALLET merchants only.' },
  { name: 'Beneficiaries', description: 'Saved payout destinations.' },
  { name: 'Settlements', description: 'Daily settlements of MANUAL merchants.' },
  { name: 'Webhooks', description: 'The webhooks Kasir sent you, and resending one (docs/webhooks.md).' },
  { name: 'Master data', description: 'Banks and e-wallets a disbursement may go to.' },
  { name: 'Reports', description: 'Totals and asynchronous CSV exports.' },
  { name: 'Team', description: 'The merchant\'s users and roles; owner only.' },
  { name: legacy, description: 'The legacy compatibility API under /api/: `{code, message, data}` envelope, HTTP '
    + 'status equal to code, signatures instead of the API key, decimal-string amounts and WIB times.' },
];

// ---------- What each operation answers besides its successes

/** The roles whose keys may call the operation (api/http/roles.ts decides; the merchant's own key is owner). */
export function rolesOf(op: Operation): Role[] {
  if ((op.auth ?? 'apiKey') !== 'apiKey') return [];
  const path = op.path.replace(/^\/v1/, '').replace(/:[a-z_]+/g, 'x');
  return role.options.filter((r) => mayDo(r, permissionFor(op.method, path)));
}

/** V1 error codes by HTTP status: the operation's own plus those of authentication, roles and bodies. */
export function errorsOf(op: Operation): Map<number, ErrorCode[]> {
  if (op.auth === 'legacy') return new Map();
  const byStatus = new Map<number, ErrorCode[]>();
  const add = (code: ErrorCode, status: number = errorCatalogue[code][0]) => {
    const list = byStatus.get(status) ?? [];
    if (!list.includes(code)) list.push(code);
    byStatus.set(status, list);
  };
  if ((op.auth ?? 'apiKey') === 'apiKey') {
    add('UNAUTHORIZED');
    add('MERCHANT_INACTIVE');
    // Failed authentications from the address, or the key's own request limit (Retry-After).
    add('TOO_MANY_REQUESTS');
    if (rolesOf(op).length < role.options.length) add('FORBIDDEN');
  }
  if (op.body && !op.body.multipart) {
    add('INVALID_JSON');
    add('INVALID_BODY');
    add('INVALID_BODY', 413);
  }
  if (op.body?.multipart) add('INVALID_FILE', 413);
  for (const code of op.errors ?? []) add(code);
  add('INTERNAL_ERROR');
  return new Map([...byStatus].sort(([a], [b]) => a - b));
}

/** Legacy error messages by HTTP status (= envelope code). */
export function legacyErrorsOf(op: Operation): Map<number, string[]> {
  if (op.auth !== 'legacy') return new Map();
  const entries = Object.entries(op.legacyErrors ?? {}).map(([status, messages]) => [Number(status), messages] as [number, string[]]);
  entries.push([429, [legacyMessages.tooManyRequests]]);
  entries.push([500, ['Internal Server Error']]);
  return new Map(entries.sort(([a], [b]) => a - b));
}

/** The JSON (zod) schema of a response: documented success, V1 error or legacy error. */
export function responseSchemaOf(op: Operation, status: number): z.ZodType | null {
  const reply = op.responses[status];
  if (reply) return reply.schema ?? null;
  const codes = errorsOf(op).get(status);
  if (codes) return s.v1Error(codes as [ErrorCode, ...ErrorCode[]]);
  if (legacyErrorsOf(op).has(status)) return s.legacyError(status as LegacyStatus | 500);
  return null;
}

/**
 * The JSON body a client builds from the document for `op`: each property's example (its own,
 * or that of the component it refers to), and the names of required properties that have none.
 * The Postman collection sends these; test/api/openapi.test.ts holds the server to accept them.
 */
export function requestExample(op: Operation): { body: Record<string, unknown>; missing: string[] } {
  const doc = openApiDocument() as { paths: Record<string, Record<string, any>>; components: { schemas: Record<string, any> } };
  const schema = doc.paths[openApiPath(op.path)][op.method].requestBody?.content?.['application/json']?.schema;
  const body: Record<string, unknown> = {};
  const missing: string[] = [];
  if (!schema) return { body, missing };
  for (const [name, prop] of Object.entries((schema.properties ?? {}) as Record<string, any>)) {
    const example = prop.examples?.[0] ?? (prop.$ref ? doc.components.schemas[prop.$ref.replace('#/components/schemas/', '')]?.examples?.[0] : undefined);
    if (example !== undefined) body[name] = example;
    else if (schema.required?.includes(name)) missing.push(name);
  }
  return { body, missing };
}

/** `/v1/orders/:ref_code` → `/v1/orders/{ref_code}`. */
export function openApiPath(expressPath: string): string {
  return expressPath.replace(/:([A-Za-z_]+)/g, '{$1}');
}

// ---------- zod → JSON Schema

interface Build {
  components: Record<string, JsonSchema>;
  /** Error answers by name, with every place that answers them (see shareResponses). */
  responses: Map<string, { object: Record<string, unknown>; uses: [Record<string, unknown>, number][] }>;
}

/**
 * Examples for string formats: viewers otherwise make samples up from zod's patterns, and an
 * e-mail or a timestamp built from a regular expression is no help to a reader.
 */
const FORMAT_EXAMPLES: Record<string, string> = {
  email: 'budi@example.com',
  'date-time': '2026-11-21T08:30:00.000Z',
  date: '2026-11-21',
  uri: 'https://shop.example/orders/INV-1001',
  uuid: '3f0c2a8e-5b7d-4c1e-9a6f-2d8b7e4c1a90',
};

/**
 * Shapes named once under components and referenced everywhere else. z.toJSONSchema inlines a
 * format's whole pattern at every use (a date-time's is ~400 characters, a UUID's ~150) and the
 * request bodies of api/v1 and api/legacy build their own instances, so a use is found by its
 * converted JSON, not by zod instance: a subschema whose keywords other than annotations equal
 * a shape's becomes `{ $ref }`, keeping the annotations of its own that differ.
 */
const SHARED_SHAPES: Record<string, z.ZodType> = {
  Uuid: z.uuid(),
  Instant: z.iso.datetime().describe('ISO 8601 UTC'),
  Day: calendarDay().meta({ format: 'date', description: 'A calendar day, YYYY-MM-DD, 1900-01-01 to 9999-12-31' }),
  Email: emailAddress(),
  Url: z.url(),
  ErrorCode: s.errorCode,
  WibTime: s.wibTime,
  DecimalRupiah: s.decimal,
};

const ANNOTATIONS = new Set(['description', 'examples', 'default', 'title']);

/** Stable JSON with sorted keys: two subschemas equal as JSON Schema compare equal. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  return `{${Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${canonical((value as JsonSchema)[k])}`).join(',')}}`;
}

function withoutAnnotations(schema: JsonSchema): JsonSchema {
  return Object.fromEntries(Object.entries(schema).filter(([k]) => !ANNOTATIONS.has(k)));
}

/** Replaces every use of a shared shape under `value` (examples are instance data, left alone). */
function referShared(value: unknown, shapes: Map<string, { name: string; schema: JsonSchema }>): unknown {
  if (Array.isArray(value)) return value.map((item) => referShared(item, shapes));
  if (value === null || typeof value !== 'object') return value;
  const object = value as JsonSchema;
  const shape = typeof object.type === 'string' ? shapes.get(canonical(withoutAnnotations(object))) : undefined;
  if (shape) {
    const own = Object.entries(object).filter(([k, v]) => ANNOTATIONS.has(k) && canonical(v) !== canonical(shape.schema[k]));
    return { $ref: `#/components/schemas/${shape.name}`, ...Object.fromEntries(own) };
  }
  return Object.fromEntries(Object.entries(object).map(([k, v]) =>
    [k, k === 'examples' || k === 'example' ? v : referShared(v, shapes)]));
}

function convert(build: Build, schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  const json = z.toJSONSchema(schema, {
    target: 'draft-2020-12',
    io,
    override: ({ zodSchema, jsonSchema }) => {
      const documented = checkedByService.get(zodSchema);
      if (documented) Object.assign(jsonSchema, documented);
      if (examples.has(zodSchema)) jsonSchema.examples = [examples.get(zodSchema)];
      const example = typeof jsonSchema.format === 'string' ? FORMAT_EXAMPLES[jsonSchema.format] : undefined;
      if (example && !jsonSchema.examples) jsonSchema.examples = [example];
    },
  }) as JsonSchema;
  const { $schema: _dialect, $defs, ...root } = json;
  for (const [id, def] of Object.entries(($defs ?? {}) as Record<string, JsonSchema>)) {
    const component = pointRefs(def) as JsonSchema;
    const known = build.components[id];
    if (known && JSON.stringify(known) !== JSON.stringify(component)) throw new Error(`component ${id} converts two ways`);
    build.components[id] = component;
  }
  return pointRefs(root) as JsonSchema;
}

/** zod writes `#/$defs/<id>`; the document keeps them under components. */
function pointRefs(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(pointRefs);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).map(([key, item]) =>
    key === '$ref' && typeof item === 'string' ? [key, item.replace(/^#\/\$defs\//, '#/components/schemas/')] : [key, pointRefs(item)]));
}

function json(build: Build, schema: z.ZodType, examples?: Record<string, { summary: string; value: unknown }>) {
  return { 'application/json': { schema: convert(build, schema, 'output'), ...(examples ? { examples } : {}) } };
}

/** `post /v1/orders/:ref_code/refund` → `postV1OrdersRefCodeRefund`. */
function operationIdOf(op: Operation): string {
  return op.method + op.path.split(/[/:_-]/).map((w) => w && w[0].toUpperCase() + w.slice(1)).join('');
}

const key = (op: Operation) => `${op.method} ${op.path}`;

interface Link {
  /** The target operation, `<method> <express path>`. */
  to: string;
  parameters?: Record<string, string>;
  requestBody?: unknown;
  description: string;
}

/**
 * OpenAPI links: the create → read → act chains, so a tool (a stateful fuzzer, a client
 * generator) can walk from what a create answers to the operations on the record it made.
 * Keyed by the creating operation, then its success status.
 */
const orderLinks: Record<string, Link> = {
  ReadOrder: { to: 'get /v1/orders/:ref_code', parameters: { ref_code: '$response.body#/data/ref_code' }, description: 'Read the order' },
  OrderEvents: { to: 'get /v1/orders/:ref_code/events', parameters: { ref_code: '$response.body#/data/ref_code' }, description: 'The order\'s status timeline' },
  FetchOrderStatus: { to: 'post /v1/orders/:ref_code/fetch-status', parameters: { ref_code: '$response.body#/data/ref_code' }, description: 'Reconcile the order with its gateway' },
  RefundOrder: { to: 'post /v1/orders/:ref_code/refund', parameters: { ref_code: '$response.body#/data/ref_code' }, description: 'Refund the order once it is PAID' },
  OrderRefunds: { to: 'get /v1/orders/:ref_code/refunds', parameters: { ref_code: '$response.body#/data/ref_code' }, description: 'The order\'s refunds' },
};
const LINKS: Record<string, Record<number, Record<string, Link>>> = {
  'post /v1/orders': { 201: orderLinks, 200: orderLinks },
  'post /v1/orders/:ref_code/refund': {
    201: { ReadRefund: { to: 'get /v1/refunds/:id', parameters: { id: '$response.body#/data/id' }, description: 'Read the refund' } },
  },
  'post /v1/disbursements': {
    201: { ReadDisbursement: { to: 'get /v1/disbursements/:id', parameters: { id: '$response.body#/data/id' }, description: 'Read the disbursement' } },
  },
  'post /v1/beneficiaries': {
    201: {
      ReadBeneficiary: { to: 'get /v1/beneficiaries/:id', parameters: { id: '$response.body#/data/id' }, description: 'Read the beneficiary (PENDING until its account is checked)' },
      PayBeneficiary: {
        to: 'post /v1/disbursements',
        requestBody: { beneficiary_id: '$response.body#/data/id', amount: 10_000, idempotency_key: '$response.body#/data/id' },
        description: 'Pay the beneficiary once it is VERIFIED (WALLET merchants)',
      },
    },
  },
  'post /v1/reports/export': {
    201: {
      ReadExport: { to: 'get /v1/reports/exports/:id', parameters: { id: '$response.body#/data/id' }, description: 'Read the export (poll until COMPLETED)' },
      DownloadExport: { to: 'get /v1/reports/exports/:id/download', parameters: { id: '$response.body#/data/id' }, description: 'Download the file once the export is COMPLETED' },
    },
  },
};

/** `INVALID_BODY` → `InvalidBody`. */
function pascal(code: string): string {
  return code.toLowerCase().split('_').filter(Boolean).map((w) => w[0].toUpperCase() + w.slice(1)).join('');
}

/**
 * Records an error answer under `name` and returns it to be placed inline; shareResponses later
 * moves those answered by two operations or more to components/responses. Names come from the
 * codes (or legacy messages), so one name must always describe the same answer.
 */
function shareResponse(build: Build, name: string, holder: Record<string, unknown>, status: number, object: Record<string, unknown>) {
  const known = build.responses.get(name);
  if (known && canonical(known.object) !== canonical(object)) throw new Error(`response ${name} is described two ways`);
  const entry = known ?? { object, uses: [] };
  entry.uses.push([holder, status]);
  build.responses.set(name, entry);
  return object;
}

/** Error answers given by several operations become one `#/components/responses/<name>` each. */
function shareResponses(build: Build): Record<string, unknown> {
  const shared: Record<string, unknown> = {};
  for (const [name, { object, uses }] of [...build.responses].sort(([a], [b]) => a.localeCompare(b))) {
    if (uses.length < 2) continue;
    shared[name] = object;
    for (const [holder, status] of uses) holder[status] = { $ref: `#/components/responses/${name}` };
  }
  return shared;
}

function operationObject(build: Build, op: Operation) {
  const parameters: unknown[] = [];
  for (const name of [...op.path.matchAll(/:([A-Za-z_]+)/g)].map((m) => m[1])) {
    parameters.push({ name, in: 'path', required: true, schema: convert(build, op.params?.[name] ?? z.string(), 'input') });
  }
  for (const [name, schema] of Object.entries(op.query ?? {})) {
    parameters.push({ name, in: 'query', required: false, schema: convert(build, schema, 'input') });
  }
  for (const header of op.headers ?? []) {
    parameters.push({ name: header.name, in: 'header', required: header.required, description: header.description, schema: convert(build, header.schema, 'input') });
  }

  const responses: Record<string, unknown> = {};
  for (const [status, reply] of Object.entries(op.responses)) {
    responses[status] = {
      description: reply.description,
      ...(reply.headers ? {
        headers: Object.fromEntries(Object.entries(reply.headers).map(([name, h]) =>
          [name, { description: h.description, schema: convert(build, h.schema, 'output') }])),
      } : {}),
      content: reply.schema
        ? json(build, reply.schema)
        : { [reply.media!.type]: { schema: { type: 'string', description: reply.media!.description } } },
    };
  }
  for (const [status, codes] of errorsOf(op)) {
    const examples = Object.fromEntries(codes.map((code) => [code, {
      summary: errorCatalogue[code][1],
      value: { success: false, error: { code, message: errorCatalogue[code][1] } },
    }]));
    const name = codes.map(pascal).join('Or');
    responses[status] = shareResponse(build, name, responses, status,
      { description: codes.join(', '), content: json(build, s.v1Error(codes as [ErrorCode, ...ErrorCode[]]), examples) });
  }
  for (const [status, messages] of legacyErrorsOf(op)) {
    const examples = Object.fromEntries(messages.map((message, i) => [`m${i + 1}`, { summary: message, value: { code: status, message, data: null } }]));
    const name = `Legacy${status}${messages.map((m) => pascal(m.replace(/[^A-Za-z0-9]+/g, '_'))).join('Or')}`;
    responses[status] = shareResponse(build, name, responses, status,
      { description: messages.join(' | '), content: json(build, s.legacyError(status as LegacyStatus | 500), examples) });
  }

  const roles = rolesOf(op);
  const description = [
    op.description,
    roles.length ? `Roles: ${roles.join(', ')} (the merchant's own key acts as owner).` : undefined,
  ].filter(Boolean).join('\n\n');

  for (const [status, links] of Object.entries(LINKS[key(op)] ?? {})) {
    const response = responses[status] as Record<string, unknown> | undefined;
    if (!response) throw new Error(`links for ${key(op)} ${status}, which it does not answer`);
    response.links = Object.fromEntries(Object.entries(links).map(([name, link]) => {
      const target = operations.find((o) => key(o) === link.to);
      if (!target) throw new Error(`link ${name} of ${key(op)} to ${link.to}, no such operation`);
      return [name, {
        operationId: operationIdOf(target),
        ...(link.parameters ? { parameters: link.parameters } : {}),
        ...(link.requestBody ? { requestBody: link.requestBody } : {}),
        description: link.description,
      }];
    }));
  }

  return {
    tags: [op.tag],
    summary: op.summary,
    ...(description ? { description } : {}),
    operationId: operationIdOf(op),
    ...((op.auth ?? 'apiKey') === 'apiKey' ? {} : { security: [] }),
    ...(roles.length ? { 'x-roles': roles } : {}),
    ...(parameters.length ? { parameters } : {}),
    ...(op.body ? {
      requestBody: {
        required: op.body.required ?? true,
        content: { [op.body.multipart ? 'multipart/form-data' : 'application/json']: { schema: convert(build, op.body.schema, 'input') } },
      },
    } : {}),
    responses,
  };
}

// ---------- Webhooks (OpenAPI 3.1 `webhooks`): what Kasir sends to a merchant's notify URL

const webhookHeaders: HeaderParam[] = [
  { name: 'X-Kasir-Event', required: true, description: 'The event\'s name (`order.paid`, …), on every body shape, legacy ones included.', schema: z.string() },
  { name: 'X-Signature', required: false, description: 'With a webhook secret: `sha256=<lowercase hex HMAC-SHA256 of the raw body>` keyed with the secret string (docs/webhooks.md).', schema: z.string() },
  { name: 'webhook-id', required: true, description: 'The delivery id, the same on every retry and resend (a V1 body\'s event_id). Signed by webhook-signature, not by X-Signature: dedupe on it after verifying webhook-signature and its time window (docs/webhooks.md, Which to verify).', schema: z.string() },
  { name: 'webhook-timestamp', required: true, description: 'Unix seconds of this attempt.', schema: z.string() },
  { name: 'webhook-signature', required: false, description: 'With a webhook secret: Standard Webhooks `v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>">`.', schema: z.string() },
];

interface Webhook {
  summary: string;
  description: string;
  schema: z.ZodType;
  examples: Record<string, { summary: string; value: unknown }>;
}

/** One entry per event of the catalogue (api/openapi/webhook-events.ts), keyed by its name. */
export const webhooks: Record<string, Webhook> = Object.fromEntries(webhookEvents.map((e) => {
  const legacy = legacySampleBody(e);
  return [e.name, {
    summary: e.summary,
    description: `Sent to: ${e.destination}${e.legacy ? ' Resources created through the legacy API get the legacy shape.' : ''}`,
    schema: e.legacy ? z.union([e.schema, e.legacy]) : e.schema,
    examples: {
      v1: { summary: 'V1 body', value: sampleBody(e) },
      ...(legacy ? { legacy: { summary: 'Legacy-created resource', value: legacy } } : {}),
    },
  }];
}));

function webhookObject(build: Build, hook: Webhook) {
  return {
    post: {
      summary: hook.summary,
      description: `${hook.description} A 2xx within 10 s acknowledges it; anything else is retried for about three days (at-least-once).`,
      security: [],
      parameters: webhookHeaders.map((h) => ({ name: h.name, in: 'header', required: h.required, description: h.description, schema: convert(build, h.schema, 'input') })),
      requestBody: { required: true, content: json(build, hook.schema, hook.examples) },
      responses: { 200: { description: 'Any 2xx acknowledges the delivery' } },
    },
  };
}

// ---------- The document

let built: Record<string, unknown> | null = null;
let text: string | null = null;

/** The document as served and as docs/openapi.json holds it. */
export function openApiText(): string {
  text ??= `${JSON.stringify(openApiDocument(), null, 2)}\n`;
  return text;
}

/** The OpenAPI 3.1 document (built once per process; deterministic, so docs/openapi.json can be compared). */
export function openApiDocument(): Record<string, unknown> {
  if (built) return built;
  const build: Build = { components: {}, responses: new Map() };
  const paths: Record<string, Record<string, unknown>> = {};
  for (const op of operations) {
    const path = openApiPath(op.path);
    paths[path] ??= {};
    paths[path][op.method] = operationObject(build, op);
  }
  const hooks = Object.fromEntries(Object.entries(webhooks).map(([name, hook]) => [name, webhookObject(build, hook)]));
  convert(build, s.errorEnvelope, 'output');
  const responses = shareResponses(build);
  const shapes = new Map(Object.entries(SHARED_SHAPES).map(([name, schema]) => {
    const json = convert(build, schema, 'output');
    return [canonical(withoutAnnotations(json)), { name, schema: json }];
  }));
  const schemas = referShared(build.components, shapes) as Record<string, JsonSchema>;
  // Added after the pass: a shape is not a use of itself.
  for (const { name, schema } of shapes.values()) schemas[name] = schema;
  built = referShared({
    openapi: '3.1.1',
    info: {
      title: 'Kasir merchant payment API',
      version: '1.0.0',
      description: 'QRIS payment orders, refunds, wallet disbursements, balance, beneficiaries, settlements, master data, '
        + 'reports and team users (V1), and the legacy compatibility API under /api/. Amounts are whole Rupiah everywhere '
        + '(never minor units). V1 answers `{success, data[, meta]}` or `{success: false, error: {code, message}}`; clients '
        + 'branch on error.code. The API domain decides the brand: use the domain your key belongs to.',
    },
    servers: [{ url: '/', description: 'The Kasir server answering this document' }],
    tags,
    security: [{ ApiKey: [] }],
    paths,
    webhooks: hooks,
    components: {
      securitySchemes: {
        ApiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key', description: 'The merchant\'s (or a team user\'s) API key: 64 hex characters (keys an earlier release issued with the kasir_sk_ prefix keep working as issued). Never in the query string, never as Authorization: Bearer.' },
      },
      responses,
    },
  }, shapes) as Record<string, unknown>;
  (built.components as Record<string, unknown>).schemas = Object.fromEntries(Object.entries(schemas).sort(([a], [b]) => a.localeCompare(b)));
  return built;
}
