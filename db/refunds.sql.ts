// One function per statement on refunds.
import { z } from 'zod';
import { sql, type Db } from './pool.ts';
import { countRow, idRow, totalRow } from './row-shapes.ts';

export const refundStatus = z.enum(['PENDING', 'SUCCEEDED', 'FAILED']);
export type RefundStatus = z.infer<typeof refundStatus>;

export const refundRow = z.object({
  id: z.string(),
  merchant_id: z.string(),
  order_id: z.string(),
  ref_code: z.string(),
  amount: z.number(),
  reason: z.string().nullable(),
  status: refundStatus,
  vendor_code: z.string().nullable(),
  vendor_refund_id: z.string().nullable(),
  failure_reason: z.string().nullable(),
  /** When the vendor was first asked: from then on it is read before it may be asked again. */
  sent_at: z.date().nullable(),
  /** Set when no read at the vendor can settle the refund: an operator must (ops refunds:settle). */
  unresolved_at: z.date().nullable(),
  unresolved_reason: z.string().nullable(),
  completed_at: z.date().nullable(),
  created_at: z.date(),
  updated_at: z.date(),
});
export type RefundRow = z.infer<typeof refundRow>;

const columns = sql.fragment`
  id, merchant_id, order_id, ref_code, amount, reason, status, vendor_code, vendor_refund_id, failure_reason,
  sent_at, unresolved_at, unresolved_reason, completed_at, created_at, updated_at`;

/** A refund with its order's ref_code, as the merchant's lists and reads show it. */
export const merchantRefundRow = refundRow.extend({ order_ref_code: z.string() });
export type MerchantRefundRow = z.infer<typeof merchantRefundRow>;

const merchantColumns = sql.fragment`
  r.id, r.merchant_id, r.order_id, r.ref_code, r.amount, r.reason, r.status, r.vendor_code, r.vendor_refund_id,
  r.failure_reason, r.sent_at, r.unresolved_at, r.unresolved_reason, r.completed_at, r.created_at, r.updated_at,
  o.ref_code as order_ref_code`;

export interface RefundFilter {
  orderId?: string;
  status?: RefundStatus;
  /** WIB calendar days of created_at, inclusive (YYYY-MM-DD). */
  dateFrom?: string;
  dateTo?: string;
}

/** A merchant's refunds, newest first (refunds_merchant_created_idx), and how many match. */
export function listMerchantRefunds(db: Db, merchantId: string, filter: RefundFilter, page: number, limit: number) {
  const where = sql.fragment`r.merchant_id = ${merchantId}
    ${filter.orderId === undefined ? sql.fragment`` : sql.fragment`and r.order_id = ${filter.orderId}`}
    ${filter.status === undefined ? sql.fragment`` : sql.fragment`and r.status = ${filter.status}`}
    ${filter.dateFrom === undefined ? sql.fragment`` : sql.fragment`and r.created_at >= (${filter.dateFrom}::date)::timestamp at time zone 'Asia/Jakarta'`}
    ${filter.dateTo === undefined ? sql.fragment`` : sql.fragment`and r.created_at < (${filter.dateTo}::date + 1)::timestamp at time zone 'Asia/Jakarta'`}`;
  return Promise.all([
    db.any(sql.type(merchantRefundRow)`
      select ${merchantColumns} from refunds r join orders o on o.id = r.order_id
      where ${where}
      order by r.created_at desc, r.id desc
      limit ${limit} offset ${(page - 1) * limit}`),
    db.oneFirst(sql.type(countRow)`select count(*)::int as n from refunds r where ${where}`),
  ]);
}

/** One of the merchant's refunds by id or ref_code; another merchant's is not found. */
export function findMerchantRefund(db: Db, merchantId: string, key: { id: string } | { refCode: string }) {
  const match = 'id' in key ? sql.fragment`r.id = ${key.id}` : sql.fragment`r.ref_code = ${key.refCode}`;
  return db.maybeOne(sql.type(merchantRefundRow)`
    select ${merchantColumns} from refunds r join orders o on o.id = r.order_id
    where ${match} and r.merchant_id = ${merchantId}`);
}

/** What is already refunded or being refunded on an order (failed refunds give it back). */
export function refundedAmount(db: Db, orderId: string) {
  return db.oneFirst(sql.type(totalRow)`
    select coalesce(sum(amount), 0)::bigint as total from refunds where order_id = ${orderId} and status <> 'FAILED'`);
}

