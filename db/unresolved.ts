// Refunds and payouts waiting for an operator: a vendor's answer was unclear and no read at
// that vendor can say what became of it (gateways/gateway.ts, the rule on unclear answers).
// The operator asks the vendor (dashboard, support, statement) and settles each with the
// evidence: refunds here (settle, or send again once the vendor proves it has none), payouts
// through db/payouts.ts settlePayoutByHand. The list itself is db/operator-lists.ts listUnresolved.
import type { PgBoss } from 'pg-boss';
import type { Pool } from './pool.ts';
import { inTransaction, sendJob } from './queue.ts';
import { findOrderById, insertOrderEvent } from './orders.sql.ts';
import { completeRefund } from './refunds.ts';
import { clearRefundSend, findRefundByRef } from './refunds.sql.ts';

/** Why an operator may not act on a refund. */
export class RefundSettleRefused extends Error {}

/**
 * An operator settles a refund in flight with the vendor's evidence: SUCCEEDED when the payer
 * provably got the money, FAILED when the vendor provably made no refund (the money returns to
 * the merchant, once). Only a PENDING refund can be settled; a final one is refused.
 */
export async function settleRefundByHand(
  pool: Pool,
  boss: PgBoss,
  ref: string,
  outcome: { status: 'SUCCEEDED' | 'FAILED'; reason: string; evidence: string | null; vendorRefundId: string | null },
): Promise<{ id: string; status: 'SUCCEEDED' | 'FAILED' }> {
  const refund = await findRefundByRef(pool, ref);
  if (!refund) throw new RefundSettleRefused(`no refund ${ref}`);
  if (refund.status !== 'PENDING') throw new RefundSettleRefused(`refund ${ref} is ${refund.status}: only a PENDING one can be settled by hand`);
  const note = `settled by an operator: ${outcome.reason}${outcome.evidence ? ` (evidence: ${outcome.evidence})` : ''}`;
  const done = await completeRefund(
    pool,
    boss,
    refund.id,
    outcome.status === 'SUCCEEDED' ? { status: 'SUCCEEDED', vendorRefundId: outcome.vendorRefundId } : { status: 'FAILED', vendorRefundId: outcome.vendorRefundId, reason: `OPERATOR: ${note}`.slice(0, 500) },
    { kasir: 'operator' },
  );
  if (done !== 'completed') throw new RefundSettleRefused(`refund ${ref} was completed meanwhile (${done})`);
  return { id: refund.id, status: outcome.status };
}

/**
 * An operator has the vendor's word that an UNRESOLVED refund does not exist there: it is sent
 * again, as if never sent. Only an unresolved one: any other may still be at the vendor.
 */
export async function resendRefund(pool: Pool, boss: PgBoss, ref: string, evidence: string): Promise<{ id: string }> {
  return pool.transaction(async (tx) => {
    const refund = await findRefundByRef(tx, ref);
    if (!refund) throw new RefundSettleRefused(`no refund ${ref}`);
    const cleared = await clearRefundSend(tx, refund.id);
    if (!cleared) throw new RefundSettleRefused(`refund ${ref} is ${refund.status}${refund.unresolved_at ? '' : ', not unresolved'}: only an unresolved PENDING refund can be sent again`);
    const order = await findOrderById(tx, refund.order_id);
    await insertOrderEvent(tx, {
      orderId: refund.order_id,
      status: order!.status,
      event: 'refund.resent',
      source: 'operator',
      detail: { refund: refund.ref_code, unresolved_reason: refund.unresolved_reason, evidence },
    });
    await sendJob(boss, 'refund-execute', { refund_id: refund.id }, { db: inTransaction(tx) });
    return { id: refund.id };
  });
}
