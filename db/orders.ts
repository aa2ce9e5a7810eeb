// The order aggregate: creating attempts, confirming them with a vendor's QR, payment, expiry.
//
// Invariants and why they hold:
// - One live order per (merchant, merchant_order_id): a partial unique index; FAILED attempts
//   step out of it so the id can be retried (spec 4.2 rule 8).
// - One vendor QR per order: only the order-create job calls a vendor's create, and it records
//   the vendor it is about to call (pending_vendor) in a committed row first; a retry of the job
//   asks that vendor (query) before anything else, and vendors are idempotent on our ref_code.
// - An Idempotency-Key maps to one order attempt and one final response; responses are stored
//   only once they are final (201 confirmed / 200 existing), by whichever transaction makes them
//   final, so a replay is byte-identical whatever process answered the first request.
// - Every status change appends an order event and, where the merchant is told, a webhook
//   outbox row, in the transaction of the change itself. Its counter (db/metrics.ts) moves
//   only once that transaction has committed.
import { createHash } from 'node:crypto';
import type { PgBoss } from 'pg-boss';
import { perPool } from './coalesce.ts';
import { ApiError } from './errors.ts';
import type { Db, Pool } from './pool.ts';
import { sql } from './pool.ts';
import { jobsFor } from './job-insert.ts';
import { inTransaction, sendJob } from './queue.ts';
import { newQrToken, newRefCode } from './ref-codes.ts';
import { constantTimeEqual } from './secrets.ts';
import {
  expireDueOrders,
  expireOrderNow,
  findIdempotencyKey,
  findOrderById,
  claimKeyAndInsertOrder,
  insertOrderAndQueue,
  insertOrder,
  insertOrderEvent,
  insertOrderEvents,
  findLiveOrderByMerchantOrderId,
  lockOrder,
  lockOrderByRef,
  repointIdempotencyKey,
  completePaidAttempt,
  confirmAttempts,
  type Confirmation,
  type SettleJob,
  setOrderFailed,
  setOrderPaid,
  storeIdempotentResponse,
  countMerchantOrders,
  listMerchantOrders,
  type NewOrder,
  type OrderFilter,
  type OrderKey,
  type OrderRow,
} from './orders.sql.ts';
import { paymentTerms, postOrderPayment } from './ledger.ts';
import { afterCommit, orderAttemptsFailed, ordersCreated, ordersExpired, ordersPaid } from './metrics.ts';
import { boundToHolder, sourceOf, type Speaker } from './vendor-binding.ts';
import { enqueueWebhooks } from './webhooks.ts';
import { orderResponseBody, orderWebhookBody } from './present/orders.ts';

export const ORDER_OUTCOME_CHANNEL = 'kasir_order_outcome';

/**
 * A notification on ORDER_OUTCOME_CHANNEL: the attempt's id, and the V1 answer its
 * confirmation stored for the Idempotency-Key when it carried one (confirmAttempt).
 */
export function parseOutcome(payload: string): { orderId: string; storedAnswer: string | null } {
  const newline = payload.indexOf('\n');
  return newline === -1 ? { orderId: payload, storedAnswer: null } : { orderId: payload.slice(0, newline), storedAnswer: payload.slice(newline + 1) };
}

export interface CreateOrderInput extends Omit<NewOrder, 'id' | 'refCode' | 'qrToken'> {
  /** Chosen by the caller, so it can listen for the outcome before the job exists. */
  orderId: string;
  idempotency: { key: string; rawBody: Buffer } | null;
}

export type CreateOutcome =
  /** A new attempt was queued for the vendor worker: wait for its outcome. */
  | { kind: 'attempt'; orderId: string }
  /** A confirmed order already holds this merchant_order_id (spec 4.2 rule 3: 200). */
  | { kind: 'existing'; order: OrderRow; body: string }
  /** The key's stored final response (rule 1). */
  | { kind: 'replay'; status: number; body: string }
  /** The same key's attempt is still unresolved: wait for it like the first request does. */
  | { kind: 'in_flight'; orderId: string };

