// One function per statement on the orders aggregate (orders, order_events, idempotency_keys).
import { z } from 'zod';
import type { FragmentSqlToken } from '@slonik/sql-tag';
import { ForeignKeyIntegrityConstraintViolationError } from 'slonik';
import { deleteKeysOlderThan } from './idempotency.ts';
import { JOBS_COMPLETED, type JobsCompletion } from './job-complete.ts';
import { JOBS_NOTIFIED } from './job-insert.ts';
import { sql, type Db } from './pool.ts';
import { countRow, idRow } from './row-shapes.ts';

export const orderStatus = z.enum(['CREATING', 'PENDING', 'PAID', 'EXPIRED', 'REFUNDED', 'FAILED']);
export type OrderStatus = z.infer<typeof orderStatus>;

export const orderRow = z.object({
  id: z.string(),
  merchant_id: z.string(),
  ref_code: z.string(),
  merchant_order_id: z.string(),
  api: z.enum(['V1', 'LEGACY']),
  amount: z.number(),
  payment_method: z.string(),
  status: orderStatus,
  customer_name: z.string().nullable(),
  customer_email: z.string().nullable(),
  customer_phone: z.string().nullable(),
  notify_url: z.string().nullable(),
  return_url: z.string().nullable(),
  /** The metadata object's JSON text exactly as stored (spec 2.2: returned as-is), or null. */
  metadata_json: z.string().nullable(),
  expires_at: z.date().nullable(),
  qris_string: z.string().nullable(),
  qr_token: z.string(),
  vendor_code: z.string().nullable(),
  vendor_order_id: z.string().nullable(),
  vendor_rrn: z.string().nullable(),
  pending_vendor: z.string().nullable(),
  vendors_tried: z.array(z.string()),
  failure_code: z.string().nullable(),
  paid_at: z.date().nullable(),
  is_late_payment: z.boolean(),
  is_settled: z.boolean(),
  /** What the order's refunds not FAILED took: PENDING ones hold their money (docs/decisions.md, Refunds). */
  refunded_amount: z.number(),
  created_at: z.date(),
  updated_at: z.date(),
});
export type OrderRow = z.infer<typeof orderRow>;

// metadata is a json column: ::text hands over the stored text, never a parsed (reordered) object.
// refunded_amount is summed where it is read (refunds_order_idx), so no column can drift from
// the refunds; a statement sees the refunds its transaction wrote before it.
const columns = sql.fragment`
  id, merchant_id, ref_code, merchant_order_id, api, amount, payment_method, status, customer_name,
  customer_email, customer_phone, notify_url, return_url, metadata::text as metadata_json, expires_at,
  qris_string, qr_token, vendor_code, vendor_order_id, vendor_rrn, pending_vendor, vendors_tried,
  failure_code, paid_at, is_late_payment, is_settled,
  (select coalesce(sum(r.amount), 0) from refunds r where r.order_id = orders.id and r.status <> 'FAILED')::bigint as refunded_amount,
  created_at, updated_at`;

export interface NewOrder {
  id: string;
  merchantId: string;
  refCode: string;
  merchantOrderId: string;
  api: 'V1' | 'LEGACY';
  amount: number;
  customerName: string | null;
  customerEmail: string | null;
  customerPhone: string | null;
  notifyUrl: string | null;
  returnUrl: string | null;
  /** JSON text of the metadata object as the merchant sent it; stored verbatim (json column). */
  metadataJson: string | null;
  expireMinutes: number;
  qrToken: string;
}

const insertedColumns = sql.fragment`
  id, merchant_id, ref_code, merchant_order_id, api, amount, status, customer_name, customer_email,
  customer_phone, notify_url, return_url, metadata, expires_at, qr_token, manual_settlement`;

