// V1 orders (spec 4.2). POST runs: signature → validation → the API's one order-creation path
// (api/order-create.ts: createOrder, then wait for the vendor worker's outcome) → answer from
// the key's stored response or the row. The URLs an order shows (checkout_url, qr_url) are on
// its merchant's brand domain: the request's brand, since a key works only on its own brand's
// domain (api/http/auth.ts; db/brands.ts brandBaseUrl).
import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import type { AppContext } from '../context.ts';
import { ApiError } from '../../db/errors.ts';
import { brandBaseUrl } from '../../db/brands.ts';
import { publicBaseUrl } from '../../db/config.ts';
import { webhookSecretOf } from '../../db/merchants.ts';
import {
  findIdempotencyKey,
  findMerchantOrder,
  findOrderById,
  listedOrderStatus,
  listOrderEvents,
  type OrderRow,
} from '../../db/orders.sql.ts';
import { sendJob } from '../../db/queue.ts';
import { checkNotifyUrl } from '../../db/notify-url.ts';
import { attemptedOrder, createOrderAndWait } from '../order-create.ts';
import { sendData, sendPage, sendStored, pageMeta } from '../http/envelope.ts';
import { cursorOf, encodeCursor, pagination } from '../http/pagination.ts';
import { dayRange, knownQuery, oneOf } from '../http/list-filters.ts';
import { orderListPage } from '../../db/orders.ts';
import { normalizePhone, phoneField } from '../http/phone.ts';
import { verifyBodySignature } from '../../db/signatures.ts';
import { emailAddress, expects, idempotencyKeyOf, notifyUrlField, parseBody, rupiahAmount } from '../http/validate.ts';
import { memberText } from '../../db/present/json-text.ts';
import { orderResponseBody, presentOrder, presentOrderEvent } from '../../db/present/orders.ts';

// Messages come from api/http/validate.ts; payment_method is any string here so that another
// method is the contract's UNSUPPORTED_PAYMENT_METHOD, not INVALID_BODY.
export const createBody = z.strictObject({
  merchant_order_id: z.string().min(1).max(255),
  amount: rupiahAmount(),
  payment_method: z.string(),
  customer_name: z.string().max(255).nullish(),
  customer_email: emailAddress().max(254).nullish(),
  customer_phone: phoneField().nullish(),
  notify_url: notifyUrlField().nullish(),
  return_url: z.url({ protocol: /^https?$/ }).max(2048).nullish(),
  expire_minutes: expects(z.number().int().min(0).max(10_080), 'an integer number of minutes').optional(),
  metadata: z.record(z.string(), z.unknown()).nullish(),
});

const SIGNATURE_FORM = 'sha256=<64 lowercase hex characters: HMAC-SHA256 of the raw body, keyed with the webhook secret>';

/** What is wrong with the form of an X-Signature value, or null when it has the right form. */
export function signatureFormProblem(signature: string): string | null {
  const value = signature.trim();
  if (/^sha256=[0-9a-f]{64}$/.test(value)) return null;
  if (/^[0-9a-f]{64}$/i.test(value)) return `X-Signature lacks the sha256= prefix: expected ${SIGNATURE_FORM}`;
  if (/^sha256=[0-9A-Fa-f]{64}$/i.test(value)) return `X-Signature must be lowercase: expected ${SIGNATURE_FORM}`;
  if (/^sha256=[A-Za-z0-9+/]{43}=$/.test(value)) return `X-Signature is base64; expected hex: ${SIGNATURE_FORM}`;
  return `X-Signature is not in the expected form: expected ${SIGNATURE_FORM}`;
}

