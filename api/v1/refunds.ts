// POST /v1/orders/{ref_code}/refund (spec 4.2, DESIGN 6): {amount?, reason?}; amount defaults to
// what remains refundable. Accepted refunds are 201 PENDING and sent to the vendor by the
// vendor worker; the order's events and webhooks tell how each one ends. An Idempotency-Key
// makes a retried request return the first answer instead of refunding again.
import { Router } from 'express';
import { z } from 'zod';
import type { AppContext } from '../context.ts';
import { ApiError } from '../../db/errors.ts';
import { createRefund } from '../../db/refunds.ts';
import { sendStored } from '../http/envelope.ts';
import { idempotencyKeyOf, parseBody } from '../http/validate.ts';

export const refundBody = z.object({
  amount: z.number('must be an integer').int('must be an integer').min(1, 'must be at least 1').max(9_999_999_999_999, 'is too large').optional(),
  reason: z.string('must be a string').trim().max(500, 'must be at most 500 characters').nullish(),
});

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

  return router;
}