function insertedValues(o: NewOrder) {
  return sql.fragment`
    ${o.id}, ${o.merchantId}, ${o.refCode}, ${o.merchantOrderId}, ${o.api}, ${o.amount}, 'CREATING',
    ${o.customerName}, ${o.customerEmail}, ${o.customerPhone}, ${o.notifyUrl}, ${o.returnUrl},
    ${o.metadataJson}::json,
    ${o.expireMinutes === 0 ? null : sql.fragment`now() + make_interval(mins => ${o.expireMinutes})`},
    ${o.qrToken},
    -- A merchant's settlement type never changes: copied here, it lets orders_unsettled_idx
    -- hold only the orders a settlement will take (migration 037).
    (select settlement_type = 'MANUAL' from merchants where id = ${o.merchantId})`;
}

/** Inserts a CREATING attempt; null when a live order already holds the merchant_order_id. */
export function insertOrder(db: Db, o: NewOrder) {
  return db.maybeOne(sql.type(orderRow)`
    insert into orders (${insertedColumns})
    values (${insertedValues(o)})
    on conflict (merchant_id, merchant_order_id) where status <> 'FAILED' do nothing
    returning ${columns}`);
}

/**
 * A keyed create's common case in one round trip: claims the Idempotency-Key for the order id
 * and inserts the CREATING attempt, the insert running only if the claim did. Null when either
 * did nothing; the key's row then says which (its order_id is this attempt's when the claim
 * went through and a live order held the merchant_order_id).
 */
export function claimKeyAndInsertOrder(db: Db, k: { merchantId: string; key: string; requestHash: Buffer }, o: NewOrder) {
  return db.maybeOne(sql.type(orderRow)`
    with claimed as (
      insert into idempotency_keys (merchant_id, key, request_hash, order_id)
      values (${k.merchantId}, ${k.key}, ${sql.binary(k.requestHash)}, ${o.id})
      on conflict do nothing
      returning order_id
    )
    insert into orders (${insertedColumns})
    select ${insertedValues(o)} from claimed
    on conflict (merchant_id, merchant_order_id) where status <> 'FAILED' do nothing
    returning ${columns}`);
}

/**
 * A create's common case as one statement, outside any transaction: the Idempotency-Key's claim
 * (when `k` is given), the CREATING attempt and its `order-create` job (`jobs`, db/job-insert.ts,
 * gated on the attempt's insert) commit together or not at all. Returns the attempt's id; null
 * when any part did nothing: the caller then runs the full create (createOrder's transaction),
 * which finds out why.
 *
 * The claim is also skipped while a live order holds the merchant_order_id (the common retry of
 * a created order). A create racing another for the same merchant_order_id may still claim the
 * key and then find the order taken: the key's deferred check of its order fails at this
 * statement's commit, so nothing commits, and that too is null. `db` must not be inside a
 * transaction (the check would then wait for the caller's commit).
 */
export async function insertOrderAndQueue(db: Db, k: { merchantId: string; key: string; requestHash: Buffer } | null, o: NewOrder, jobs: FragmentSqlToken) {
  const claim = k
    ? sql.fragment`
      claimed as (
        insert into idempotency_keys (merchant_id, key, request_hash, order_id)
        select ${k.merchantId}, ${k.key}, ${sql.binary(k.requestHash)}, ${o.id}
        where not exists (
          select 1 from orders
          where merchant_id = ${o.merchantId} and merchant_order_id = ${o.merchantOrderId} and status <> 'FAILED')
        on conflict do nothing
        returning order_id
      ),`
    : sql.fragment`claimed as (select 1),`;
  try {
    // Only the id comes back: the caller needs to know that it went through, not the full order
    // row (29 columns, one a subquery, for pg to describe and parse and zod to check).
    return await db.maybeOneFirst(sql.type(idRow)`
      with ${claim}
      inserted as (
        insert into orders (${insertedColumns})
        select ${insertedValues(o)} from claimed
        on conflict (merchant_id, merchant_order_id) where status <> 'FAILED' do nothing
        returning id
      ),
      ${jobs}
      select id from inserted where (select count(*) from ${sql.identifier([JOBS_NOTIFIED])}) >= 0`);
  } catch (err) {
    if (err instanceof ForeignKeyIntegrityConstraintViolationError && err.constraint === 'idempotency_keys_order_id_fkey') return null;
    throw err;
  }
}

