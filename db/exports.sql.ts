// One function per statement on exports and export_chunks, and the row queries each export type
// streams (one per type: its CSV columns are its select list, in order).
import { z } from 'zod';
import { sql, type Db } from './pool.ts';

export const exportType = z.enum(['orders', 'settlements', 'disbursements', 'balance_history']);
export type ExportType = z.infer<typeof exportType>;
export const exportStatus = z.enum(['QUEUED', 'PROCESSING', 'COMPLETED', 'FAILED']);

export const exportRow = z.object({
  id: z.string(),
  merchant_id: z.string(),
  type: exportType,
  status: exportStatus,
  date_from: z.string().nullable(),
  date_to: z.string().nullable(),
  attempt: z.number(),
  row_count: z.number().nullable(),
  byte_count: z.number().nullable(),
  error: z.string().nullable(),
  completed_at: z.date().nullable(),
  created_at: z.date(),
});
export type ExportRow = z.infer<typeof exportRow>;

const columns = sql.fragment`
  id, merchant_id, type, status, date_from, date_to, attempt, row_count, byte_count, error, completed_at, created_at`;

export interface NewExport {
  id: string;
  merchantId: string;
  type: ExportType;
  dateFrom: string | null;
  dateTo: string | null;
}

export function insertExport(db: Db, e: NewExport) {
  return db.one(sql.type(exportRow)`
    insert into exports (id, merchant_id, type, date_from, date_to)
    values (${e.id}, ${e.merchantId}, ${e.type}, ${e.dateFrom}::date, ${e.dateTo}::date)
    returning ${columns}`);
}

export function listMerchantExports(db: Db, merchantId: string, page: number, limit: number) {
  return Promise.all([
    db.any(sql.type(exportRow)`
      select ${columns} from exports where merchant_id = ${merchantId}
      order by created_at desc, id desc
      limit ${limit} offset ${(page - 1) * limit}`),
    db.oneFirst(sql.type(z.object({ n: z.number() }))`select count(*)::int as n from exports where merchant_id = ${merchantId}`),
  ]);
}

export function findMerchantExport(db: Db, merchantId: string, id: string) {
  return db.maybeOne(sql.type(exportRow)`select ${columns} from exports where id = ${id} and merchant_id = ${merchantId}`);
}

/**
 * Starts a build attempt: PROCESSING, attempt raised, committed on its own so the API shows it.
 * Null when the export is finished or gone (a stale or duplicate job). Waits while another
 * attempt's build transaction holds the row, and then sees what that build left.
 */
export function claimExport(db: Db, id: string) {
  return db.maybeOne(sql.type(exportRow)`
    update exports set status = 'PROCESSING', attempt = attempt + 1, error = null, started_at = now(), updated_at = now()
    where id = ${id} and status in ('QUEUED', 'PROCESSING')
    returning ${columns}`);
}

/**
 * Locks the export for the build transaction, if this attempt is still the current one. Later
 * attempts' claims queue behind the lock until the build commits or rolls back.
 */
export function lockExportAttempt(db: Db, id: string, attempt: number) {
  return db.maybeOneFirst(sql.type(z.object({ id: z.string() }))`
    select id from exports where id = ${id} and attempt = ${attempt} and status = 'PROCESSING'
    for update`);
}

export function insertExportChunk(db: Db, exportId: string, seq: number, data: Buffer) {
  return db.query(sql.unsafe`
    insert into export_chunks (export_id, seq, data) values (${exportId}, ${seq}, ${sql.binary(data)})`);
}

/** Runs at the end of the build transaction: clock_timestamp(), not the transaction's start. */
export function completeExport(db: Db, id: string, counts: { rows: number; bytes: number }) {
  return db.one(sql.type(exportRow)`
    update exports
    set status = 'COMPLETED', row_count = ${counts.rows}, byte_count = ${counts.bytes},
        completed_at = clock_timestamp(), updated_at = clock_timestamp()
    where id = ${id}
    returning ${columns}`);
}

/** Fails the export unless a later attempt has taken it over (or it is finished). */
export function failExport(db: Db, id: string, attempt: number, error: string) {
  return db.maybeOne(sql.type(exportRow)`
    update exports set status = 'FAILED', error = ${error}, completed_at = now(), updated_at = now()
    where id = ${id} and attempt = ${attempt} and status = 'PROCESSING'
    returning ${columns}`);
}

/** One stored chunk of a file, or null past its end. */
export function readExportChunk(db: Db, exportId: string, seq: number) {
  return db.maybeOneFirst(sql.type(z.object({ data: z.instanceof(Buffer) }))`
    select data from export_chunks where export_id = ${exportId} and seq = ${seq}`);
}

