// The one order-creation path of the API, shared by V1 (POST /v1/orders) and legacy
// (POST /api/order/create): they differ only in how they read the request and shape the answer.
//
// The sequence: register interest in the new attempt's id with the process's outcome waiter
// (before the job exists, so its notification cannot be missed) → createOrder (one transaction:
// idempotency key, CREATING attempt, order-create job) → wait for the vendor worker's outcome or
// the ORDER_CREATE_DEADLINE_MS deadline. The caller then reads the row, the only truth: PENDING,
// FAILED, or still CREATING (the outcome is unknown at the vendor, or the deadline passed first).
import { randomUUID } from 'node:crypto';
import type { AppContext } from './context.ts';
import { publicBaseUrl } from '../db/config.ts';
import { createOrder, type CreateOrderInput } from '../db/orders.ts';
import { findOrderById, type OrderRow } from '../db/orders.sql.ts';
import type { Expectation } from './http/outcome-waiter.ts';

export type OrderCreation =
  /** The key's stored final response (V1 Idempotency-Key replay). */
  | { kind: 'replay'; status: number; body: string }
  /** A confirmed order already holds this merchant_order_id (its stored V1 body). */
  | { kind: 'existing'; order: OrderRow; body: string }
  /**
   * An attempt ran (this request's, or the same key's in flight): read it by id, unless its
   * confirmation's notification brought the answer it stored for the key (201).
   */
  | { kind: 'attempted'; orderId: string; storedAnswer: string | null };

/**
 * `baseUrl`: where the stored V1 answer's checkout_url and qr_url point (the merchant's brand:
 * db/brands.ts brandBaseUrl); legacy answers show neither.
 */
export async function createOrderAndWait(
  ctx: AppContext,
  input: Omit<CreateOrderInput, 'orderId'>,
  baseUrl: string = publicBaseUrl(ctx.config),
): Promise<OrderCreation> {
  const orderId = randomUUID();
  const wait = ctx.waiter.expect(orderId, ctx.config.ORDER_CREATE_DEADLINE_MS);
  let outcome;
  try {
    outcome = await createOrder(ctx.pool, ctx.boss, { ...input, orderId }, baseUrl);
  } catch (err) {
    wait.cancel();
    throw err;
  }
  if (outcome.kind !== 'attempt') wait.cancel();
  if (outcome.kind === 'replay' || outcome.kind === 'existing') return outcome;
  const storedAnswer = await awaitOutcome(ctx, outcome.kind === 'attempt' ? wait : null, outcome.orderId);
  return { kind: 'attempted', orderId: outcome.orderId, storedAnswer };
}

/** The attempt's row after the wait; CREATING means its outcome is still unknown. */
export function attemptedOrder(ctx: AppContext, orderId: string): Promise<OrderRow | null> {
  return findOrderById(ctx.pool, orderId);
}

/**
 * Waits until the worker resolves the attempt (confirmed, failed, or "outcome unknown at the
 * vendor": any notification) or the deadline passes; resolves the stored answer the
 * confirmation's notification carried, if one did.
 */
async function awaitOutcome(ctx: AppContext, registered: Expectation | null, orderId: string): Promise<string | null> {
  const wait = registered ?? ctx.waiter.expect(orderId, ctx.config.ORDER_CREATE_DEADLINE_MS);
  try {
    if (!registered) {
      // Joining another request's attempt: it may have resolved before we started listening.
      const now = await findOrderById(ctx.pool, orderId);
      if (now && now.status !== 'CREATING') return null;
    }
    return (await wait.done).storedAnswer;
  } finally {
    wait.cancel();
  }
}