export function findLiveOrderByMerchantOrderId(db: Db, merchantId: string, merchantOrderId: string) {
  return db.maybeOne(sql.type(orderRow)`
    select ${columns} from orders
    where merchant_id = ${merchantId} and merchant_order_id = ${merchantOrderId} and status <> 'FAILED'`);
}

export function findOrderById(db: Db, id: string) {
  return db.maybeOne(sql.type(orderRow)`select ${columns} from orders where id = ${id}`);
}

/** Row-locks the order: every state change reads it this way first, so changes serialise. */
export function lockOrder(db: Db, id: string) {
  return db.maybeOne(sql.type(orderRow)`select ${columns} from orders where id = ${id} for update`);
}

/** An order by ref_code, unlocked (a callback's hint is checked with the vendor before any lock is taken). */
export function findOrderByRef(db: Db, refCode: string) {
  return db.maybeOne(sql.type(orderRow)`select ${columns} from orders where ref_code = ${refCode}`);
}

export function lockOrderByRef(db: Db, refCode: string) {
  return db.maybeOne(sql.type(orderRow)`select ${columns} from orders where ref_code = ${refCode} for update`);
}

/** A merchant's visible order by ref_code (CREATING and FAILED attempts are internal). */
export function findMerchantOrder(db: Db, merchantId: string, refCode: string) {
  return db.maybeOne(sql.type(orderRow)`
    select ${columns} from orders
    where ref_code = ${refCode} and merchant_id = ${merchantId} and status not in ('CREATING', 'FAILED')`);
}

const findOrderByQrTokenRow = z.object({ qris_string: z.string().nullable(), status: orderStatus });

export function findOrderByQrToken(db: Db, token: string) {
  return db.maybeOne(sql.type(findOrderByQrTokenRow)`
    select qris_string, status from orders where qr_token = ${token}`);
}

/** What the public checkout page (api/checkout.ts) may know of an order: internal attempts are not orders. */
export const checkoutOrderRow = z.object({
  ref_code: z.string(),
  status: orderStatus,
  amount: z.number(),
  merchant_name: z.string(),
  qr_token: z.string(),
  has_qr: z.boolean(),
  expires_at: z.date().nullable(),
  paid_at: z.date().nullable(),
  return_url: z.string().nullable(),
});
export type CheckoutOrderRow = z.infer<typeof checkoutOrderRow>;

export function findCheckoutOrder(db: Db, refCode: string) {
  return db.maybeOne(sql.type(checkoutOrderRow)`
    select o.ref_code, o.status, o.amount, m.name as merchant_name, o.qr_token, o.qris_string is not null as has_qr,
           o.expires_at, o.paid_at, o.return_url
    from orders o join merchants m on m.id = o.merchant_id
    where o.ref_code = ${refCode} and o.status not in ('CREATING', 'FAILED')`);
}

/** The listed statuses a filter may ask for (CREATING and FAILED attempts are never listed). */
export const listedOrderStatus = z.enum(['PENDING', 'PAID', 'EXPIRED', 'REFUNDED']);

export interface OrderFilter {
  /** Exact merchant order id: at most one live order. */
  merchantOrderId?: string;
  status?: z.infer<typeof listedOrderStatus>;
  /** WIB calendar days of created_at, inclusive (YYYY-MM-DD). */
  dateFrom?: string;
  dateTo?: string;
}

/** Where a cursor walk goes on from: the last row of the previous page, as (created_at, id). */
export interface OrderKey {
  /** created_at in microseconds since the epoch: a JS Date would drop the microseconds. */
  micros: string;
  id: string;
}