/**
 * Deletes up to `limit` chunks of exports created more than `hours` ago; returns how many.
 * Chunks go first, in bounded statements: one export can hold hundreds of megabytes.
 */
export function deleteExpiredChunks(db: Db, hours: number, limit: number) {
  return db.query(sql.unsafe`
    delete from export_chunks c
    using (
      select c.export_id, c.seq
      from exports e join export_chunks c on c.export_id = e.id
      where e.created_at < now() - make_interval(hours => ${hours})
      limit ${limit}
    ) old
    where c.export_id = old.export_id and c.seq = old.seq`).then((r) => r.rowCount);
}

/**
 * Deletes up to `limit` exports created more than `hours` ago (any chunk a build added since
 * goes with them); returns how many. A build in progress holds its row: skipped until done.
 */
export function deleteExpiredExports(db: Db, hours: number, limit: number) {
  return db.query(sql.unsafe`
    delete from exports
    where id in (
      select id from exports
      where created_at < now() - make_interval(hours => ${hours})
      order by created_at
      limit ${limit}
      for update skip locked
    )`).then((r) => r.rowCount);
}

/**
 * Fails exports still QUEUED or PROCESSING `hours` after they were asked for: their jobs are
 * gone (a worker died on the last attempt). A build in progress holds its row: skipped.
 */
export function failAbandonedExportRows(db: Db, hours: number) {
  return db.any(sql.type(exportRow)`
    update exports set status = 'FAILED', error = 'The export did not finish; please request it again',
                       completed_at = now(), updated_at = now()
    where id in (
      select id from exports
      where status in ('QUEUED', 'PROCESSING') and created_at < now() - make_interval(hours => ${hours})
      for update skip locked
    )
    returning ${columns}`);
}

// ---- The rows each export type streams ----

