// Vendor callbacks: POST /callbacks/<vendor_code>[/<path>]. Verify the vendor's signature,
// record the event by its id (a repeated callback is recognised and changes nothing twice),
// apply it in the same transaction, answer at once. The vendor retries anything but a 2xx, so
// an unknown order or a mismatched amount is still acknowledged: retrying would not change the
// answer, and the event row keeps what was reported. Vendors that prescribe their answers
// (SNAP's responseCode bodies, on paths of their own under the code) get them instead.
//
// Trust (docs/callbacks.md): a vendor's word moves only what that vendor holds. The application
// functions check the record's vendor (db/vendor-binding.ts); a word about another vendor's
// record, or one contradicting a final state, is recorded as a conflict, logged, counted and
// answered 2xx (resending it would change nothing). An unknown or removed vendor code is
// answered exactly like a bad signature, so codes cannot be enumerated. Only a callback whose
// authentication fails counts against the callbacks' failed-authentication budget; an authentic
// one Kasir does not act on is acknowledged, and one Kasir cannot check now (its vendor cannot
// be read) is answered 503 so the vendor sends it again. A payment callback authenticated only
// by a secret the account holder can read too is a hint, credited as the vendor's own read of
// the order's QR shows it (api/payment-hints.ts).
import { Router, type Request, type Response } from 'express';
import type { AppContext } from './context.ts';
import { ApiError } from '../db/errors.ts';
import { logger } from '../db/logger.ts';
import { findOrderById } from '../db/orders.sql.ts';
import { completePayout, returnPayout } from '../db/payouts.ts';
import { applyPayment, closeOrderAtVendor } from '../db/orders.ts';
import { findOrderRefByVendorOrderId } from '../db/orders.sql.ts';
import type { Db } from '../db/pool.ts';
import { completeRefund } from '../db/refunds.ts';
import { findRefundByRef, findRefundByVendorId } from '../db/refunds.sql.ts';
import { recordConflict, sourceOf, type Speaker } from '../db/vendor-binding.ts';
import { getVendor, recordCallback, storedEventId, VENDOR_CODE } from '../db/vendors.ts';
import type { CallbackAnswer, CallbackEvent } from '../gateways/gateway.ts';
import { gatewayFor } from '../gateways/registry.ts';
import { refuseUnverifiable } from '../gateways/snap/client.ts';
import { sendData } from './http/envelope.ts';
import { confirmPaymentHint, confirmReversalHint, recordUnconfirmed } from './payment-hints.ts';
import type { PgBoss } from 'pg-boss';

