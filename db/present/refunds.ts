// Refunds as the V1 API shows them (DESIGN 6: {id, ref_code, order_ref_code, amount, reason,
// status, created_at}, plus failure_reason and completed_at to reconcile with), and the webhook
// body of a refund event: the order's webhook body (V1 or legacy shape, by the API that created
// the order) plus, on V1, the refund itself and the order's refunded and refundable amounts.
import type { OrderRow } from '../orders.sql.ts';
import type { RefundRow } from '../refunds.sql.ts';
import { refundableAmount } from '../money-rules.ts';
import { orderWebhookBody } from './orders.ts';
import { iso } from './time.ts';

export function presentRefund(refund: RefundRow, order: Pick<OrderRow, 'ref_code'>) {
  return {
    id: refund.id,
    ref_code: refund.ref_code,
    order_ref_code: order.ref_code,
    amount: refund.amount,
    reason: refund.reason,
    status: refund.status,
    failure_reason: refund.failure_reason,
    completed_at: iso(refund.completed_at),
    created_at: iso(refund.created_at),
  };
}

export type RefundEvent = 'order.refunded' | 'order.partially_refunded' | 'order.refund_failed';

/** `order` as it is after the refund's change (its refunded_amount counts the refund's new status). */
export function refundWebhookBody(order: OrderRow, event: RefundEvent, refund: RefundRow): Record<string, unknown> {
  const body = orderWebhookBody(order, event);
  if (order.api === 'LEGACY') return body;
  return { ...body, refunded_amount: order.refunded_amount, refundable_amount: refundableAmount(order), refund: presentRefund(refund, order) };
}
