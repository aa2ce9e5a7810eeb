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
import { sql, type Db, type Pool } from './pool.ts';
import { inTransaction } from './queue.ts';
import { countRow } from './row-shapes.ts';

/** The pg-boss queue of delivery attempts (its contract is in db/queue.ts). */
export const WEBHOOK_QUEUE = 'webhook-deliver';

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
 * Where a delivery goes, as the webhook worker limits and pools its requests: the URL's origin
 * (scheme, host and port). One merchant's endpoint, or a host several merchants share. Stored
 * on each job as its pg-boss group, so a fetch can pass over a destination that is at its limit.
 */
export function destinationOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return 'invalid';
  }
}

/** The job of a delivery's attempt (its first, or a retry `startAfter` seconds from now). */
export function deliveryJob(id: string, url: string, startAfter?: number) {
  return { data: { delivery_id: id }, group: { id: destinationOf(url) }, ...(startAfter === undefined ? {} : { startAfter }) };
}

const deliveryTargetRow = z.object({ id: z.string(), url: z.string() });

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
  const written = await tx.any(sql.type(deliveryTargetRow)`
    insert into webhook_deliveries (id, merchant_id, order_id, disbursement_id, settlement_id, export_id, event, url, body, sample)
    select d.id, d.merchant_id, d.order_id, d.disbursement_id, d.settlement_id, d.export_id, d.event, coalesce(d.url, m.notify_url), d.body, d.sample
    from ${sql.unnest(rows, ['uuid', 'uuid', 'uuid', 'uuid', 'uuid', 'uuid', 'text', 'text', 'text', 'bool'])}
      as d(id, merchant_id, order_id, disbursement_id, settlement_id, export_id, event, url, body, sample)
    join merchants m on m.id = d.merchant_id
    where coalesce(d.url, m.notify_url) is not null
    returning id, url`);
  if (written.length) await boss.insert(WEBHOOK_QUEUE, written.map((d) => deliveryJob(d.id, d.url)), { db: inTransaction(tx) });
  return written.map((d) => d.id);
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

/** A delivery as the webhook worker sends it: the row and its merchant's sealed secret, in one read. */
export const sendableRow = z.object({
  id: z.string(),
  merchant_id: z.string(),
  url: z.string(),
  event: z.string(),
  body: z.string(),
  status: z.enum(['PENDING', 'DELIVERED', 'FAILED']),
  attempts: z.number(),
  next_attempt_at: z.date().nullable(),
  webhook_secret_enc: z.instanceof(Buffer).nullable(),
  sample: z.boolean(),
});
export type SendableRow = z.infer<typeof sendableRow>;

/**
 * The deliveries of a fetched batch of jobs with their merchants' secrets: one primary-key probe
 * per id. (Written as `id = any(...)` joined to merchants, the planner took the merchant index
 * with a skip scan under stale statistics: every delivery of the merchant read, per batch.)
 */
export function loadSendable(db: Db, ids: readonly string[]) {
  return db.any(sql.type(sendableRow)`
    select d.id, d.merchant_id, d.url, d.event, d.body, d.status, d.attempts, d.next_attempt_at, m.webhook_secret_enc, d.sample
    from unnest(${sql.array(ids, 'uuid')}) as k(id)
    join webhook_deliveries d on d.id = k.id
    join merchants m on m.id = d.merchant_id`);
}

export interface AttemptRecord {
  deliveryId: string;
  ok: boolean;
  statusCode: number | null;
  latencyMs: number;
  error: string | null;
  /** Seconds until the next attempt; null when the schedule is exhausted (or on success). */
  retryInSeconds: number | null;
}

const recordAttemptsRow = z.object({ delivery_id: z.string(), attempt: z.number() });

/**
 * Records a batch of attempts in one statement: each delivery moves on (DELIVERED on success;
 * else PENDING with its next attempt time, or FAILED when the schedule is exhausted) and gets
 * its attempt row, numbered by its new attempt count. A delivery appears at most once per call.
 * Returns each delivery's new attempt count.
 */
export async function recordAttempts(tx: Db, records: readonly AttemptRecord[]): Promise<Map<string, number>> {
  if (records.length === 0) return new Map();
  const rows = records.map((a) => [a.deliveryId, a.ok, a.statusCode, Math.round(a.latencyMs), a.error, a.ok ? null : a.retryInSeconds]);
  const recorded = await tx.any(sql.type(recordAttemptsRow)`
    with a as (
      select * from ${sql.unnest(rows, ['uuid', 'bool', 'int4', 'int4', 'text', 'int4'])}
        as a(id, ok, status_code, latency_ms, error, retry_in)
    ), d as (
      update webhook_deliveries w
      set attempts = w.attempts + 1,
          status = case when a.ok then 'DELIVERED' when a.retry_in is null then 'FAILED' else 'PENDING' end,
          delivered_at = case when a.ok then now() else w.delivered_at end,
          next_attempt_at = case when a.retry_in is null then null else now() + make_interval(secs => a.retry_in) end,
          last_status_code = a.status_code, last_error = a.error, updated_at = now()
      from a where w.id = a.id
      returning w.id, w.attempts, a.status_code, a.latency_ms, a.error
    )
    insert into webhook_attempts (delivery_id, attempt, status_code, latency_ms, error)
    select id, attempts, status_code, latency_ms, error from d
    returning delivery_id, attempt`);
  return new Map(recorded.map((r) => [r.delivery_id, r.attempt]));
}