export function callbackRoutes(ctx: AppContext): Router {
  const router = Router();

  // Two routes, not one optional segment, so metrics label each plainly.
  const handle = async (req: Request, res: Response) => {
    const code = String(req.params.vendor);
    // Checked before anything reaches Postgres (a NUL byte, a 10 kB code).
    const wellFormed = VENDOR_CODE.test(code);
    // One budget per client network for every callback, whatever the code: made-up codes cannot
    // each open a budget of their own (nor push a spent one out of the throttle's bounded
    // memory), and since a known code's budget is the unknown codes' too, its state cannot tell
    // a vendor's code from a made-up one. An authentic callback is never throttled, so one
    // vendor's forgers never hold up another vendor's real callbacks.
    const budget = 'callback';
    const segments = (req.params as { path?: string[] }).path;
    const path = segments ? `/${segments.join('/')}` : '';
    const rawBody = req.rawBody ?? Buffer.alloc(0);
    // A caller Kasir cannot verify gets one answer per path, whatever the code names: Kasir's
    // INVALID_SIGNATURE at /callbacks/<code>, and a SNAP provider's refusal of a stranger on a
    // path under it (only SNAP vendors have paths). A known code and a made-up one look alike.
    const refuse = (): void => {
      ctx.throttle.failed(req, 'callback', budget);
      if (path === '') throw new ApiError('INVALID_SIGNATURE', 'Callback signature is missing or wrong');
      const refused = refuseUnverifiable(path, req.headers, rawBody);
      res.status(refused.status).json(refused.body);
    };
    const vendor = wellFormed ? await getVendor(ctx.pool, ctx.sealer, code) : null;
    if (!vendor) return refuse();
    const gateway = gatewayFor(vendor);
    // Only vendors that answer for themselves have paths under their code.
    if (path !== '' && !gateway.answerCallback) return refuse();
    const answer = (verdict: CallbackAnswer, result: unknown) => {
      if (!gateway.answerCallback) return sendData(res, { received: true, result });
      const prescribed = gateway.answerCallback(path, verdict);
      res.status(prescribed.status).json(prescribed.body);
    };

    const direct = gateway.answerRequest?.(path, req.headers, rawBody);
    if (direct) {
      // A provider asking for the token it signs notifies with: a refused signature is a failed authentication.
      if (direct.status === 401) ctx.throttle.failed(req, 'callback', budget);
      return void res.status(direct.status).json(direct.body);
    }

    const parsed = await gateway.parseCallback(req.headers, rawBody, path);
    if (!parsed) return refuse();
    if (parsed.type === 'retry_later') {
      logger.warn({ vendor: vendor.code, reference: parsed.reference, reason: parsed.reason }, 'authentic callback not checkable now; answered 503 so the vendor sends it again');
      throw new ApiError('SERVICE_UNAVAILABLE', 'The callback cannot be checked with the vendor now; send it again later');
    }

    const speaker = { vendor: vendor.code, via: 'callback', eventId: storedEventId(parsed.eventId) } satisfies Speaker;
    // A payment callback only a shared secret authenticates is a hint: the vendor's own read of
    // the order's QR decides what is credited (api/payment-hints.ts).
    const hint = parsed.type === 'qris.paid' && gateway.paymentCallbacksAreHints ? await confirmPaymentHint(ctx.pool, gateway, vendor.code, parsed) : null;
    if (hint?.kind === 'retry_later') {
      logger.warn({ vendor: vendor.code, reference: parsed.reference, reason: hint.reason }, 'payment callback not confirmable now; answered 503 so the vendor sends it again');
      throw new ApiError('SERVICE_UNAVAILABLE', 'The payment cannot be confirmed with the vendor now; send it again later');
    }
    if (hint?.kind === 'unconfirmed') {
      // Recorded as a conflict, not as the vendor's event: a genuine callback under the same
      // event id, once the vendor's record shows the payment, is still fresh.
      await ctx.pool.transaction((tx) => recordUnconfirmed(tx, vendor.code, speaker.eventId, hint));
      return answer('accepted', 'unconfirmed');
    }
    // A payout reversal returns money: believed only as the vendor's read of the payout shows it.
    const reversal = parsed.type === 'disbursement.reversed' ? await confirmReversalHint(ctx.pool, gateway, vendor.code, parsed) : null;
    if (reversal?.kind === 'retry_later') {
      logger.warn({ vendor: vendor.code, reference: parsed.reference, reason: reversal.reason }, 'payout reversal not confirmable now; answered 503 so the vendor sends it again');
      throw new ApiError('SERVICE_UNAVAILABLE', 'The reversal cannot be confirmed with the vendor now; send it again later');
    }
    if (reversal?.kind === 'unconfirmed') {
      await ctx.pool.transaction((tx) => recordConflict(tx, { ...reversal.conflict, vendorCode: vendor.code, source: `callback:${vendor.code}`, eventId: speaker.eventId }));
      return answer('accepted', 'unconfirmed');
    }
    let event: CallbackEvent = hint?.event ?? (reversal?.kind === 'apply' ? reversal.event : parsed);
    const result = await ctx.pool.transaction(async (tx) => {
      event = await withReference(tx, vendor.code, event);
      const fresh = await recordCallback(tx, {
        vendorCode: vendor.code,
        eventId: event.eventId,
        type: event.type,
        reference: event.reference,
        payload: { ...event },
      });
      return fresh ? apply(tx, ctx.boss, event, speaker) : 'duplicate';
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

/** Applies a fresh, verified event as `speaker`'s word (bound to the records it holds). */
async function apply(tx: Db, boss: PgBoss, event: CallbackEvent, speaker: Extract<Speaker, { vendor: string }>): Promise<string> {
  if (event.type === 'qris.paid') {
    return applyPayment(tx, boss, { refCode: event.reference, amount: event.amount, paidAt: event.paidAt, rrn: event.rrn, vendorOrderId: event.vendorOrderId }, speaker);
  }
  if (event.type === 'disbursement.updated') {
    const outcome =
      event.status === 'SUCCESS'
        ? { status: 'SUCCESS' as const, vendorDisbursementId: event.vendorDisbursementId }
        : { status: 'FAILED' as const, vendorDisbursementId: event.vendorDisbursementId, reason: event.failureReason ?? 'FAILED' };
    // The payout is found by the kind recorded with the reference it went out under.
    return completePayout(tx, boss, event.reference, outcome, speaker);
  }
  if (event.type === 'disbursement.reversed') {
    return returnPayout(tx, boss, event.reference, { vendorDisbursementId: event.vendorDisbursementId, reason: event.failureReason }, speaker);
  }
  if (event.type === 'refund.updated') {
    // Xendit does not echo Kasir's reference: its refund is the one it gave this id.
    const refund = (event.reference ? await findRefundByRef(tx, event.reference) : null) ?? (await findRefundByVendorId(tx, speaker.vendor, event.vendorRefundId));
    if (!refund) return 'unknown';
    if (event.orderReference !== undefined && 'vendor' in speaker) {
      // The vendor reported the refund under an order: it must be the refund's own order.
      const order = await findOrderById(tx, refund.order_id);
      if (order?.ref_code !== event.orderReference) {
        await recordConflict(tx, {
          kind: 'NOT_ITS_RECORD',
          vendorCode: speaker.vendor,
          recordType: 'REFUND',
          recordId: refund.id,
          reference: refund.ref_code,
          recordVendor: refund.vendor_code,
          kasirStatus: refund.status,
          vendorStatus: event.status,
          source: sourceOf(speaker),
          eventId: speaker.eventId ?? null,
          detail: { reported_order: event.orderReference, refund_order: order?.ref_code ?? null },
        });
        return 'not_its_record';
      }
    }
    const outcome =
      event.status === 'SUCCEEDED'
        ? { status: 'SUCCEEDED' as const, vendorRefundId: event.vendorRefundId }
        : { status: 'FAILED' as const, vendorRefundId: event.vendorRefundId, reason: event.failureReason ?? 'FAILED' };
    return completeRefund(tx, boss, refund.id, outcome, speaker);
  }
  if (event.type === 'qris.closed') return closeOrderAtVendor(tx, boss, event.reference, `${event.status}: ${event.what}`, speaker);
  return 'noted';
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
  // Applied, noted, or recorded as a conflict: in every case resending it changes nothing.
  return 'accepted';
}