function listedWhere(merchantId: string, filter: OrderFilter) {
  return sql.fragment`merchant_id = ${merchantId} and status not in ('CREATING', 'FAILED')
    ${filter.merchantOrderId === undefined ? sql.fragment`` : sql.fragment`and merchant_order_id = ${filter.merchantOrderId}`}
    ${filter.status === undefined ? sql.fragment`` : sql.fragment`and status = ${filter.status}`}
    ${filter.dateFrom === undefined ? sql.fragment`` : sql.fragment`and created_at >= (${filter.dateFrom}::date)::timestamp at time zone 'Asia/Jakarta'`}
    ${filter.dateTo === undefined ? sql.fragment`` : sql.fragment`and created_at < (${filter.dateTo}::date + 1)::timestamp at time zone 'Asia/Jakarta'`}`;
}

const listedOrderRow = orderRow.extend({ key_micros: z.string() });

/**
 * One page of a merchant's listed orders, newest first: after `after` (a cursor walk) or at
 * `offset`. The page's ids are chosen on orders_merchant_listed_idx alone (an index-only scan:
 * OFFSET skips index entries, not rows with their refunded_amount), then only those rows are
 * read. `fromOldest` counts the offset from the list's other end (the caller knows the total):
 * a page in the older half skips fewer entries that way, so the last page costs what the first
 * half's middle does.
 */
export function listMerchantOrders(db: Db, merchantId: string, filter: OrderFilter, page: { limit: number; offset: number; after?: OrderKey; fromOldest?: boolean }) {
  const after = page.after === undefined
    ? sql.fragment``
    : sql.fragment`and (created_at, id) < ('epoch'::timestamptz + ${page.after.micros}::bigint * interval '1 microsecond', ${page.after.id}::uuid)`;
  const walk = page.fromOldest ? sql.fragment`order by created_at, id` : sql.fragment`order by created_at desc, id desc`;
  return db.any(sql.type(listedOrderRow)`
    select ${columns}, (extract(epoch from created_at) * 1000000)::bigint::text as key_micros
    from orders
    where id in (
      select id from orders where ${listedWhere(merchantId, filter)} ${after}
      ${walk}
      limit ${page.limit} offset ${page.offset})
    order by created_at desc, id desc`);
}

/**
 * meta.total of the order list. Unfiltered or by status it sums the kept counts (order_counts,
 * at most 16 rows a status); a date range or a merchant order id counts its range on the index.
 */
export function countMerchantOrders(db: Db, merchantId: string, filter: OrderFilter) {
  if (filter.merchantOrderId === undefined && filter.dateFrom === undefined && filter.dateTo === undefined) {
    return db.oneFirst(sql.type(countRow)`
      select coalesce(sum(n), 0)::bigint as n from order_counts
      where merchant_id = ${merchantId} ${filter.status === undefined ? sql.fragment`` : sql.fragment`and status = ${filter.status}`}`);
  }
  return db.oneFirst(sql.type(countRow)`select count(*)::bigint as n from orders where ${listedWhere(merchantId, filter)}`);
}

/**
 * A vendor that may be handed a record now: enabled and not removed, as its row says at this
 * statement. Workers cache routes for up to 5 s (db/cache.ts), so every statement that hands a
 * vendor a record checks its row again, in the statement itself.
 */
/** The vendor (a code, or the column holding one) is enabled and not removed. */
export const vendorUsable = (vendorCode: string | ReturnType<typeof sql.fragment>) =>
  sql.fragment`exists (select 1 from vendors v where v.code = ${vendorCode} and v.enabled and v.removed_at is null)`;

/** Records `vendorCode` as the one the create call goes to; false when it is disabled or removed now. */
export async function markVendorPending(db: Db, id: string, vendorCode: string): Promise<boolean> {
  const marked = await db.query(sql.unsafe`
    update orders
    set pending_vendor = ${vendorCode}, vendors_tried = array_append(vendors_tried, ${vendorCode}), updated_at = now()
    where id = ${id} and ${vendorUsable(vendorCode)}`);
  return marked.rowCount === 1;
}

/**
 * The vendor worker's load and its first markVendorPending in one statement, for a batch of
 * attempts: each, if it is still CREATING with no vendor pending and its `vendorCode` not tried
 * yet, is now pending at that vendor, and comes back as it is after that. Null otherwise
 * (resolved, a crash left a vendor pending, this vendor was tried, or it was disabled or removed
 * since the worker read its routes): the worker then loads it and decides the long way.
 */
