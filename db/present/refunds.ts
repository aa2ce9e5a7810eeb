// Refunds as the V1 API shows them (DESIGN 6: {id, ref_code, order_ref_code, amount, reason,
// status, created_at}) and the webhook body of a refund event: the order's webhook body (V1 or
// legacy shape, by the API that created the order) plus, on V1, the refund itself.
import type { OrderRow } from '../orders.sql.ts';
import type { RefundRow } from '../refunds.sql.ts';
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
    created_at: iso(refund.created_at),
  };
}

export type RefundEvent = 'order.refunded' | 'order.partially_refunded' | 'order.refund_failed';

export function refundWebhookBody(order: OrderRow, event: RefundEvent, refund: RefundRow): Record<string, unknown> {
  const body = orderWebhookBody(order, event);
  return order.api === 'LEGACY' ? body : { ...body, refund: presentRefund(refund, order) };
}