/** ISO 8601 UTC with milliseconds, as the V1 API writes timestamps (Date#toISOString). */
const iso = (column: string) =>
  sql.fragment`to_char(${sql.identifier(column.split('.'))} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

export interface ExportFilter {
  merchantId: string;
  /** WIB calendar days, inclusive; null is open-ended. */
  dateFrom: string | null;
  dateTo: string | null;
}

/** `column` within the filter's WIB days (a timestamptz column). */
function inWibDays(column: string, f: ExportFilter) {
  const c = sql.identifier(column.split('.'));
  return sql.fragment`
    ${f.dateFrom === null ? sql.fragment`true` : sql.fragment`${c} >= (${f.dateFrom}::date)::timestamp at time zone 'Asia/Jakarta'`}
    and ${f.dateTo === null ? sql.fragment`true` : sql.fragment`${c} < (${f.dateTo}::date + 1)::timestamp at time zone 'Asia/Jakarta'`}`;
}

/** `column` (a date) within the filter's days. */
function inDays(column: string, f: ExportFilter) {
  const c = sql.identifier(column.split('.'));
  return sql.fragment`
    ${f.dateFrom === null ? sql.fragment`true` : sql.fragment`${c} >= ${f.dateFrom}::date`}
    and ${f.dateTo === null ? sql.fragment`true` : sql.fragment`${c} <= ${f.dateTo}::date`}`;
}

type Column = readonly [name: string, value: ReturnType<typeof sql.fragment>];
const col = (name: string, value = sql.fragment`${sql.identifier(['x', name])}`): Column => [name, value];

// Each type's CSV columns, in order, with the expression of each (the select list is built from
// them, so header and cells cannot drift apart). Amounts are whole Rupiah (bigint); timestamps
// are formatted by Postgres, so each cell reaches the worker as one value, not a Date object.
const sources: Record<ExportType, { columns: readonly Column[]; from: (f: ExportFilter) => ReturnType<typeof sql.fragment> }> = {
  // Orders the merchant can see (CREATING and FAILED attempts are internal), by creation time.
  // The last three columns came later (appended, so files read by position keep working):
  // refunded_amount as the order shows it (refunds not FAILED), mdr_amount as the payment's
  // ledger transfer charged it (FEE_REVENUE leg, whatever mdr_bps is now), net_amount = amount
  // − mdr_amount − refunded_amount; the last two are empty for an order never paid.
  orders: {
    columns: [
      col('id'), col('ref_code'), col('merchant_order_id'), col('api'), col('payment_method'), col('amount'), col('status'),
      col('customer_name'), col('customer_email'), col('customer_phone'), col('vendor_rrn'), col('is_settled'),
      col('created_at', iso('x.created_at')), col('paid_at', iso('x.paid_at')), col('expires_at', iso('x.expires_at')),
      col('refunded_amount', sql.fragment`refunded.total`),
      col('mdr_amount', sql.fragment`case when pay.id is null then null else coalesce(fee.amount, 0) end`),
      col('net_amount', sql.fragment`case when pay.id is null then null else x.amount - coalesce(fee.amount, 0) - refunded.total end`),
    ],
    from: (f) => sql.fragment`
      from orders x
      cross join lateral (
        select coalesce(sum(r.amount), 0)::bigint as total from refunds r where r.order_id = x.id and r.status <> 'FAILED'
      ) refunded
      left join ledger_transfers pay on pay.kind = 'ORDER_PAYMENT' and pay.reference_id = x.id
      left join ledger_postings fee on fee.transfer_id = pay.id
        and fee.account_id = (select a.id from ledger_accounts a where a.merchant_id = ${f.merchantId} and a.kind = 'FEE_REVENUE')
      where x.merchant_id = ${f.merchantId} and x.status not in ('CREATING', 'FAILED') and ${inWibDays('x.created_at', f)}
      order by x.created_at, x.id`,
  },
  // Settlements by their settlement day (WIB).
  settlements: {
    columns: [
      col('id'), col('ref_code'), col('settlement_date', sql.fragment`x.settlement_date::text`),
      col('period_start', iso('x.period_start')), col('period_end', iso('x.period_end')), col('order_count'),
      col('gross_amount'), col('mdr_total'), col('refund_total'), col('disbursement_fee'), col('platform_fee'),
      col('aggregator_fee'), col('net_payout'), col('bank_id'), col('bank_short_code', sql.fragment`b.short_code`),
      col('account_number'), col('account_name'), col('status'), col('completed_at', iso('x.completed_at')),
      col('created_at', iso('x.created_at')), col('updated_at', iso('x.updated_at')),
    ],
    from: (f) => sql.fragment`
      from settlements x left join banks b on b.id = x.bank_id
      where x.merchant_id = ${f.merchantId} and ${inDays('x.settlement_date', f)}
      order by x.settlement_date, x.created_at, x.id`,
  },
  // Disbursements (V1 and legacy) by creation time: the V1 object's fields, the bank's code and
  // why a failed one failed.
  disbursements: {
    columns: [
      col('id'), col('ref_code'), col('idempotency_key'), col('source'), col('channel'), col('bank_id'),
      col('bank_short_code'), col('account_number'), col('account_name'), col('ewallet_provider'), col('ewallet_phone'),
      col('request_amount'), col('fee'), col('final_amount', sql.fragment`x.request_amount`), col('total_debit'),
      col('status'), col('failure_reason'), col('vendor_disbursement_id'), col('requested_at', iso('x.requested_at')),
      col('completed_at', iso('x.completed_at')), col('created_at', iso('x.created_at')),
    ],
    from: (f) => sql.fragment`
      from disbursements x
      where x.merchant_id = ${f.merchantId} and ${inWibDays('x.created_at', f)}
      order by x.created_at, x.id`,
  },
  // The wallet's movements (GET /v1/balance-history's fields), oldest first in posting order,
  // so each row's balance_before is the previous row's balance_after.
  balance_history: {
    columns: [
      col('id'), col('type', sql.fragment`t.kind`), col('amount'), col('balance_before'), col('balance_after'),
      col('reference_type', sql.fragment`t.reference_type`), col('reference_id', sql.fragment`t.reference_id`),
      col('ref_code', sql.fragment`t.ref_code`), col('description', sql.fragment`t.description`),
      col('created_at', iso('x.created_at')),
    ],
    from: (f) => sql.fragment`
      from ledger_postings x join ledger_transfers t on t.id = x.transfer_id
      where x.account_id = (select a.id from ledger_accounts a where a.merchant_id = ${f.merchantId} and a.kind = 'WALLET')
        and ${inWibDays('x.created_at', f)}
      order by x.seq`,
  },
};

/** The CSV header of an export type. */
export function exportColumns(type: ExportType): string[] {
  return sources[type].columns.map(([name]) => name);
}

/** Opens the export's row cursor in the build transaction (it closes when the transaction ends). */
export function declareExportCursor(db: Db, type: ExportType, filter: ExportFilter) {
  const { columns, from } = sources[type];
  const select = sql.join(columns.map(([name, value]) => sql.fragment`${value} as ${sql.identifier([name])}`), sql.fragment`, `);
  return db.query(sql.unsafe`declare export_rows no scroll cursor for select ${select} ${from(filter)}`);
}

/**
 * The cursor's next rows (keys are the CSV columns). 250 per FETCH (a count cannot be a bind
 * parameter): a batch must be garbage before the young generation's next scavenges, or every
 * row is promoted and the worker's heap grows with the export (workers/export-build.ts).
 */
export function fetchExportRows(db: Db) {
  return db.any(sql.unsafe`fetch 250 from export_rows`);
}
