// Vendor callbacks: POST /callbacks/<vendor_code>[/<path>]. Verify the vendor's signature,
// record the event by its id (a repeated callback is recognised and changes nothing twice),
// apply it in the same transaction, answer at once. The vendor retries anything but a 2xx, so
// an unknown order or a mismatched amount is still acknowledged: retrying would not change the
// answer, and the event row keeps what was reported. Vendors that prescribe their answers
// (SNAP's responseCode bodies, on paths of their own under the code) get them instead.
import { Router, type Request, type Response } from 'express';
import type { AppContext } from './context.ts';
import { ApiError } from '../db/errors.ts';
import { logger } from '../db/logger.ts';
import { completePayout } from '../db/payouts.ts';
import { applyPayment, closeOrderAtVendor } from '../db/orders.ts';
import { findOrderRefByVendorOrderId } from '../db/orders.sql.ts';
import type { Db } from '../db/pool.ts';
import { completeRefund } from '../db/refunds.ts';
import { findRefundByRef, findRefundByVendorId } from '../db/refunds.sql.ts';
import { getVendor, recordCallback } from '../db/vendors.ts';
import type { CallbackAnswer, CallbackEvent } from '../gateways/gateway.ts';
import { gatewayFor } from '../gateways/registry.ts';
import { sendData } from './http/envelope.ts';

export function callbackRoutes(ctx: AppContext): Router {
  const router = Router();

  // Two routes, not one optional segment, so metrics label each plainly.
  const handle = async (req: Request, res: Response) => {
    ctx.throttle.guard(req, 'callback');
    const vendor = await getVendor(ctx.pool, ctx.sealer, String(req.params.vendor));
    if (!vendor) throw new ApiError('NOT_FOUND', 'Unknown vendor');
    const gateway = gatewayFor(vendor);
    const segments = (req.params as { path?: string[] }).path;
    const path = segments ? `/${segments.join('/')}` : '';
    // Only vendors that answer for themselves have paths under their code.
    if (path !== '' && !gateway.answerCallback) throw new ApiError('NOT_FOUND', 'Unknown callback path');
    const rawBody = req.rawBody ?? Buffer.alloc(0);
    const answer = (verdict: CallbackAnswer, result: unknown) => {
      if (!gateway.answerCallback) return sendData(res, { received: true, result });
      const prescribed = gateway.answerCallback(path, verdict);
      res.status(prescribed.status).json(prescribed.body);
    };

    const direct = gateway.answerRequest?.(path, req.headers, rawBody);
    if (direct) return void res.status(direct.status).json(direct.body);

    const parsed = await gateway.parseCallback(req.headers, rawBody, path);
    if (!parsed) {
      ctx.throttle.failed(req, 'callback');
      if (gateway.answerCallback) return answer('bad_signature', null);
      throw new ApiError('INVALID_SIGNATURE', 'Callback signature is missing or wrong');
    }

    let event = parsed;
    const result = await ctx.pool.transaction(async (tx) => {
      event = await withReference(tx, vendor.code, parsed);
      const fresh = await recordCallback(tx, {
        vendorCode: vendor.code,
        eventId: event.eventId,
        type: event.type,
        reference: event.reference,
        payload: { ...event },
      });
      if (!fresh) return 'duplicate';
      if (event.type === 'qris.paid') {
        return applyPayment(
          tx,
          ctx.boss,
          { refCode: event.reference, amount: event.amount, paidAt: event.paidAt, rrn: event.rrn, vendorOrderId: event.vendorOrderId },
          `callback:${vendor.code}`
        );
      }
      if (event.type === 'disbursement.updated') {
        const outcome =
          event.status === 'SUCCESS'
            ? { status: 'SUCCESS' as const, vendorDisbursementId: event.vendorDisbursementId }
            : { status: 'FAILED' as const, vendorDisbursementId: event.vendorDisbursementId, reason: event.failureReason ?? 'FAILED' };
        // The payout is found by the kind recorded with the reference it went out under.
        return completePayout(tx, ctx.boss, event.reference, outcome, `callback:${vendor.code}`);
      }
      if (event.type === 'refund.updated') {
        // Xendit does not echo Kasir's reference: its refund is the one it gave this id.
        const refund = (event.reference ? await findRefundByRef(tx, event.reference) : null) ?? (await findRefundByVendorId(tx, vendor.code, event.vendorRefundId));
        if (!refund) return 'unknown';
        const outcome =
          event.status === 'SUCCEEDED'
            ? { status: 'SUCCEEDED' as const, vendorRefundId: event.vendorRefundId }
            : { status: 'FAILED' as const, vendorRefundId: event.vendorRefundId, reason: event.failureReason ?? 'FAILED' };
        return completeRefund(tx, ctx.boss, refund.id, outcome, `callback:${vendor.code}`);
      }
      if (event.type === 'qris.closed') return closeOrderAtVendor(tx, ctx.boss, event.reference, `${event.status}: ${event.what}`, `callback:${vendor.code}`);
      return 'noted';
    });
    if (result === 'unknown' || result === 'unknown_order' || result === 'amount_mismatch' || result === 'failed_attempt') {
      logger.warn({ vendor: vendor.code, eventId: event.eventId, reference: event.reference, result }, 'callback not applied');
    }
    answer(verdictOf(result), result);
  };
  router.post('/callbacks/:vendor', handle);
  router.post('/callbacks/:vendor/*path', handle);

  return router;
}

/** A vendor that names the order by its own id only (SNAP notifies without originalPartnerReferenceNo): the order holding that id. */
async function withReference(tx: Db, vendorCode: string, event: CallbackEvent): Promise<CallbackEvent> {
  if (event.reference !== '' || (event.type !== 'qris.paid' && event.type !== 'qris.closed')) return event;
  const reference = await findOrderRefByVendorOrderId(tx, vendorCode, event.vendorOrderId);
  return reference ? { ...event, reference } : event;
}

/** What Kasir made of a callback, in the terms a vendor's prescribed answer is chosen by. */
function verdictOf(result: string): CallbackAnswer {
  if (result === 'duplicate') return 'duplicate';
  if (result === 'unknown' || result === 'unknown_order') return 'unknown_reference';
  if (result === 'amount_mismatch') return 'amount_mismatch';
  return 'accepted';
}