/** Re-opens a delivery for an operator's resend (a DELIVERED one is sent again on request). */
/**
 * Sends a delivery again now (an operator's or its merchant's resend): PENDING, due now, and a
 * job for it with its destination's group like any attempt's (so a slow destination's resends
 * wait in its own line), in one transaction: a crash never leaves it reopened with no job.
 */
export function resendDelivery(pool: Pool, boss: PgBoss, id: string): Promise<boolean> {
  return pool.transaction(async (tx) => {
    const reopened = await tx.maybeOne(sql.type(deliveryTargetRow)`
      update webhook_deliveries set status = 'PENDING', next_attempt_at = now(), updated_at = now()
      where id = ${id} returning id, url`);
    if (!reopened) return false;
    await boss.insert(WEBHOOK_QUEUE, [deliveryJob(reopened.id, reopened.url)], { db: inTransaction(tx) });
    return true;
  });
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

/** A merchant's deliveries, newest first, with the total for the page meta (from the kept counts). */
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
    // The kept counts (webhook_delivery_counts, migration 104): counting the deliveries took
    // 72-146 ms for a merchant with 250,000 of them.
    db.oneFirst(sql.type(countRow)`
      select coalesce(sum(n), 0)::int as n from webhook_delivery_counts
      where merchant_id = ${merchantId}
        ${filter.status ? sql.fragment`and status = ${filter.status}` : sql.fragment``}
        ${filter.event ? sql.fragment`and event = ${filter.event}` : sql.fragment``}`),
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

const recentSamplesRow = z.object({ count: z.number(), free_in: z.number().nullable() });

/**
 * The merchant's sample deliveries of the last `windowSeconds`, counted under a transaction lock
 * per merchant (so two requests cannot both take the last place), and how many seconds until the
 * oldest of them leaves the window. `tx` must be the caller's open transaction.
 */
export async function recentSamples(tx: Db, merchantId: string, windowSeconds: number): Promise<{ count: number; freeInSeconds: number }> {
  await tx.query(sql.unsafe`select pg_advisory_xact_lock(hashtext('webhook-samples'), hashtext(${merchantId}))`);
  const row = await tx.one(sql.type(recentSamplesRow)`
    select count(*)::int as count,
           ceil(extract(epoch from min(created_at) + make_interval(secs => ${windowSeconds}) - now()))::int as free_in
    from webhook_deliveries
    where merchant_id = ${merchantId} and sample and created_at > now() - make_interval(secs => ${windowSeconds})`);
  return { count: row.count, freeInSeconds: Math.max(1, row.free_in ?? 1) };
}

// ---------------------------------------------------------------- retention (db/retention.ts)

/** Makes sure the partitions of this month and the next `ahead` exist (migration 036). */
export function ensureAttemptPartitions(db: Db, ahead: number) {
  return db.query(sql.unsafe`
    select webhook_attempts_month(now() + make_interval(months => m)) from generate_series(0, ${ahead}) as m`);
}

const attemptMonthsEndedBeforeRow = z.object({ name: z.string(), month_end: z.date() });

/** The monthly partitions of webhook_attempts whose month ended before `before`, oldest first, with their rows. */
export async function attemptMonthsEndedBefore(db: Db, before: Date) {
  const months = await db.any(sql.type(attemptMonthsEndedBeforeRow)`
    select c.relname as name,
           (to_date(right(c.relname, 8), '"y"YYYY"m"MM') + interval '1 month')::timestamp at time zone 'UTC' as month_end
    from pg_inherits i join pg_class c on c.oid = i.inhrelid
    where i.inhparent = 'webhook_attempts'::regclass and c.relname ~ '^webhook_attempts_y[0-9]{4}m[0-9]{2}$'
    order by month_end`);
  return months.filter((m) => m.month_end.getTime() <= before.getTime());
}

/** Rows in one partition (named by attemptMonthsEndedBefore). */
export function countAttemptPartition(db: Db, name: string) {
  return db.oneFirst(sql.type(countRow)`select count(*)::bigint as n from ${sql.identifier([name])}`);
}

/**
 * Drops a month of attempts: the whole table at once. It briefly takes the parent's lock, so a
 * lock wait longer than a few seconds (a long query on the attempts) gives up for this pass
 * rather than queue every attempt's insert behind it.
 */
export function dropAttemptPartition(pool: Pool, name: string) {
  return pool.transaction(async (tx) => {
    await tx.query(sql.unsafe`select set_config('lock_timeout', '5s', true)`);
    await tx.query(sql.unsafe`drop table ${sql.identifier([name])}`);
  });
}

/** Deliveries that ended (DELIVERED or FAILED, not reopened) before `before`. */
const endedBefore = (before: Date) =>
  sql.fragment`created_at < ${before.toISOString()}::timestamptz and status <> 'PENDING' and updated_at < ${before.toISOString()}::timestamptz`;

export function countEndedDeliveries(db: Db, before: Date) {
  return db.oneFirst(sql.type(countRow)`select count(*)::bigint as n from webhook_deliveries where ${endedBefore(before)}`);
}

/**
 * Deletes up to `batch` deliveries that ended before `before`, with their bodies. Deliveries
 * are not an append-only log (each attempt updates its row), so they go in short batches, each
 * its own transaction; SKIP LOCKED passes over a row a resend is reopening.
 */
export function deleteEndedDeliveries(db: Db, before: Date, batch: number) {
  return db.oneFirst(sql.type(countRow)`
    with gone as (
      delete from webhook_deliveries where id in (
        select id from webhook_deliveries where ${endedBefore(before)} limit ${batch} for update skip locked)
      returning 1
    )
    select count(*)::int as n from gone`);
}
