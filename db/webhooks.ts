// The webhook outbox. A delivery row and its first job are written in the same transaction as
// the state change they report, so a committed change always has its webhook and a rolled-back
// one never does. The body is frozen at that moment as the exact bytes every attempt sends.
//
// A V1 body (one carrying `event`; the legacy shapes never do) is stamped here with the event's
// identity: `event_id` is the delivery's id, which is also the `webhook-id` header of every
// attempt and resend (one event goes to one URL, so the two are the same thing: a receiver
// dedupes on either and finds the delivery by it in GET /v1/webhook-deliveries/{id}), and
// `event_created_at` is when the change was written. Both are fixed with the body, so retries
// and resends repeat them byte for byte.
import { randomUUID } from 'node:crypto';
import type { PgBoss } from 'pg-boss';
import { z } from 'zod';
import { sql, type Db } from './pool.ts';
import { inTransaction } from './queue.ts';

export interface NewDelivery {
  merchantId: string;
  orderId: string | null;
  disbursementId?: string | null;
  settlementId?: string | null;
  exportId?: string | null;
  event: string;
  /** The resource's own notify URL; null falls back to the merchant default. */
  url: string | null;
  body: Record<string, unknown>;
  /** An operator's sample (ops webhooks:trigger), never a real event. */
  sample?: boolean;
}

/** The body as sent: a V1 body gains event_id and event_created_at, after its own fields. */
export function stampedBody(body: Record<string, unknown>, id: string, at: Date): string {
  return JSON.stringify('event' in body ? { ...body, event_id: id, event_created_at: at.toISOString() } : body);
}

/**
 * Writes deliveries (skipping those with no URL at all) and queues their first attempt.
 * `tx` must be the caller's open transaction.
 */
export async function enqueueWebhooks(tx: Db, boss: PgBoss, deliveries: NewDelivery[]): Promise<string[]> {
  if (deliveries.length === 0) return [];
  const at = new Date();
  const rows = deliveries.map((d) => {
    const id = randomUUID();
    return [id, d.merchantId, d.orderId, d.disbursementId ?? null, d.settlementId ?? null, d.exportId ?? null, d.event, d.url, stampedBody(d.body, id, at), d.sample ?? false];
  });
  const ids = await tx.anyFirst(sql.type(z.object({ id: z.string() }))`
    insert into webhook_deliveries (id, merchant_id, order_id, disbursement_id, settlement_id, export_id, event, url, body, sample)
    select d.id, d.merchant_id, d.order_id, d.disbursement_id, d.settlement_id, d.export_id, d.event, coalesce(d.url, m.notify_url), d.body, d.sample
    from ${sql.unnest(rows, ['uuid', 'uuid', 'uuid', 'uuid', 'uuid', 'uuid', 'text', 'text', 'text', 'bool'])}
      as d(id, merchant_id, order_id, disbursement_id, settlement_id, export_id, event, url, body, sample)
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
  sample: z.boolean(),
});
export type DeliveryRow = z.infer<typeof deliveryRow>;

const columns = sql.fragment`
  id, merchant_id, order_id, event, url, body, status, attempts, next_attempt_at, last_status_code,
  last_error, delivered_at, created_at, sample`;

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

export type AttemptRow = z.infer<typeof attemptRow>;

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

export const merchantDeliveryRow = deliveryRow.extend({
  /** The resource the delivery reports on: its kind and ref code. */
  resource_type: z.enum(['ORDER', 'DISBURSEMENT', 'SETTLEMENT', 'EXPORT']).nullable(),
  resource_ref: z.string().nullable(),
});
export type MerchantDeliveryRow = z.infer<typeof merchantDeliveryRow>;

const merchantColumns = sql.fragment`
  w.id, w.merchant_id, w.order_id, w.event, w.url, w.body, w.status, w.attempts, w.next_attempt_at,
  w.last_status_code, w.last_error, w.delivered_at, w.created_at, w.sample,
  case when w.order_id is not null then 'ORDER' when w.disbursement_id is not null then 'DISBURSEMENT'
       when w.settlement_id is not null then 'SETTLEMENT' when w.export_id is not null then 'EXPORT' end as resource_type,
  coalesce(o.ref_code, d.ref_code, s.ref_code, w.export_id::text) as resource_ref`;

const merchantFrom = sql.fragment`
  webhook_deliveries w
  left join orders o on o.id = w.order_id
  left join disbursements d on d.id = w.disbursement_id
  left join settlements s on s.id = w.settlement_id`;

export interface DeliveryFilter {
  status?: 'PENDING' | 'DELIVERED' | 'FAILED';
  event?: string;
}

/** A merchant's deliveries, newest first, with the total for the page meta. */
export async function listMerchantDeliveries(db: Db, merchantId: string, filter: DeliveryFilter, page: number, limit: number) {
  const where = sql.join(
    [
      sql.fragment`w.merchant_id = ${merchantId}`,
      ...(filter.status ? [sql.fragment`w.status = ${filter.status}`] : []),
      ...(filter.event ? [sql.fragment`w.event = ${filter.event}`] : []),
    ],
    sql.fragment` and `,
  );
  const [rows, total] = await Promise.all([
    db.any(sql.type(merchantDeliveryRow)`
      select ${merchantColumns} from ${merchantFrom} where ${where}
      order by w.created_at desc, w.id desc limit ${limit} offset ${(page - 1) * limit}`),
    db.oneFirst(sql.type(z.object({ n: z.number() }))`select count(*)::int as n from webhook_deliveries w where ${where}`),
  ]);
  return [rows, total] as const;
}

/** One of the merchant's deliveries; another merchant's is as unknown as a missing one. */
export function findMerchantDelivery(db: Db, merchantId: string, id: string) {
  return db.maybeOne(sql.type(merchantDeliveryRow)`
    select ${merchantColumns} from ${merchantFrom} where w.id = ${id} and w.merchant_id = ${merchantId}`);
}

/**
 * The deliveries about one resource, by its ref code (for operators): an order's, a
 * disbursement's, a settlement's, or a refund's (its order's deliveries that name it).
 */
export function listDeliveriesByRef(db: Db, ref: string) {
  return db.any(sql.type(merchantDeliveryRow)`
    select ${merchantColumns} from ${merchantFrom}
    where w.order_id = (select id from orders where ref_code = ${ref})
       or w.disbursement_id = (select id from disbursements where ref_code = ${ref})
       or w.settlement_id = (select id from settlements where ref_code = ${ref})
       or (w.order_id = (select order_id from refunds where ref_code = ${ref}) and strpos(w.body, ${ref}) > 0)
    order by w.created_at, w.id`);
}

/**
 * The merchant's sample deliveries of the last `windowSeconds`, counted under a transaction lock
 * per merchant (so two requests cannot both take the last place), and how many seconds until the
 * oldest of them leaves the window. `tx` must be the caller's open transaction.
 */
export async function recentSamples(tx: Db, merchantId: string, windowSeconds: number): Promise<{ count: number; freeInSeconds: number }> {
  await tx.query(sql.unsafe`select pg_advisory_xact_lock(hashtext('webhook-samples'), hashtext(${merchantId}))`);
  const row = await tx.one(sql.type(z.object({ count: z.number(), free_in: z.number().nullable() }))`
    select count(*)::int as count,
           ceil(extract(epoch from min(created_at) + make_interval(secs => ${windowSeconds}) - now()))::int as free_in
    from webhook_deliveries
    where merchant_id = ${merchantId} and sample and created_at > now() - make_interval(secs => ${windowSeconds})`);
  return { count: row.count, freeInSeconds: Math.max(1, row.free_in ?? 1) };
}