export function requestHash(rawBody: Buffer): Buffer {
  return createHash('sha256').update(rawBody).digest();
}

/**
 * Starts an order attempt, or tells the caller what to answer instead: claim the idempotency
 * key, insert the CREATING order, queue `order-create`, atomically (one statement in the common
 * case, else one transaction that also settles replays, reuses and retries).
 * `baseUrl` is the public URL the stored V1 response (the key's 200/201 answer) links to.
 */
export async function createOrder(
  pool: Pool,
  boss: PgBoss,
  input: CreateOrderInput,
  baseUrl: string,
): Promise<CreateOutcome> {
  const render = (order: OrderRow) => orderResponseBody(order, baseUrl);
  const { orderId } = input;
  const key = input.idempotency;
  const hash = key ? requestHash(key.rawBody) : null;

  const attempt: NewOrder = { ...input, id: orderId, refCode: newRefCode('ORD'), qrToken: newQrToken() };
  // The common case, a new key (or none) and a new merchant_order_id: one statement, no
  // transaction of four round trips. Anything else did nothing and takes the path below.
  const job = (await jobsFor(boss, 'order-create'))('inserted', [{ order_id: orderId, merchant_id: input.merchantId }]);
  const claim = key && hash ? { merchantId: input.merchantId, key: key.key, requestHash: hash } : null;
  if (await insertOrderAndQueue(pool, claim, attempt, job)) return { kind: 'attempt', orderId };

  return pool.transaction(async (tx): Promise<CreateOutcome> => {
    const queue = async (): Promise<CreateOutcome> => {
      await sendJob(boss, 'order-create', { order_id: orderId, merchant_id: input.merchantId }, { db: inTransaction(tx) });
      return { kind: 'attempt', orderId };
    };
    // A live order holds the merchant_order_id: answer it (rule 3), and make it the key's answer.
    const existing = async (): Promise<CreateOutcome> => {
      const live = await findLiveOrderByMerchantOrderId(tx, input.merchantId, input.merchantOrderId);
      if (!live) throw new ApiError('ORDER_PENDING_CONFIRMATION'); // it failed an instant ago: retry
      if (live.amount !== input.amount) throw new ApiError('MERCHANT_ORDER_ID_REUSED');
      if (live.status === 'CREATING') throw new ApiError('ORDER_PENDING_CONFIRMATION');
      const body = render(live);
      if (key) {
        await repointIdempotencyKey(tx, input.merchantId, key.key, live.id);
        await storeIdempotentResponse(tx, { merchantId: input.merchantId, key: key.key }, 200, body);
      }
      return { kind: 'existing', order: live, body };
    };

    if (!key || !hash) return (await insertOrder(tx, attempt)) ? queue() : existing();

    // Claim again inside the transaction: when a live order holds the merchant_order_id the key
    // is claimed here (the one statement skipped it), so existing() can point it at that order
    // and store its answer; a key or order freed meanwhile goes through as a new attempt.
    if (await claimKeyAndInsertOrder(tx, { merchantId: input.merchantId, key: key.key, requestHash: hash }, attempt)) return queue();
    const held = await findIdempotencyKey(tx, input.merchantId, key.key);
    if (!held) throw new ApiError('ORDER_PENDING_CONFIRMATION'); // claimed and rolled back meanwhile: retry
    if (held.order_id === orderId) return existing(); // the key is ours; the merchant_order_id is not
    if (!constantTimeEqual(held.request_hash, hash)) throw new ApiError('IDEMPOTENCY_KEY_REUSED');
    if (held.response_body !== null && held.response_status !== null) {
      return { kind: 'replay', status: held.response_status, body: held.response_body };
    }
    const previous = await findOrderById(tx, held.order_id);
    if (previous?.status === 'CREATING') return { kind: 'in_flight', orderId: previous.id };
    if (previous && previous.status !== 'FAILED') {
      // Confirmed, but its response was never stored (it was answered 409 meanwhile).
      const body = render(previous);
      await storeIdempotentResponse(tx, { merchantId: input.merchantId, key: key.key }, 201, body);
      return { kind: 'replay', status: 201, body };
    }
    // The previous attempt failed: this request retries it under the same key (rule 8).
    if (!(await insertOrder(tx, attempt))) return existing();
    await repointIdempotencyKey(tx, input.merchantId, key.key, orderId);
    return queue();
  });
}

