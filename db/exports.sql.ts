// One function per statement on exports and export_chunks, and the COPY that writes each export
// type's CSV (one per type: its CSV columns are its select list, in order).
import { z } from 'zod';
import { sql, type Db } from './pool.ts';
import { countRow, idRow } from './row-shapes.ts';

export const exportType = z.enum(['orders', 'settlements', 'disbursements', 'balance_history']);
export type ExportType = z.infer<typeof exportType>;
/** What the exports table holds: merchants' exports, and operators' (a reconciliation run's differences). */
export const storedExportType = z.enum([...exportType.options, 'recon_differences']);
export type StoredExportType = z.infer<typeof storedExportType>;
export const exportStatus = z.enum(['QUEUED', 'PROCESSING', 'COMPLETED', 'FAILED']);

export const exportRow = z.object({
  id: z.string(),
  /** Null for an operator's export (recon_differences), which belongs to no merchant. */
  merchant_id: z.string().nullable(),
  type: storedExportType,
  recon_run_id: z.string().nullable(),
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
  id, merchant_id, type, recon_run_id, status, date_from, date_to, attempt, row_count, byte_count, error, completed_at, created_at`;

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

/** An operator's export of a reconciliation run's differences (db/recon.ts). */
export function insertReconExport(db: Db, e: { id: string; runId: string }) {
  return db.one(sql.type(exportRow)`
    insert into exports (id, merchant_id, type, recon_run_id) values (${e.id}, null, 'recon_differences', ${e.runId})
    returning ${columns}`);
}

export function findExport(db: Db, id: string) {
  return db.maybeOne(sql.type(exportRow)`select ${columns} from exports where id = ${id}`);
}

export function listMerchantExports(db: Db, merchantId: string, page: number, limit: number) {
  return Promise.all([
    db.any(sql.type(exportRow)`
      select ${columns} from exports where merchant_id = ${merchantId}
      order by created_at desc, id desc
      limit ${limit} offset ${(page - 1) * limit}`),
    db.oneFirst(sql.type(countRow)`select count(*)::int as n from exports where merchant_id = ${merchantId}`),
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
  return db.maybeOneFirst(sql.type(idRow)`
    select id from exports where id = ${id} and attempt = ${attempt} and status = 'PROCESSING'
    for update`);
}

/**
 * The build transaction sits idle while the COPY it stores (on another connection) computes,
 * longest before the first row when Postgres sorts or hashes first: the pool's 60 s
 * idle-in-transaction limit guards request paths, not this wait.
 */
export function allowExportReadWaits(tx: Db, ms: number) {
  return tx.query(sql.unsafe`select set_config('idle_in_transaction_session_timeout', ${`${ms}ms`}, true)`);
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

const readExportChunkRow = z.object({ data: z.instanceof(Buffer) });

/** One stored chunk of a file, or null past its end. */
export function readExportChunk(db: Db, exportId: string, seq: number) {
  return db.maybeOneFirst(sql.type(readExportChunkRow)`
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

// ---- The rows each export type holds, and the COPY that writes them as CSV ----

/** ISO 8601 UTC with milliseconds, as the V1 API writes timestamps (Date#toISOString). */
const iso = (column: string) =>
  sql.fragment`to_char(${sql.identifier(column.split('.'))} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

export interface ExportFilter {
  /** Null for an operator's export. */
  merchantId: string | null;
  /** A recon_differences export: the run whose vendor and day it lists. */
  reconRunId?: string | null;
  /** WIB calendar days, inclusive; null is open-ended. */
  dateFrom: string | null;
  dateTo: string | null;
}

type Fragment = ReturnType<typeof sql.fragment>;

/**
 * The filter's values in SQL: bind parameters in a query, escaped literals in the COPY (a COPY
 * takes no bind parameters; sql.literalValue escapes whatever the values hold).
 */
interface FilterSql {
  merchantId: Fragment;
  reconRunId: Fragment;
  dateFrom: Fragment | null;
  dateTo: Fragment | null;
}

const boundFilter = (f: ExportFilter): FilterSql => ({
  merchantId: sql.fragment`${f.merchantId}::uuid`,
  reconRunId: sql.fragment`${f.reconRunId ?? null}::uuid`,
  dateFrom: f.dateFrom === null ? null : sql.fragment`${f.dateFrom}::date`,
  dateTo: f.dateTo === null ? null : sql.fragment`${f.dateTo}::date`,
});

const literalFilter = (f: ExportFilter): FilterSql => ({
  merchantId: f.merchantId === null ? sql.fragment`null::uuid` : sql.fragment`${sql.literalValue(f.merchantId)}::uuid`,
  reconRunId: f.reconRunId == null ? sql.fragment`null::uuid` : sql.fragment`${sql.literalValue(f.reconRunId)}::uuid`,
  dateFrom: f.dateFrom === null ? null : sql.fragment`${sql.literalValue(f.dateFrom)}::date`,
  dateTo: f.dateTo === null ? null : sql.fragment`${sql.literalValue(f.dateTo)}::date`,
});

/** `column` within the filter's WIB days (a timestamptz column). */
function inWibDays(column: string, f: FilterSql) {
  const c = sql.identifier(column.split('.'));
  return sql.fragment`
    ${f.dateFrom === null ? sql.fragment`true` : sql.fragment`${c} >= (${f.dateFrom})::timestamp at time zone 'Asia/Jakarta'`}
    and ${f.dateTo === null ? sql.fragment`true` : sql.fragment`${c} < (${f.dateTo} + 1)::timestamp at time zone 'Asia/Jakarta'`}`;
}

/** `column` (a date) within the filter's days. */
function inDays(column: string, f: FilterSql) {
  const c = sql.identifier(column.split('.'));
  return sql.fragment`
    ${f.dateFrom === null ? sql.fragment`true` : sql.fragment`${c} >= ${f.dateFrom}`}
    and ${f.dateTo === null ? sql.fragment`true` : sql.fragment`${c} <= ${f.dateTo}`}`;
}

/**
 * How a column's values become CSV cells. Postgres writes the file (COPY … WITH (FORMAT csv)),
 * cell for cell as csv-stringify did before (escape_formulas, booleans as true/false, NULL and
 * '' both an empty cell):
 * - text: a value a spreadsheet would run as a formula gets a leading '; '' becomes NULL, which
 *   COPY writes as an empty unquoted cell (it would quote '' as "").
 * - number: amounts (whole Rupiah) and counts as Postgres prints them; a negative one is a
 *   number, not a formula, and is never escaped.
 * - boolean: true/false (COPY would write t/f).
 * - formatted: uuids, dates and ISO timestamps, never '' and never starting with a formula
 *   character: written as they are.
 */
type Kind = 'text' | 'number' | 'boolean' | 'formatted';

/**
 * First characters that make a spreadsheet evaluate a cell: csv-stringify's escape_formulas list
 * (=, +, -, @, tab, carriage return, and the full-width ＝ ＋ － ＠ that Apple Numbers normalises).
 */
const FORMULA_STARTS = ['=', '+', '-', '@', '\t', '\r', '\uFF1D', '\uFF0B', '\uFF0D', '\uFF20'];
const formulaStarts = sql.join(FORMULA_STARTS.map((c) => sql.literalValue(c)), sql.fragment`, `);

function cell(kind: Kind, value: Fragment): Fragment {
  switch (kind) {
    case 'text': {
      const v = sql.fragment`(${value})::text`;
      return sql.fragment`case when left(${v}, 1) in (${formulaStarts}) then '''' || ${v} else nullif(${v}, '') end`;
    }
    case 'boolean':
      return sql.fragment`case ${value} when true then 'true' when false then 'false' end`;
    case 'number':
    case 'formatted':
      return value;
  }
}

/**
 * The MDR an exported order's payment charged: kept on the order since migration 105, so a row
 * costs no probe of the ledger. Only a paid order that keeps none (paid before that migration,
 * not yet reached by `ops ledger:fill-order-fees`) looks up its ORDER_PAYMENT transfer and fee
 * leg, as every row once did: the subquery under CASE runs for those rows alone. Null: never
 * paid.
 */
function orderFee(f: FilterSql) {
  return sql.fragment`coalesce(x.mdr_amount, case when x.paid_at is not null then (
    select coalesce(p.amount, 0) from ledger_transfers t
    left join ledger_postings p on p.transfer_id = t.id
      and p.account_id = (select a.id from ledger_accounts a where a.merchant_id = ${f.merchantId} and a.kind = 'FEE_REVENUE')
    where t.kind = 'ORDER_PAYMENT' and t.reference_id = x.id limit 1) end)`;
}

/**
 * What each exported order's refunds took (refunds not FAILED). For a period, the merchant's
 * refunds created since the period began, summed once and joined: a refund is made after its
 * order, so those are all the period's orders' refunds, where a lookup per row probed the
 * refunds index once for each of a year's million orders. The whole history looks up per row.
 */
function refundedOf(f: FilterSql) {
  const perRow = sql.fragment`
      cross join lateral (
        select coalesce(sum(r.amount), 0)::bigint as total from refunds r where r.order_id = x.id and r.status <> 'FAILED'
      ) refunded`;
  if (f.dateFrom === null) return perRow;
  return sql.fragment`
      left join (
        select r.order_id, sum(r.amount)::bigint as sum from refunds r
        where r.merchant_id = ${f.merchantId} and r.status <> 'FAILED' and ${inWibDays('r.created_at', { ...f, dateTo: null })}
        group by r.order_id
      ) refund_sums on refund_sums.order_id = x.id
      cross join lateral (select coalesce(refund_sums.sum, 0)::bigint as total) refunded`;
}

type Column = readonly [name: string, kind: Kind, value: Fragment];
const col = (name: string, kind: Kind, value = sql.fragment`${sql.identifier(['x', name])}`): Column => [name, kind, value];
/** A timestamptz column of the same name, as ISO 8601 UTC. */
const time = (name: string): Column => [name, 'formatted', iso(`x.${name}`)];

// Each type's CSV columns, in order, with the kind and expression of each (the select list and
// with it the header are built from them, so header and cells cannot drift apart). Amounts are
// whole Rupiah (bigint); timestamps are formatted by Postgres.
const sources: Record<StoredExportType, { columns: readonly Column[]; from: (f: FilterSql) => Fragment }> = {
  // Orders the merchant can see (CREATING and FAILED attempts are internal), by creation time.
  // The last three columns came later (appended, so files read by position keep working):
  // refunded_amount as the order shows it (refunds not FAILED), mdr_amount as the payment's
  // ledger transfer charged it (FEE_REVENUE leg, whatever mdr_bps is now), net_amount = amount
  // − mdr_amount − refunded_amount; the last two are empty for an order never paid.
  orders: {
    columns: [
      col('id', 'formatted'), col('ref_code', 'text'), col('merchant_order_id', 'text'), col('api', 'text'),
      col('payment_method', 'text'), col('amount', 'number'), col('status', 'text'), col('customer_name', 'text'),
      col('customer_email', 'text'), col('customer_phone', 'text'), col('vendor_rrn', 'text'), col('is_settled', 'boolean'),
      time('created_at'), time('paid_at'), time('expires_at'),
      col('refunded_amount', 'number', sql.fragment`refunded.total`),
      col('mdr_amount', 'number', sql.fragment`fee.mdr`),
      col('net_amount', 'number', sql.fragment`x.amount - fee.mdr - refunded.total`),
    ],
    from: (f) => sql.fragment`
      from orders x
      ${refundedOf(f)}
      cross join lateral (select ${orderFee(f)} as mdr) fee
      where x.merchant_id = ${f.merchantId} and x.status not in ('CREATING', 'FAILED') and ${inWibDays('x.created_at', f)}
      order by x.created_at, x.id`,
  },
  // Settlements by their settlement day (WIB).
  settlements: {
    columns: [
      col('id', 'formatted'), col('ref_code', 'text'), col('settlement_date', 'formatted', sql.fragment`x.settlement_date::text`),
      time('period_start'), time('period_end'), col('order_count', 'number'), col('gross_amount', 'number'),
      col('mdr_total', 'number'), col('refund_total', 'number'), col('disbursement_fee', 'number'), col('platform_fee', 'number'),
      col('aggregator_fee', 'number'), col('net_payout', 'number'), col('bank_id', 'formatted'),
      col('bank_short_code', 'text', sql.fragment`b.short_code`), col('account_number', 'text'), col('account_name', 'text'),
      col('status', 'text'), time('completed_at'), time('created_at'), time('updated_at'),
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
      col('id', 'formatted'), col('ref_code', 'text'), col('idempotency_key', 'text'), col('source', 'text'), col('channel', 'text'),
      col('bank_id', 'formatted'), col('bank_short_code', 'text'), col('account_number', 'text'), col('account_name', 'text'),
      col('ewallet_provider', 'text'), col('ewallet_phone', 'text'), col('request_amount', 'number'), col('fee', 'number'),
      col('final_amount', 'number', sql.fragment`x.request_amount`), col('total_debit', 'number'), col('status', 'text'),
      col('failure_reason', 'text'), col('vendor_disbursement_id', 'text'), time('requested_at'), time('completed_at'),
      time('created_at'),
    ],
    from: (f) => sql.fragment`
      from disbursements x
      where x.merchant_id = ${f.merchantId} and ${inWibDays('x.created_at', f)}
      order by x.created_at, x.id`,
  },
  // The wallet's movements (GET /v1/balance-history's fields), oldest first in posting order,
  // so each row's balance_before is the previous row's balance_after. Debits are negative.
  balance_history: {
    columns: [
      col('id', 'formatted'), col('type', 'text', sql.fragment`t.kind`), col('amount', 'number'), col('balance_before', 'number'),
      col('balance_after', 'number'), col('reference_type', 'text', sql.fragment`t.reference_type`),
      col('reference_id', 'formatted', sql.fragment`t.reference_id`), col('ref_code', 'text', sql.fragment`t.ref_code`),
      col('description', 'text', sql.fragment`t.description`), time('created_at'),
    ],
    from: (f) => sql.fragment`
      from ledger_postings x join ledger_transfers t on t.id = x.transfer_id
      where x.account_id = (select a.id from ledger_accounts a where a.merchant_id = ${f.merchantId} and a.kind = 'WALLET')
        and ${inWibDays('x.created_at', f)}
      order by x.seq`,
  },
  // An operator's export: the differences of the run's vendor and day as they stand (a rerun
  // takes over the day's differences), repaired and resolved ones included, with the words a
  // finance team reads. Amounts whole Rupiah.
  recon_differences: {
    columns: [
      col('id', 'formatted'), col('vendor_code', 'text'), col('day', 'formatted', sql.fragment`x.day::text`), col('kind', 'text'),
      col('kind_label', 'text', sql.fragment`case x.kind
        when 'PAID_AT_VENDOR_ONLY' then 'paid at the vendor but not in Kasir' when 'PAID_IN_KASIR_ONLY' then 'paid in Kasir but unknown to the vendor'
        when 'AMOUNT_DIFFERS' then 'amount differs' when 'STATUS_DIFFERS' then 'final status differs'
        when 'PAID_TWICE' then 'paid out twice' else 'a vendor line with no Kasir record' end`),
      col('subject', 'text'), col('reference', 'text'), col('vendor_reference', 'text'), col('merchant_id', 'formatted'),
      col('kasir_amount', 'number'), col('vendor_amount', 'number'), col('kasir_status', 'text'), col('vendor_status', 'text'),
      col('detail', 'text'), col('status', 'text'), col('repair', 'text'), col('resolution_note', 'text'),
      col('run_id', 'formatted'), col('repaired_run_id', 'formatted'), time('created_at'), time('resolved_at'),
    ],
    from: (f) => sql.fragment`
      from recon_differences x join recon_runs r on r.vendor_code = x.vendor_code and r.day = x.day
      where r.id = ${f.reconRunId}
      order by x.kind, x.subject, x.reference nulls last, x.id`,
  },
};

/** The CSV header of an export type. */
export function exportColumns(type: StoredExportType): string[] {
  return sources[type].columns.map(([name]) => name);
}

/**
 * The statement that writes an export's CSV, header first, with at most `limit` rows: a
 * `COPY (select …) TO STDOUT`, run on a connection of its own (db/copy-out.ts). One statement
 * reads one snapshot. Its text carries no bind parameters (COPY takes none): the filter's values
 * are escaped literals.
 */
export function exportCsvCopy(type: StoredExportType, filter: ExportFilter, limit: number): string {
  if (!Number.isSafeInteger(limit) || limit < 0) throw new RangeError(`export row limit ${limit} is not a row count`);
  const { columns, from } = sources[type];
  const select = sql.join(columns.map(([name, kind, value]) => sql.fragment`${cell(kind, value)} as ${sql.identifier([name])}`), sql.fragment`, `);
  const copy = sql.unsafe`
    copy (select ${select} ${from(literalFilter(filter))} limit ${sql.literalValue(String(limit))}::bigint)
    to stdout with (format csv, header)`;
  if (copy.values.length > 0) throw new Error('an export COPY cannot carry bind parameters');
  return copy.sql;
}

/**
 * The export's rows as values (keys are the CSV columns; no cell formatting): what the file's
 * cells stand for. The build does not read them this way; the tests hold the file against them
 * (test/reports/reports-exports.test.ts).
 */
export function selectExportRows(db: Db, type: StoredExportType, filter: ExportFilter) {
  const { columns, from } = sources[type];
  const select = sql.join(columns.map(([name, , value]) => sql.fragment`${value} as ${sql.identifier([name])}`), sql.fragment`, `);
  return db.any(sql.unsafe`select ${select} ${from(boundFilter(filter))}`);
}