export async function loadAndMarkVendorPending(db: Db, marks: readonly { id: string; vendorCode: string }[]): Promise<(OrderRow | null)[]> {
  // An attempt asked for twice in one batch (a re-queued job beside the first) is marked for the
  // first asker only: the second gets null and goes the long way, as it would one statement later.
  const first = new Map<string, number>();
  marks.forEach((m, i) => first.has(m.id) || first.set(m.id, i));
  // updated_at is left as the insert set it (milliseconds before, unless the job waited in a
  // backlog): it is what the stale-attempt sweep reads (orders_creating_idx), and an update that
  // changes no indexed column can be HOT, written without a new entry in each of the orders'
  // indexes. So the sweep's 300 s count from the insert: after a backlog of nearly that, it may
  // re-queue an attempt whose first call is in flight, and that job asks the pending vendor
  // first, as after a crash. The mark of a later vendor, after a failure or a re-queue, still
  // moves it (markVendorPending).
  const rows = await db.any(sql.type(orderRow)`
    update orders
    set pending_vendor = m.mark_vendor, vendors_tried = array_append(vendors_tried, m.mark_vendor)
    from ${sql.unnest([...first.keys()].map((id) => [id, marks[first.get(id)!].vendorCode]), ['uuid', 'text'])} as m(mark_id, mark_vendor)
    where orders.id = m.mark_id and status = 'CREATING' and pending_vendor is null and not (m.mark_vendor = any(vendors_tried))
      and ${vendorUsable(sql.fragment`m.mark_vendor`)}
    returning ${columns}`);
  const byId = new Map(rows.map((r) => [r.id, r]));
  return marks.map((m, i) => (first.get(m.id) === i ? (byId.get(m.id) ?? null) : null));
}

export function clearVendorPending(db: Db, id: string) {
  return db.query(sql.unsafe`update orders set pending_vendor = null, updated_at = now() where id = ${id}`);
}

/**
 * CREATING → PENDING with the vendor's QR, its event, the key's stored 201 and the outcome
 * notification (delivered at commit), in one statement.
 */
/** NOTIFY payloads are at most 8,000 bytes: the id, a newline and an answer up to this. */
const NOTIFIED_ANSWER_MAX_BYTES = 7_900;

export interface Confirmation {
  orderId: string;
  vendorCode: string;
  vendorOrderId: string;
  qrisString: string;
  source: string;
  detail: unknown;
  responseBody: string;
  /** The job this confirmation finishes, completed in the same statement when the attempt is confirmed. */
  settle?: SettleJob;
}

/** A fetched job to complete with its confirmation: pg-boss's completion for its queue (db/job-complete.ts). */
export interface SettleJob {
  completion: JobsCompletion;
  id: string;
  retryCount: number;
}

const confirmAttemptsRow = z.object({ id: z.string(), chosen: z.number(), jobs: z.array(z.string()) });

/**
 * Many attempts' confirmations in one statement (db/orders.ts gathers those finishing together):
 * for each, whether it was confirmed (false: it was not CREATING any more, or another
 * confirmation of the same order came first in the batch) and whether its job was completed with
 * it (`settle`: still held at the attempt the worker fetched; the jobs of every attempt of an
 * order confirmed here are, whichever confirmation the order took). The rows
 * are locked in the order of their order_counts counter (stripe, merchant), and the update walks
 * them in that order (the plan drives it from the locked rows), so the per-row count trigger
 * locks the counters in one order in every batch: two batches wait on each other rather than
 * deadlock.
 */