async function notifyOutcome(tx: Db, orderId: string) {
  // Delivered at commit: the waiting API request re-reads the order then.
  await tx.query(sql.unsafe`select pg_notify(${ORDER_OUTCOME_CHANNEL}, ${orderId})`);
}

// Confirmations finishing together (a fetch's worth of vendor answers) share one statement and
// one commit (db/coalesce.ts), per pool.
const confirmer = perPool((db: Db, cs: Confirmation[]) => confirmAttempts(db, cs, ORDER_OUTCOME_CHANNEL), 100);

/**
 * The vendor produced a usable QR: the attempt becomes a PENDING order, with its event, the
 * idempotency key's final response and the waiting request's notification — one statement,
 * shared with the confirmations finishing at the same time, on the hottest path. `attempt` is the CREATING row as the worker loaded
 * it; nothing the response shows changes while an attempt is CREATING, so the response is
 * rendered from it (`baseUrl`: the public URL it links to). With `settle`, the worker's job is
 * completed in that statement too. Returns 'settled' when the job was completed there (the
 * order confirmed by this attempt or, two attempts of one job meeting in one batch, by the
 * other), 'confirmed', or false when the attempt was already resolved (a duplicate job, or a
 * payment that came first: completePaidAttempt).
 */
export async function confirmOrder(
  db: Db,
  attempt: OrderRow,
  vendor: { vendorCode: string; vendorOrderId: string; qrisString: string },
  source: string,
  baseUrl: string,
  settle?: SettleJob,
): Promise<'settled' | 'confirmed' | false> {
  const body = orderResponseBody({
    ...attempt,
    status: 'PENDING',
    vendor_code: vendor.vendorCode,
    vendor_order_id: vendor.vendorOrderId,
    qris_string: vendor.qrisString,
    pending_vendor: null,
  }, baseUrl);
  const { confirmed, settled } = await confirmer(db)({ orderId: attempt.id, ...vendor, source, detail: { vendor: vendor.vendorCode }, responseBody: body, settle });
  if (confirmed) {
    afterCommit(db, () => ordersCreated.inc());
    return settled ? 'settled' : 'confirmed';
  }
  // Not an attempt any more. If it was paid meanwhile (the payer was quicker than the vendor's
  // answer), the vendor holding it now gives the QR it made; nothing else changes.
  await completePaidAttempt(db, { orderId: attempt.id, ...vendor });
  // Its job may still have ended in the statement, with the confirmation the order took: the
  // work loop must then leave it.
  return settled ? 'settled' : false;
}

/** No vendor produced a QR (or none is routed): the attempt fails and frees its id. */
export async function failOrder(pool: Pool, orderId: string, code: 'NO_VENDOR' | 'VENDOR_ERROR', detail: unknown): Promise<void> {
  const failed = await pool.transaction(async (tx) => {
    const order = await lockOrder(tx, orderId);
    if (!order || order.status !== 'CREATING') return false;
    await setOrderFailed(tx, orderId, code);
    await insertOrderEvent(tx, { orderId, status: 'FAILED', event: 'order.failed', source: 'vendor-worker', detail });
    await notifyOutcome(tx, orderId);
    return true;
  });
  if (failed) orderAttemptsFailed.inc({ reason: code });
}

/** Tells a waiting request that the attempt is unresolved (unknown outcome): it answers 409. */
export async function announceUnresolved(pool: Pool, orderId: string): Promise<void> {
  await pool.transaction((tx) => notifyOutcome(tx, orderId));
}

