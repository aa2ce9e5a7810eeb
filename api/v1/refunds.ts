// Refunds (spec 4.2, DESIGN 6). POST /v1/orders/{ref_code}/refund: {amount?, reason?}; amount
// defaults to what remains refundable. Accepted refunds are 201 PENDING and sent to the vendor
// by the vendor worker; the order's events and webhooks tell how each one ends. An
// Idempotency-Key makes a retried request return the first answer instead of refunding again.
//
// Reads, to reconcile with: GET /v1/refunds (every refund of the merchant) and GET
// /v1/orders/{ref_code}/refunds (one order's), newest first, paginated as spec 8, filtered by
// status and by created_at's WIB days (date_from, date_to); GET /v1/refunds/{id} by UUID or
// ref_code (RFD-…). Another merchant's refund or order is as unknown as a missing one.
// The lists are history and may lag: they read where db/replica.ts sends such reads; a single
// refund, like a single order, is read from the primary.
import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import type { AppContext } from '../context.ts';
import { ApiError } from '../../db/errors.ts';
import { findMerchantOrder } from '../../db/orders.sql.ts';
import { createRefund } from '../../db/refunds.ts';
import { findMerchantRefund, listMerchantRefunds, refundStatus, type MerchantRefundRow, type RefundFilter } from '../../db/refunds.sql.ts';
import { presentRefund } from '../../db/present/refunds.ts';
import { pageMeta, sendData, sendPage, sendStored } from '../http/envelope.ts';
import { dayRange, oneOf, knownQuery } from '../http/list-filters.ts';
import { pagination } from '../http/pagination.ts';
import { idempotencyKeyOf, parseBody, rupiahAmount } from '../http/validate.ts';

export const refundBody = z.strictObject({
  amount: rupiahAmount().optional(),
  reason: z.string().trim().max(500).nullish(),
});

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const REF_CODE = /^RFD-\d+-[0-9A-Z]+$/;

/** GET /v1/refunds/{id}'s id, as the document shows it: a UUID (either case) or a ref_code. */
export const refundId = z.string().regex(new RegExp(`^(?:${UUID.source.slice(1, -1).replace(/a-f/g, 'a-fA-F')}|${REF_CODE.source.slice(1, -1)})$`));

const show = (row: MerchantRefundRow) => presentRefund(row, { ref_code: row.order_ref_code });

export function refundRoutes(ctx: AppContext): Router {
  const router = Router();

  router.post('/v1/orders/:ref_code/refund', async (req, res) => {
    const ref = String(req.params.ref_code);
    if (ref.length > 64 || ref.includes('\u0000')) throw new ApiError('ORDER_NOT_FOUND');
    // An empty body asks for a full refund.
    const body = parseBody(refundBody, req.body === undefined || (Buffer.isBuffer(req.rawBody) && req.rawBody.length === 0) ? {} : req.body);
    const key = idempotencyKeyOf(req);
    const idempotency = key === undefined ? null : { key, rawBody: req.rawBody ?? Buffer.alloc(0) };
    const answer = await createRefund(ctx.pool, ctx.boss, req.merchant, ref, { amount: body.amount, reason: body.reason || null }, idempotency);
    sendStored(res, answer.status, answer.body, answer.replayed);
  });

  router.get('/v1/refunds', knownQuery(...REFUND_LIST_QUERY), async (req, res) => {
    await sendRefunds(ctx, req, res, {});
  });

  router.get('/v1/refunds/:id', async (req, res) => {
    const id = String(req.params.id);
    const key = UUID.test(id) ? { id: id.toLowerCase() } : REF_CODE.test(id) ? { refCode: id } : null;
    if (!key) throw new ApiError('INVALID_ID', 'id must be a refund\'s UUID or its ref_code (RFD-…)');
    const found = await findMerchantRefund(ctx.pool, req.merchant.id, key);
    if (!found) throw new ApiError('REFUND_NOT_FOUND');
    sendData(res, show(found));
  });

  router.get('/v1/orders/:ref_code/refunds', knownQuery(...REFUND_LIST_QUERY), async (req, res) => {
    const ref = String(req.params.ref_code);
    const order = ref.length <= 64 && !ref.includes('\u0000') ? await findMerchantOrder(ctx.pool, req.merchant.id, ref) : null;
    if (!order) throw new ApiError('ORDER_NOT_FOUND');
    await sendRefunds(ctx, req, res, { orderId: order.id });
  });

  return router;
}

/** The refund lists' query parameters (both lists alike). */
const REFUND_LIST_QUERY = ['page', 'limit', 'status', 'date_from', 'date_to'];

async function sendRefunds(ctx: AppContext, req: Request, res: Response, scope: Pick<RefundFilter, 'orderId'>) {
  const { page, limit } = pagination(req);
  const filter: RefundFilter = { ...scope, status: oneOf(req, 'status', refundStatus.options), ...dayRange(req) };
  const [rows, total] = await listMerchantRefunds(ctx.replica.reads(), req.merchant.id, filter, page, limit);
  sendPage(res, rows.map(show), pageMeta(page, limit, total));
}
