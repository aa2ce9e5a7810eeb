// The webhook outbox. A delivery row and its first job are written in the same transaction as
// the state change they report, so a committed change always has its webhook and a rolled-back
// one never does. The body is frozen at that moment as the exact bytes every attempt sends.
import type { PgBoss } from 'pg-boss';
import { z } from 'zod';
import { sql, type Db } from './pool.ts';
import { inTransaction } from './queue.ts';

export interface NewDelivery {
  merchantId: string;
  orderId: string | null;
  disbursementId?: string | null;
  settlementId?: string | null;
  event: string;
  /** The resource's own notify URL; null falls back to the merchant default. */
  url: string | null;
  body: Record<string, unknown>;
}

/**
 * Writes deliveries (skipping those with no URL at all) and queues their first attempt.
 * `tx` must be the caller's open transaction.
 */
export async function enqueueWebhooks(tx: Db, boss: PgBoss, deliveries: NewDelivery[]): Promise<string[]> {
  if (deliveries.length === 0) return [];
  const ids = await tx.anyFirst(sql.type(z.object({ id: z.string() }))`
    insert into webhook_deliveries (merchant_id, order_id, disbursement_id, settlement_id, event, url, body)
    select d.merchant_id, d.order_id, d.disbursement_id, d.settlement_id, d.event, coalesce(d.url, m.notify_url), d.body
    from ${sql.unnest(
      deliveries.map((d) => [d.merchantId, d.orderId, d.disbursementId ?? null, d.settlementId ?? null, d.event, d.url, JSON.stringify(d.body)]),
      ['uuid', 'uuid', 'uuid', 'uuid', 'text', 'text', 'text'],
    )} as d(merchant_id, order_id, disbursement_id, settlement_id, event, url, body)
    join merchants m on m.id = d.merchant_id
    where coalesce(d.url, m.notify_url) is not null
    returning id`);
  if (ids.length) await boss.insert('webhook-deliver', ids.map((id) => ({ data: { delivery_id: id } })), { db: inTransaction(tx) });
  return [...ids];
}

export const deliveryRow = z.object({
  id: z.string(),
  merchant_id: z.string(),
  order_id: z.string().nullable(),
  event: z.string(),
  url: z.string(),
  body: z.string(),
  status: z.enum(['PENDING', 'DELIVERED', 'FAILED']),
  attempts: z.number(),
  next_attempt_at: z.date().nullable(),
  last_status_code: z.number().nullable(),
  last_error: z.string().nullable(),
  delivered_at: z.date().nullable(),
  created_at: z.date(),
});
export type DeliveryRow = z.infer<typeof deliveryRow>;

const columns = sql.fragment`
  id, merchant_id, order_id, event, url, body, status, attempts, next_attempt_at, last_status_code,
  last_error, delivered_at, created_at`;

export function findDelivery(db: Db, id: string) {
  return db.maybeOne(sql.type(deliveryRow)`select ${columns} from webhook_deliveries where id = ${id}`);
}

export function listDisbursementDeliveries(db: Db, disbursementId: string) {
  return db.any(sql.type(deliveryRow)`
    select ${columns} from webhook_deliveries where disbursement_id = ${disbursementId} order by created_at, id`);
}

export function listSettlementDeliveries(db: Db, settlementId: string) {
  return db.any(sql.type(deliveryRow)`
    select ${columns} from webhook_deliveries where settlement_id = ${settlementId} order by created_at, id`);
}

export function listOrderDeliveries(db: Db, orderId: string) {
  return db.any(sql.type(deliveryRow)`
    select ${columns} from webhook_deliveries where order_id = ${orderId} order by created_at, id`);
}

export const attemptRow = z.object({
  attempt: z.number(),
  status_code: z.number().nullable(),
  latency_ms: z.number(),
  error: z.string().nullable(),
  created_at: z.date(),
});

export function listAttempts(db: Db, deliveryId: string) {
  return db.any(sql.type(attemptRow)`
    select attempt, status_code, latency_ms, error, created_at
    from webhook_attempts where delivery_id = ${deliveryId} order by attempt`);
}

/**
 * Records one attempt and moves the delivery on: DELIVERED on success; else PENDING with the
 * next attempt time, or FAILED when the schedule is exhausted. Returns the new attempt count.
 */
export async function recordAttempt(
  tx: Db,
  a: { deliveryId: string; ok: boolean; statusCode: number | null; latencyMs: number; error: string | null; retryInSeconds: number | null },
): Promise<number> {
  const attempts = await tx.oneFirst(sql.type(z.object({ attempts: z.number() }))`
    update webhook_deliveries
    set attempts = attempts + 1,
        status = ${a.ok ? 'DELIVERED' : a.retryInSeconds === null ? 'FAILED' : 'PENDING'},
        delivered_at = ${a.ok ? sql.fragment`now()` : sql.fragment`delivered_at`},
        next_attempt_at = ${a.ok || a.retryInSeconds === null ? null : sql.fragment`now() + make_interval(secs => ${a.retryInSeconds})`},
        last_status_code = ${a.statusCode}, last_error = ${a.error}, updated_at = now()
    where id = ${a.deliveryId}
    returning attempts`);
  await tx.query(sql.unsafe`
    insert into webhook_attempts (delivery_id, attempt, status_code, latency_ms, error)
    values (${a.deliveryId}, ${attempts}, ${a.statusCode}, ${a.latencyMs}, ${a.error})`);
  return attempts;
}

/** Re-opens a delivery for an operator's resend (a DELIVERED one is sent again on request). */
export function reopenDelivery(db: Db, id: string) {
  return db.maybeOneFirst(sql.type(z.object({ id: z.string() }))`
    update webhook_deliveries set status = 'PENDING', next_attempt_at = now(), updated_at = now()
    where id = ${id} returning id`);
}