export interface Payment {
  refCode: string;
  amount: number;
  paidAt: Date;
  /** The retrieval reference number, or null when the vendor gives none (never ''). */
  rrn: string | null;
  vendorOrderId: string | null;
}

export type PaymentResult = 'paid' | 'paid_late' | 'already_paid' | 'unknown_order' | 'amount_mismatch' | 'failed_attempt' | 'not_its_record';

/**
 * Applies a payment the vendor reported (callback or reconciliation). PENDING → PAID; a payment
 * on an EXPIRED order is money received, so it is recorded as PAID and flagged late, never
 * dropped. A repeated report changes nothing. Only the vendor holding the order may report it
 * paid (db/vendor-binding.ts): another vendor's report is recorded as a conflict and changes
 * nothing else.
 */
export async function applyPayment(tx: Db, boss: PgBoss, payment: Payment, speaker: Speaker): Promise<PaymentResult> {
  const order = await lockOrderByRef(tx, payment.refCode);
  if (!order) return 'unknown_order';
  const word = { recordId: order.id, reference: order.ref_code, kasirStatus: order.status, vendorStatus: 'PAID', detail: { amount: payment.amount, rrn: payment.rrn } };
  if (!(await boundToHolder(tx, speaker, { type: 'ORDER', ...order }, word))) return 'not_its_record';
  const source = sourceOf(speaker);
  if (order.status === 'PAID' || order.status === 'REFUNDED') return 'already_paid';
  if (order.status === 'FAILED') {
    // A QR of an attempt Kasir gave up on was paid anyway. If the merchant_order_id has moved
    // on to a live order, this attempt cannot become that order: keep the facts for support.
    const live = await findLiveOrderByMerchantOrderId(tx, order.merchant_id, order.merchant_order_id);
    if (live) {
      await insertOrderEvent(tx, { orderId: order.id, status: 'FAILED', event: 'payment.on_failed_attempt', source, detail: { rrn: payment.rrn, amount: payment.amount, live_order: live.ref_code } });
      return 'failed_attempt';
    }
  }
  if (payment.amount !== order.amount) {
    await insertOrderEvent(tx, {
      orderId: order.id,
      status: order.status,
      event: 'payment.amount_mismatch',
      source,
      detail: { reported: payment.amount, expected: order.amount, rrn: payment.rrn },
    });
    return 'amount_mismatch';
  }
  const late = order.status === 'EXPIRED' || order.status === 'FAILED';
  // An order PENDING or EXPIRED already names its vendor. An attempt paid before our create
  // call returned (instant payers), or a given-up attempt with no live successor, names none
  // yet: the QR exists and money was received, so it becomes the order, held from now on by the
  // vendor that took the money (the binding above let only a vendor it was asked of speak).
  // Its refunds go there and that vendor's reconciliation counts it as its own.
  let holder: string | null = null;
  if (order.status === 'CREATING' || order.status === 'FAILED') {
    holder = 'vendor' in speaker ? speaker.vendor : order.pending_vendor;
    await insertOrderEvent(tx, { orderId: order.id, status: 'PENDING', event: 'order.created', source, detail: holder ? { vendor: holder } : undefined });
    afterCommit(tx, () => ordersCreated.inc());
  }
  const terms = await paymentTerms(tx, order);
  const paid = await setOrderPaid(tx, order.id, { paidAt: payment.paidAt, rrn: payment.rrn, vendorOrderId: payment.vendorOrderId, vendorCode: holder, late, mdr: terms.mdr });
  await insertOrderEvent(tx, { orderId: order.id, status: 'PAID', event: 'order.paid', source, detail: late ? { late: true } : undefined });
  await postOrderPayment(tx, paid, terms);
  await enqueueWebhooks(tx, boss, [
    { merchantId: order.merchant_id, orderId: order.id, event: 'order.paid', url: order.notify_url, body: orderWebhookBody(paid, 'order.paid') },
  ]);
  if (order.status === 'CREATING') await notifyOutcome(tx, order.id);
  afterCommit(tx, () => ordersPaid.inc({ late: late ? 'true' : 'false' }));
  return late ? 'paid_late' : 'paid';
}