export async function confirmAttempts(db: Db, cs: readonly Confirmation[], channel: string): Promise<{ confirmed: boolean; settled: boolean }[]> {
  // One queue's jobs per batch: the statement embeds one completion.
  const completion = cs.find((c) => c.settle)?.settle?.completion;
  if (cs.some((c) => c.settle && c.settle.completion !== completion)) throw new Error('confirmations settling jobs of different queues cannot share a statement');
  const completed = completion ? completion('settled_jobs') : sql.fragment`${sql.identifier([JOBS_COMPLETED])} as (select null::uuid as id, null::int as retry_count where false)`;
  const rows = await db.any(sql.type(confirmAttemptsRow)`
    with input as materialized (
      select * from ${sql.unnest(
        cs.map((c) => [c.orderId, c.vendorCode, c.vendorOrderId, c.qrisString, c.source, JSON.stringify(c.detail ?? null), c.responseBody, c.settle?.id ?? null, c.settle?.retryCount ?? null]),
        ['uuid', 'text', 'text', 'text', 'text', 'text', 'text', 'uuid', 'int4'],
      )} with ordinality as t(c_id, c_vendor, c_vendor_order, c_qris, c_source, c_detail, c_body, c_job, c_retry, c_ord)
    ), chosen as materialized (
      -- One confirmation per order: two of one order in a batch (two attempts of its job) would
      -- otherwise each write an order.created event, and the order, its event and the key's
      -- answer could take their vendor from different ones. The first in the batch is the one.
      select distinct on (c_id) * from input order by c_id, c_ord
    ), locked as materialized (
      select o.id from orders o join chosen i on o.id = i.c_id
      where o.status = 'CREATING'
      order by order_counts_stripe(o.id), o.merchant_id, o.id
      for no key update of o
    ), confirmed as (
      update orders
      set status = 'PENDING', vendor_code = i.c_vendor, vendor_order_id = i.c_vendor_order,
          qris_string = i.c_qris, pending_vendor = null, updated_at = now()
      from locked l join chosen i on i.c_id = l.id
      where orders.id = l.id and orders.status = 'CREATING'
      returning orders.id
    ), event as (
      insert into order_events (order_id, status, event, source, detail)
      select c.id, 'PENDING', 'order.created', i.c_source, i.c_detail::jsonb from confirmed c join chosen i on i.c_id = c.id
    ), answer as (
      update idempotency_keys k set response_status = 201, response_body = i.c_body
      from confirmed c join chosen i on i.c_id = c.id
      where k.order_id = c.id and k.response_body is null
      returning k.order_id, k.response_body
    ), settled_jobs as (
      -- The jobs of the attempts confirmed here (every attempt of a confirmed order: its work is
      -- done), each with the output the worker would have given it: the vendor the order took.
      select i.c_job as job_id, i.c_retry as retry_count, jsonb_build_object('confirmed', ch.c_vendor) as output
      from confirmed c join input i on i.c_id = c.id join chosen ch on ch.c_id = c.id
      where i.c_job is not null
    ), ${completed}
    -- The notification carries the answer just stored (when it fits NOTIFY's 8,000 bytes), so
    -- the waiting request sends it without reading it back: the id, a newline, the answer.
    select c.id, (select ch.c_ord from chosen ch where ch.c_id = c.id)::int as chosen, pg_notify(${channel}, c.id::text || coalesce(
             (select chr(10) || a.response_body from answer a where a.order_id = c.id and octet_length(a.response_body) <= ${NOTIFIED_ANSWER_MAX_BYTES} limit 1), '')) as notified,
           -- The job attempts completed for this order: two confirmations of one order in a
           -- batch (two attempts of its job) each learn whether their own was.
           array(select j.id::text || ':' || j.retry_count from input i join ${sql.identifier([JOBS_COMPLETED])} j on j.id = i.c_job and j.retry_count = i.c_retry
                 where i.c_id = c.id) as jobs
    from confirmed c`);
  const byId = new Map(rows.map((r) => [r.id, { chosen: r.chosen, jobs: new Set(r.jobs) }]));
  return cs.map((c, i) => {
    const row = byId.get(c.orderId);
    return {
      // Only the confirmation the order took (ordinality counts from 1); another of the same order is told no, as in a later batch.
      confirmed: row?.chosen === i + 1,
      settled: c.settle !== undefined && row?.jobs.has(`${c.settle.id}:${c.settle.retryCount}`) === true,
    };
  });
}