export function succeededAmount(db: Db, orderId: string) {
  return db.oneFirst(sql.type(totalRow)`
    select coalesce(sum(amount), 0)::bigint as total from refunds where order_id = ${orderId} and status = 'SUCCEEDED'`);
}

export function insertRefund(
  db: Db,
  r: { id: string; merchantId: string; orderId: string; refCode: string; amount: number; reason: string | null; vendorCode: string | null },
) {
  return db.one(sql.type(refundRow)`
    insert into refunds (id, merchant_id, order_id, ref_code, amount, reason, vendor_code)
    values (${r.id}, ${r.merchantId}, ${r.orderId}, ${r.refCode}, ${r.amount}, ${r.reason}, ${r.vendorCode})
    returning ${columns}`);
}

export function findRefund(db: Db, id: string) {
  return db.maybeOne(sql.type(refundRow)`select ${columns} from refunds where id = ${id}`);
}

export function findRefundByRef(db: Db, refCode: string) {
  return db.maybeOne(sql.type(refundRow)`select ${columns} from refunds where ref_code = ${refCode}`);
}

export function lockRefund(db: Db, id: string) {
  return db.maybeOne(sql.type(refundRow)`select ${columns} from refunds where id = ${id} for update`);
}

export function finishRefund(db: Db, id: string, f: { status: 'SUCCEEDED' | 'FAILED'; vendorRefundId: string | null; failureReason: string | null }) {
  return db.one(sql.type(refundRow)`
    update refunds
    set status = ${f.status}, vendor_refund_id = coalesce(${f.vendorRefundId}, vendor_refund_id),
        failure_reason = ${f.failureReason}, completed_at = now(), updated_at = now()
    where id = ${id}
    returning ${columns}`);
}

/** A refund by the id its vendor gave it (callbacks that do not carry Kasir's reference). */
export function findRefundByVendorId(db: Db, vendorCode: string, vendorRefundId: string) {
  return db.maybeOne(sql.type(refundRow)`
    select ${columns} from refunds where vendor_code = ${vendorCode} and vendor_refund_id = ${vendorRefundId}`);
}

/**
 * Records, committed before the call, that the vendor is about to be asked: whatever the answer,
 * a later attempt reads the vendor first (gateways/gateway.ts, the rule on unclear answers).
 */
/**
 * Marks the refund sent to `vendorCode` (the vendor holding its order); false when that vendor
 * was removed since the worker read it: a removed vendor is handed nothing. A disabled vendor
 * still takes the refunds of payments it holds (disabling stops new business, not old money).
 */
export async function markRefundSent(db: Db, id: string, vendorCode: string): Promise<boolean> {
  const marked = await db.query(sql.unsafe`
    update refunds set sent_at = coalesce(sent_at, now()), updated_at = now()
    where id = ${id} and exists (select 1 from vendors where code = ${vendorCode} and removed_at is null)`);
  return marked.rowCount === 1;
}

/** No read at the vendor can settle this refund: it waits for an operator. */
export function markRefundUnresolved(db: Db, id: string, reason: string) {
  return db.query(sql.unsafe`
    update refunds set unresolved_at = now(), unresolved_reason = ${reason.slice(0, 500)}, updated_at = now()
    where id = ${id} and status = 'PENDING'`);
}

/** An operator proved the vendor has no such refund: it may be sent again (ops refunds:resend). */
export function clearRefundSend(db: Db, id: string) {
  return db.maybeOne(sql.type(refundRow)`
    update refunds set sent_at = null, unresolved_at = null, unresolved_reason = null, updated_at = now()
    where id = ${id} and status = 'PENDING' and unresolved_at is not null
    returning ${columns}`);
}

/** The vendor answered "still pending": remember its id and that the refund is alive. */
export function noteRefundPending(db: Db, id: string, vendorRefundId: string | null) {
  return db.query(sql.unsafe`
    update refunds set vendor_refund_id = coalesce(${vendorRefundId}, vendor_refund_id), updated_at = now() where id = ${id}`);
}

/** PENDING refunds nobody has worked on for a while; touched so each is picked once per period. */
export function claimStaleRefunds(db: Db, olderThanSeconds: number, limit: number) {
  return db.anyFirst(sql.type(idRow)`
    with stale as (
      select id from refunds
      where status = 'PENDING' and unresolved_at is null and updated_at < now() - make_interval(secs => ${olderThanSeconds})
      order by updated_at limit ${limit}
      for update skip locked
    )
    update refunds r set updated_at = now() from stale where r.id = stale.id
    returning r.id`);
}
