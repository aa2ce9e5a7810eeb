// Orders as the contract shows them: V1 (spec 2.2 plus the decided extras), legacy (2.8), and
// the webhook bodies of each (spec 6). Pure functions of a row; workers use them too, because
// a webhook body is as much a contract as a response.
import { refundableAmount } from '../money-rules.ts';
import type { OrderEventRow, OrderRow } from '../orders.sql.ts';
import { RawJson, toJson } from './json-text.ts';
import { iso, wib } from './time.ts';

export function qrUrl(baseUrl: string, order: Pick<OrderRow, 'qr_token'>): string {
  return `${baseUrl}/qr/${order.qr_token}.png`;
}

/** The hosted checkout page for the order (api/checkout.ts). */
export function checkoutUrl(baseUrl: string, order: Pick<OrderRow, 'ref_code'>): string {
  return `${baseUrl}/pay/${encodeURIComponent(order.ref_code)}`;
}

/**
 * What a refund of the order may still take: the amount less its refunds not FAILED while it is
 * PAID, else 0 (only PAID orders can be refunded). The accepting transaction checks the same
 * under the order's lock (db/refunds.ts).
 */
export function presentOrder(order: OrderRow, baseUrl: string) {
  return {
    id: order.id,
    ref_code: order.ref_code,
    merchant_order_id: order.merchant_order_id,
    amount: order.amount,
    refunded_amount: order.refunded_amount,
    refundable_amount: refundableAmount(order),
    status: order.status,
    qris_string: order.qris_string,
    qr_url: qrUrl(baseUrl, order),
    checkout_url: checkoutUrl(baseUrl, order),
    expires_at: iso(order.expires_at),
    paid_at: iso(order.paid_at),
    is_settled: order.is_settled,
    vendor_rrn: order.vendor_rrn,
    customer_name: order.customer_name,
    customer_email: order.customer_email,
    customer_phone: order.customer_phone,
    notify_url: order.notify_url,
    return_url: order.return_url,
    // The merchant's own text, spliced in by toJson (api/http/json-text.ts): keys in the order sent.
    metadata: order.metadata_json === null ? null : new RawJson(order.metadata_json),
    created_at: iso(order.created_at),
  };
}

/** The V1 create answer as text: stored for the Idempotency-Key and replayed byte for byte. */
export function orderResponseBody(order: OrderRow, baseUrl: string): string {
  return toJson({ success: true, data: presentOrder(order, baseUrl) });
}

export function presentLegacyOrder(order: OrderRow) {
  return {
    refCode: order.ref_code,
    transactionTime: wib(order.created_at),
    orderId: order.merchant_order_id,
    totalAmount: order.amount,
    customerName: order.customer_name,
    customerEmail: order.customer_email,
    customerPhone: order.customer_phone,
    notifyUrl: order.notify_url,
    returnUrl: order.return_url,
    status: order.status,
    paidAt: wib(order.paid_at),
    qrString: order.qris_string,
  };
}

/**
 * One entry of GET /v1/orders/{ref}/events. Refund events (refund.requested, refund.succeeded,
 * refund.failed) carry the refund's ref_code and amount and the order's refunded and refundable
 * amounts after the event (db/refunds.ts records them); other events, and refund events written
 * before the amounts were recorded, show null there. `late` marks an order.paid that came after
 * the order expired.
 */
export function presentOrderEvent(e: OrderEventRow) {
  const recorded = e.detail !== null && typeof e.detail === 'object' ? (e.detail as Record<string, unknown>) : {};
  const detail = e.event.startsWith('refund.') ? recorded : {};
  const integer = (v: unknown) => (Number.isSafeInteger(v) ? (v as number) : null);
  return {
    status: e.status,
    event: e.event,
    source: e.source,
    refund_ref_code: typeof detail.refund === 'string' ? detail.refund : null,
    refund_amount: integer(detail.amount),
    refunded_amount: integer(detail.refunded_amount),
    refundable_amount: integer(detail.refundable_amount),
    // db/orders.ts applyPayment records { late: true } on a payment after expiry.
    late: e.event === 'order.paid' && recorded.late === true,
    created_at: iso(e.created_at),
  };
}

export type OrderEvent = 'order.paid' | 'order.expired' | 'order.refunded' | 'order.partially_refunded' | 'order.refund_failed';

/** The webhook body for an order event, shaped by the API that created the order. */
export function orderWebhookBody(order: OrderRow, event: OrderEvent): Record<string, unknown> {
  if (order.api === 'LEGACY') {
    return {
      refCode: order.ref_code,
      orderId: order.merchant_order_id,
      totalAmount: order.amount,
      status: order.status,
      paidAt: wib(order.paid_at),
    };
  }
  return {
    ref_code: order.ref_code,
    merchant_order_id: order.merchant_order_id,
    amount: order.amount,
    status: order.status,
    event,
    paid_at: iso(order.paid_at),
    // Paid after order.expired (or after its create failed): the shop may have released the
    // goods, so the one field added to the contract's says so; absent on a payment in time.
    ...(event === 'order.paid' && order.is_late_payment ? { late: true } : {}),
  };
}