/**
 * The vendor says an order's QR can no longer be paid (canceled, failed, expired, rejected at
 * the vendor). A PENDING order expires as the sweep would expire it (event, webhook); any other
 * state is left as it is: a paid order stays paid, a late payment is still applied if it comes.
 */
export async function closeOrderAtVendor(tx: Db, boss: PgBoss, refCode: string, why: string, speaker: Speaker): Promise<'expired' | 'unknown_order' | 'not_pending' | 'not_its_record'> {
  const order = await lockOrderByRef(tx, refCode);
  if (!order) return 'unknown_order';
  // Only the vendor holding the order may close it (db/vendor-binding.ts).
  const word = { recordId: order.id, reference: order.ref_code, kasirStatus: order.status, vendorStatus: 'CLOSED', detail: { why } };
  if (!(await boundToHolder(tx, speaker, { type: 'ORDER', ...order }, word))) return 'not_its_record';
  const source = sourceOf(speaker);
  const expired = await expireOrderNow(tx, order.id);
  if (!expired) return 'not_pending';
  await insertOrderEvent(tx, { orderId: order.id, status: 'EXPIRED', event: 'order.expired', source, detail: { vendor: why } });
  await enqueueWebhooks(tx, boss, [
    { merchantId: order.merchant_id, orderId: order.id, event: 'order.expired', url: order.notify_url, body: orderWebhookBody(expired, 'order.expired') },
  ]);
  afterCommit(tx, () => ordersExpired.inc());
  return 'expired';
}

/** Expires one batch of overdue PENDING orders; returns how many. */
export async function expireBatch(pool: Pool, boss: PgBoss, batchSize: number): Promise<number> {
  const count = await pool.transaction(async (tx) => {
    const expired = await expireDueOrders(tx, batchSize);
    await insertOrderEvents(tx, expired.map((o) => ({ orderId: o.id, status: 'EXPIRED' as const, event: 'order.expired', source: 'scheduler' })));
    await enqueueWebhooks(
      tx,
      boss,
      expired.map((o) => ({ merchantId: o.merchant_id, orderId: o.id, event: 'order.expired', url: o.notify_url, body: orderWebhookBody(o, 'order.expired') })),
    );
    return expired.length;
  });
  if (count) ordersExpired.inc(count);
  return count;
}

/** Where a page of the order list starts: a page number (spec 8), or after the cursor's row. */
export type OrderListPosition = { page: number } | { page: number; after: OrderKey };

/**
 * A page of GET /v1/orders with its exact total, and the key the next page goes on from (null on
 * the last page). A cursor page's number is the one its walk reached: the cursor carries it.
 */
export async function orderListPage(db: Db, merchantId: string, filter: OrderFilter, limit: number, at: OrderListPosition) {
  const total = await countMerchantOrders(db, merchantId, filter);
  let rows;
  if ('after' in at) {
    rows = await listMerchantOrders(db, merchantId, filter, { limit, offset: 0, after: at.after });
  } else {
    const offset = (at.page - 1) * limit;
    // A page in the older half is found from the oldest end, skipping fewer index entries.
    const fromOldest = offset >= total / 2 && offset < total;
    rows = fromOldest
      ? await listMerchantOrders(db, merchantId, filter, { limit: Math.min(limit, total - offset), offset: Math.max(0, total - offset - limit), fromOldest })
      : await listMerchantOrders(db, merchantId, filter, { limit, offset });
  }
  const last = rows.at(-1);
  const next: OrderKey | null = rows.length === limit && last ? { micros: last.key_micros, id: last.id } : null;
  return { rows, total, next };
}