/**
 * A vendor's late answer to the create of an order that was paid meanwhile: the vendor holding it
 * fills in the QR and its id where the payment left them empty. Status, events and the
 * idempotency answer stay as the payment made them; another vendor's answer changes nothing.
 */
export function completePaidAttempt(db: Db, c: { orderId: string; vendorCode: string; vendorOrderId: string; qrisString: string }) {
  return db.query(sql.unsafe`
    update orders
    set qris_string = coalesce(qris_string, ${c.qrisString}), vendor_order_id = coalesce(vendor_order_id, ${c.vendorOrderId}), updated_at = now()
    where id = ${c.orderId} and status in ('PAID', 'REFUNDED') and vendor_code = ${c.vendorCode}
      and (qris_string is null or vendor_order_id is null)`);
}

export function setOrderFailed(db: Db, id: string, failureCode: 'NO_VENDOR' | 'VENDOR_ERROR') {
  return db.one(sql.type(orderRow)`
    update orders set status = 'FAILED', failure_code = ${failureCode}, pending_vendor = null, updated_at = now()
    where id = ${id}
    returning ${columns}`);
}

/** `vendorCode`: the vendor holding an order that named none yet (paid while CREATING or FAILED). */
/**
 * Marks the order PAID, keeping the MDR its payment is posted with (paymentTerms in
 * db/ledger.ts) unless an earlier payment's is kept already: a second payment posts nothing, so
 * the fee on the order stays the one its ORDER_PAYMENT transfer charged (migration 105).
 */
export function setOrderPaid(db: Db, id: string, p: { paidAt: Date; rrn: string | null; vendorOrderId: string | null; vendorCode: string | null; late: boolean; mdr: number }) {
  return db.one(sql.type(orderRow)`
    update orders
    set status = 'PAID', paid_at = ${p.paidAt.toISOString()}, vendor_rrn = ${p.rrn}, mdr_amount = coalesce(mdr_amount, ${p.mdr}),
        vendor_code = coalesce(vendor_code, ${p.vendorCode}),
        vendor_order_id = coalesce(vendor_order_id, ${p.vendorOrderId}), is_late_payment = ${p.late},
        pending_vendor = null, updated_at = now()
    where id = ${id}
    returning ${columns}`);
}

const findOrderRefByVendorOrderIdRow = z.object({ ref_code: z.string() });

/** The ref_code of the order holding a vendor's own id for its QR (callbacks that name only that id). */
export function findOrderRefByVendorOrderId(db: Db, vendorCode: string, vendorOrderId: string) {
  return db.maybeOneFirst(sql.type(findOrderRefByVendorOrderIdRow)`
    select ref_code from orders where vendor_order_id = ${vendorOrderId} and vendor_code = ${vendorCode}
    order by created_at desc limit 1`);
}

/** Expires one PENDING order now (its vendor says the QR can no longer be paid); null if not PENDING. */
export function expireOrderNow(db: Db, id: string) {
  return db.maybeOne(sql.type(orderRow)`
    update orders set status = 'EXPIRED', updated_at = now() where id = ${id} and status = 'PENDING'
    returning ${columns}`);
}

/** Expires up to `limit` overdue PENDING orders; SKIP LOCKED lets several sweepers share work. */
export function expireDueOrders(db: Db, limit: number) {
  // The due ids are one array the update probes the primary key with (as db/job-claim.ts does
  // for pg-boss's jobs), so no estimate can make the update a join over every order. In the
  // flash-sale run this alone did not change the batch's time (143 ms for 500): that was the
  // per-row count trigger, which migration 106 replaced (docs/performance.md, "The burst as a
  // flash sale makes it").
  return db.any(sql.type(orderRow)`
    with due as (
      select id from orders
      where status = 'PENDING' and expires_at <= now()
      order by expires_at
      limit ${limit}
      for update skip locked
    )
    update orders set status = 'EXPIRED', updated_at = now()
    where id = any (array(select id from due))
    returning ${columns}`);
}