export function orderRoutes(ctx: AppContext): Router {
  const router = Router();
  const publicBase = publicBaseUrl(ctx.config);
  const baseUrlOf = (req: Request) => brandBaseUrl(publicBase, req.brand);

  router.post('/v1/orders', async (req, res) => {
    const merchant = req.merchant;
    const secret = webhookSecretOf(ctx.sealer, merchant);
    if (secret) {
      const signature = req.get('x-signature');
      // Absent, malformed and wrong are three different mistakes: each message names its fix.
      if (!signature) throw new ApiError('INVALID_SIGNATURE', `X-Signature is required for this merchant: ${SIGNATURE_FORM}`);
      const form = signatureFormProblem(signature);
      if (form) throw new ApiError('INVALID_SIGNATURE', form);
      if (!verifyBodySignature(secret, req.rawBody ?? Buffer.alloc(0), signature)) {
        throw new ApiError('INVALID_SIGNATURE', `X-Signature does not match the request body: expected ${SIGNATURE_FORM}. Sign the exact bytes sent (not a re-serialised JSON) with the secret string as given`);
      }
    }
    const body = parseBody(createBody, req.body);
    if (body.payment_method !== 'QRIS') throw new ApiError('UNSUPPORTED_PAYMENT_METHOD');
    let phone: string | null = null;
    if (body.customer_phone) {
      phone = normalizePhone(body.customer_phone);
      if (!phone) throw new ApiError('INVALID_BODY', 'customer_phone: must be an Indonesian phone number');
    }
    if (body.notify_url) {
      const problem = checkNotifyUrl(body.notify_url, ctx.config.NOTIFY_URL_ALLOWLIST);
      if (problem) throw new ApiError('INVALID_BODY', `notify_url: ${problem}`);
    }
    const keyHeader = idempotencyKeyOf(req);

    const outcome = await createOrderAndWait(ctx, {
      merchantId: merchant.id,
      merchantOrderId: body.merchant_order_id,
      api: 'V1',
      amount: body.amount,
      customerName: body.customer_name ?? null,
      customerEmail: body.customer_email ?? null,
      customerPhone: phone,
      notifyUrl: body.notify_url ?? null,
      returnUrl: body.return_url ?? null,
      metadataJson: body.metadata ? metadataText(req) : null,
      expireMinutes: body.expire_minutes ?? 60,
      idempotency: keyHeader === undefined ? null : { key: keyHeader, rawBody: req.rawBody ?? Buffer.alloc(0) },
    }, baseUrlOf(req));
    if (outcome.kind === 'replay') return sendStored(res, outcome.status, outcome.body, true);
    if (outcome.kind === 'existing') return sendStored(res, 200, outcome.body, false);
    if (keyHeader !== undefined) {
      // The transaction that confirmed the order stored its answer: send exactly those bytes,
      // as its notification brought them or, when that did not come, read back.
      if (outcome.storedAnswer !== null) return sendStored(res, 201, outcome.storedAnswer, false);
      const stored = await findIdempotencyKey(ctx.pool, merchant.id, keyHeader);
      if (stored?.response_body && stored.response_status) return sendStored(res, stored.response_status, stored.response_body, false);
    }
    const order = await attemptedOrder(ctx, outcome.orderId);
    if (!order || order.status === 'CREATING') throw new ApiError('ORDER_PENDING_CONFIRMATION');
    if (order.status === 'FAILED') throw new ApiError(order.failure_code === 'NO_VENDOR' ? 'NO_VENDOR' : 'VENDOR_ERROR');
    sendStored(res, 201, orderResponseBody(order, baseUrlOf(req)), false);
  });

  router.get('/v1/orders', knownQuery('page', 'limit', 'cursor', 'merchant_order_id', 'status', 'date_from', 'date_to'), async (req, res) => {
    const { page, limit } = pagination(req);
    const cursor = cursorOf(req);
    if (cursor && req.query.page !== undefined) throw new ApiError('INVALID_BODY', 'page: a cursor walk starts with an empty cursor and goes on with meta.next_cursor; send it without page');
    const filter = req.query.merchant_order_id;
    if (filter !== undefined && typeof filter !== 'string') {
      throw new ApiError('INVALID_BODY', 'merchant_order_id: must be one string');
    }
    const filters = { merchantOrderId: filter, status: oneOf(req, 'status', listedOrderStatus.options), ...dayRange(req) };
    const at = cursor && cursor !== 'start' ? { page: cursor.page, after: { micros: cursor.micros, id: cursor.id } } : { page };
    const { rows, total, next } = await orderListPage(ctx.replica.reads(), req.merchant.id, filters, limit, at);
    const baseUrl = baseUrlOf(req);
    const meta = pageMeta(at.page, limit, total);
    // next_cursor only for a walk (a request with `cursor`): a page-numbered answer keeps spec 8's meta exactly.
    if (cursor) meta.next_cursor = next && encodeCursor({ page: at.page + 1, ...next });
    sendPage(res, rows.map((row) => presentOrder(row, baseUrl)), meta);
  });

  router.get('/v1/orders/:ref_code', async (req, res) => {
    sendData(res, presentOrder(await merchantOrder(ctx, req), baseUrlOf(req)));
  });

  router.get('/v1/orders/:ref_code/events', knownQuery(), async (req, res) => {
    const order = await merchantOrder(ctx, req);
    const events = await listOrderEvents(ctx.pool, order.id);
    sendData(res, events.map(presentOrderEvent));
  });

  router.post('/v1/orders/:ref_code/fetch-status', async (req, res) => {
    const order = await merchantOrder(ctx, req);
    // The vendor is asked by the vendor worker (vendor I/O lives there); this request waits
    // for its answer, and answers with the current row either way.
    const wait = ctx.waiter.expect(order.id, ctx.config.ORDER_CREATE_DEADLINE_MS);
    try {
      await sendJob(ctx.boss, 'order-reconcile', { order_id: order.id });
      await wait.done;
    } finally {
      wait.cancel();
    }
    const current = await findOrderById(ctx.pool, order.id);
    sendData(res, presentOrder(current ?? order, baseUrlOf(req)));
  });

  return router;
}

async function merchantOrder(ctx: AppContext, req: Request): Promise<OrderRow> {
  const ref = String(req.params.ref_code);
  const order = ref.length <= 64 && !ref.includes('\u0000') ? await findMerchantOrder(ctx.pool, req.merchant.id, ref) : null;
  if (!order) throw new ApiError('ORDER_NOT_FOUND');
  return order;
}

/** The metadata object's own text from the raw body (spec 2.2: stored and returned as-is). */
function metadataText(req: Request): string {
  const text = memberText((req.rawBody ?? Buffer.alloc(0)).toString('utf8'), 'metadata');
  if (text === undefined) throw new Error('metadata parsed from a body whose text has none');
  return text;
}