/** CREATING attempts nobody has touched for a while: their create job was lost or is stuck. */
/**
 * Claims create attempts left CREATING longer than olderThanSeconds: moving updated_at makes
 * each one stale again only after another such period, so a re-queue happens once per period
 * however often, and by however many processes, this runs (like the payout claimStale* statements).
 */
export function claimStaleCreating(db: Db, olderThanSeconds: number, limit: number) {
  return db.anyFirst(sql.type(idRow)`
    update orders set updated_at = now()
    where id in (
      select id from orders
      where status = 'CREATING' and updated_at < now() - make_interval(secs => ${olderThanSeconds})
      order by updated_at limit ${limit}
      for update skip locked)
    returning id`);
}

export const orderEventRow = z.object({
  status: z.string(),
  event: z.string(),
  source: z.string(),
  /** What the writer recorded with the event (jsonb), or null. */
  detail: z.unknown(),
  created_at: z.date(),
});
export type OrderEventRow = z.infer<typeof orderEventRow>;

export function insertOrderEvent(db: Db, e: { orderId: string; status: OrderStatus; event: string; source: string; detail?: unknown }) {
  return db.query(sql.unsafe`
    insert into order_events (order_id, status, event, source, detail)
    values (${e.orderId}, ${e.status}, ${e.event}, ${e.source}, ${e.detail === undefined ? null : sql.jsonb(e.detail as never)})`);
}

export function insertOrderEvents(db: Db, events: { orderId: string; status: OrderStatus; event: string; source: string }[]) {
  if (events.length === 0) return Promise.resolve();
  return db.query(sql.unsafe`
    insert into order_events (order_id, status, event, source)
    select * from ${sql.unnest(events.map((e) => [e.orderId, e.status, e.event, e.source]), ['uuid', 'text', 'text', 'text'])}`);
}

export function listOrderEvents(db: Db, orderId: string) {
  return db.any(sql.type(orderEventRow)`
    select status, event, source, detail, created_at from order_events where order_id = ${orderId} order by id`);
}

export const idempotencyRow = z.object({
  request_hash: z.instanceof(Buffer),
  order_id: z.string(),
  response_status: z.number().nullable(),
  response_body: z.string().nullable(),
});

export function findIdempotencyKey(db: Db, merchantId: string, key: string) {
  return db.maybeOne(sql.type(idempotencyRow)`
    select request_hash, order_id, response_status, response_body
    from idempotency_keys where merchant_id = ${merchantId} and key = ${key}`);
}

/** Points a key at a new attempt after its previous attempt failed (spec 4.2 rule 8 retries). */
export function repointIdempotencyKey(db: Db, merchantId: string, key: string, orderId: string) {
  return db.query(sql.unsafe`
    update idempotency_keys set order_id = ${orderId}, response_status = null, response_body = null
    where merchant_id = ${merchantId} and key = ${key}`);
}

/** Deletes up to `limit` order keys older than `olderThanHours`; orders are not touched: keys only point at them. */
export function deleteIdempotencyKeysOlderThan(db: Db, olderThanHours: number, limit: number) {
  return deleteKeysOlderThan(db, 'idempotency_keys', olderThanHours, limit);
}

export function storeIdempotentResponse(db: Db, where: { orderId: string } | { merchantId: string; key: string }, status: number, body: string) {
  const match =
    'orderId' in where
      ? sql.fragment`order_id = ${where.orderId}`
      : sql.fragment`merchant_id = ${where.merchantId} and key = ${where.key}`;
  return db.query(sql.unsafe`
    update idempotency_keys set response_status = ${status}, response_body = ${body}
    where ${match} and response_body is null`);
}

/** A refund moves a paid order between PAID and REFUNDED (fully refunded, or a refund failed). */
export function setRefundStatus(db: Db, id: string, status: 'PAID' | 'REFUNDED') {
  return db.one(sql.type(orderRow)`
    update orders set status = ${status}, updated_at = now() where id = ${id}
    returning ${columns}`);
}
