// One function per statement on the disbursement aggregate (disbursements, disbursement_events).
import { z } from 'zod';
import { sql, type Db } from './pool.ts';
import { countRow, totalRow } from './row-shapes.ts';

export const disbursementStatus = z.enum(['PENDING', 'IN_REVIEW', 'ON_PROCESS', 'SUCCESS', 'FAILED', 'REJECTED']);
export type DisbursementStatus = z.infer<typeof disbursementStatus>;
export const FINAL_STATUSES: ReadonlySet<DisbursementStatus> = new Set(['SUCCESS', 'FAILED', 'REJECTED']);

export const disbursementRow = z.object({
  id: z.string(),
  merchant_id: z.string(),
  ref_code: z.string(),
  idempotency_key: z.string(),
  api: z.enum(['V1', 'LEGACY']),
  source: z.string(),
  channel: z.enum(['BANK', 'EWALLET']),
  bank_id: z.string().nullable(),
  bank_short_code: z.string().nullable(),
  bank_name: z.string().nullable(),
  account_number: z.string().nullable(),
  account_name: z.string().nullable(),
  ewallet_provider: z.string().nullable(),
  ewallet_phone: z.string().nullable(),
  beneficiary_id: z.string().nullable(),
  request_amount: z.number(),
  fee: z.number(),
  total_debit: z.number(),
  notify_url: z.string().nullable(),
  status: disbursementStatus,
  vendor_code: z.string().nullable(),
  vendor_disbursement_id: z.string().nullable(),
  vendor_call_pending: z.boolean(),
  vendors_tried: z.array(z.string()),
  failure_reason: z.string().nullable(),
  /** Set when no read at the vendor can settle it: an operator must (gateways/gateway.ts, the rule). */
  unresolved_at: z.date().nullable(),
  /** The request accepted paying an account whose bank names another holder (db/account-names.ts). */
  accept_name_mismatch: z.boolean(),
  requested_at: z.date(),
  completed_at: z.date().nullable(),
  created_at: z.date(),
  updated_at: z.date(),
});
export type DisbursementRow = z.infer<typeof disbursementRow>;

const columns = sql.fragment`
  id, merchant_id, ref_code, idempotency_key, api, source, channel, bank_id, bank_short_code, bank_name,
  account_number, account_name, ewallet_provider, ewallet_phone, beneficiary_id, request_amount, fee,
  total_debit, notify_url, status, vendor_code, vendor_disbursement_id, vendor_call_pending, vendors_tried,
  failure_reason, unresolved_at, accept_name_mismatch, requested_at, completed_at, created_at, updated_at`;

export interface NewDisbursement {
  id: string;
  merchantId: string;
  refCode: string;
  idempotencyKey: string;
  api: 'V1' | 'LEGACY';
  source: string;
  channel: 'BANK' | 'EWALLET';
  bankId: string | null;
  bankShortCode: string | null;
  bankName: string | null;
  accountNumber: string | null;
  accountName: string | null;
  ewalletProvider: string | null;
  ewalletPhone: string | null;
  beneficiaryId: string | null;
  requestAmount: number;
  fee: number;
  notifyUrl: string | null;
  status: 'PENDING' | 'IN_REVIEW';
  /** The request accepts an account whose bank names another holder; false unless it says so. */
  acceptNameMismatch?: boolean;
}

/**
 * Inserts the disbursement with its first event, dated on the WIB calendar day. Null when the
 * merchant already used the idempotency key (the unique constraint decides, whatever the race).
 */
export function insertDisbursement(db: Db, d: NewDisbursement, source: string) {
  return db.maybeOne(sql.type(disbursementRow)`
    with inserted as (
      insert into disbursements (id, merchant_id, ref_code, idempotency_key, api, source, channel, bank_id, bank_short_code,
                                 bank_name, account_number, account_name, ewallet_provider, ewallet_phone, beneficiary_id,
                                 request_amount, fee, total_debit, notify_url, status, accept_name_mismatch, wib_date)
      values (${d.id}, ${d.merchantId}, ${d.refCode}, ${d.idempotencyKey}, ${d.api}, ${d.source}, ${d.channel}, ${d.bankId},
              ${d.bankShortCode}, ${d.bankName}, ${d.accountNumber}, ${d.accountName}, ${d.ewalletProvider}, ${d.ewalletPhone},
              ${d.beneficiaryId}, ${d.requestAmount}, ${d.fee}, ${d.requestAmount + d.fee}, ${d.notifyUrl}, ${d.status},
              ${d.acceptNameMismatch ?? false}, (now() at time zone 'Asia/Jakarta')::date)
      on conflict (merchant_id, idempotency_key) do nothing
      returning ${columns}
    ), event as (
      insert into disbursement_events (disbursement_id, status, event, source)
      select id, status, 'disbursement.created', ${source} from inserted
    )
    select ${columns} from inserted`);
}

/**
 * What the merchant has disbursed today (WIB), counting everything not failed or rejected: the
 * running total (migration 020), one row.
 */
export async function disbursedToday(db: Db, merchantId: string): Promise<number> {
  const total = await db.maybeOneFirst(sql.type(totalRow)`
    select total from disbursement_daily_totals
    where merchant_id = ${merchantId} and wib_date = (now() at time zone 'Asia/Jakarta')::date`);
  return total ?? 0;
}

/** Adds `amount` to today's running total (in the transaction that writes the rows); returns the new total. */
export function addToDailyTotal(db: Db, merchantId: string, amount: number): Promise<number> {
  return db.oneFirst(sql.type(totalRow)`
    insert into disbursement_daily_totals (merchant_id, wib_date, total)
    values (${merchantId}, (now() at time zone 'Asia/Jakarta')::date, ${amount})
    on conflict (merchant_id, wib_date) do update set total = disbursement_daily_totals.total + excluded.total
    returning total`);
}

export function findByIdempotencyKey(db: Db, merchantId: string, key: string) {
  return db.maybeOne(sql.type(disbursementRow)`
    select ${columns} from disbursements where merchant_id = ${merchantId} and idempotency_key = ${key}`);
}

export function findDisbursement(db: Db, id: string) {
  return db.maybeOne(sql.type(disbursementRow)`select ${columns} from disbursements where id = ${id}`);
}

/** Row-locks the disbursement: every status change reads it this way first. */
export function lockDisbursement(db: Db, where: { id: string } | { refCode: string }) {
  const match = 'id' in where ? sql.fragment`id = ${where.id}` : sql.fragment`ref_code = ${where.refCode}`;
  return db.maybeOne(sql.type(disbursementRow)`select ${columns} from disbursements where ${match} for update`);
}

/** A merchant's disbursement by UUID or ref_code. */
export function findMerchantDisbursement(db: Db, merchantId: string, idOrRef: { id: string } | { refCode: string }) {
  const match = 'id' in idOrRef ? sql.fragment`id = ${idOrRef.id}` : sql.fragment`ref_code = ${idOrRef.refCode}`;
  return db.maybeOne(sql.type(disbursementRow)`
    select ${columns} from disbursements where ${match} and merchant_id = ${merchantId}`);
}

export interface DisbursementFilter {
  status?: DisbursementStatus;
  /** The key a client created it with: after a timeout, the way to find what was made. */
  idempotencyKey?: string;
  /** WIB calendar days of created_at, inclusive (YYYY-MM-DD). */
  dateFrom?: string;
  dateTo?: string;
}

export function listMerchantDisbursements(db: Db, merchantId: string, page: number, limit: number, filter: DisbursementFilter = {}) {
  const where = sql.fragment`merchant_id = ${merchantId}
    ${filter.status === undefined ? sql.fragment`` : sql.fragment`and status = ${filter.status}`}
    ${filter.idempotencyKey === undefined ? sql.fragment`` : sql.fragment`and idempotency_key = ${filter.idempotencyKey}`}
    ${filter.dateFrom === undefined ? sql.fragment`` : sql.fragment`and created_at >= (${filter.dateFrom}::date)::timestamp at time zone 'Asia/Jakarta'`}
    ${filter.dateTo === undefined ? sql.fragment`` : sql.fragment`and created_at < (${filter.dateTo}::date + 1)::timestamp at time zone 'Asia/Jakarta'`}`;
  return Promise.all([
    db.any(sql.type(disbursementRow)`
      select ${columns} from disbursements where ${where}
      order by created_at desc, id desc
      limit ${limit} offset ${(page - 1) * limit}`),
    db.oneFirst(sql.type(countRow)`select count(*)::int as n from disbursements where ${where}`),
  ]);
}

export interface StatusChange {
  status: DisbursementStatus;
  vendorCode?: string | null;
  vendorDisbursementId?: string | null;
  vendorCallPending?: boolean;
  failureReason?: string | null;
  /** The vendor about to be called joins vendors_tried. */
  triedVendor?: string;
}

/**
 * Moves a (locked) disbursement to a status, with its event, in one statement. Ending FAILED or
 * REJECTED gives its amount back to the day's running total, once: the lowering reads the row
 * as it was before this statement, so a row already failed or rejected lowers nothing.
 */
export function changeStatus(db: Db, id: string, change: StatusChange, event: { source: string; detail?: unknown }) {
  const keep = (value: unknown, column: string) => (value === undefined ? sql.identifier([column]) : sql.fragment`${value as string | boolean | null}`);
  const final = FINAL_STATUSES.has(change.status);
  const lowered =
    change.status === 'FAILED' || change.status === 'REJECTED'
      ? sql.fragment`, lowered as (
          update disbursement_daily_totals t set total = t.total - d.request_amount
          from disbursements d
          where d.id = ${id} and d.status not in ('FAILED', 'REJECTED') and t.merchant_id = d.merchant_id and t.wib_date = d.wib_date
        )`
      : sql.fragment``;
  return db.one(sql.type(disbursementRow)`
    with changed as (
      update disbursements
      set status = ${change.status},
          vendor_code = ${keep(change.vendorCode, 'vendor_code')},
          vendor_disbursement_id = ${keep(change.vendorDisbursementId, 'vendor_disbursement_id')},
          vendor_call_pending = ${keep(change.vendorCallPending, 'vendor_call_pending')},
          failure_reason = ${keep(change.failureReason, 'failure_reason')},
          vendors_tried = ${change.triedVendor ? sql.fragment`array_append(vendors_tried, ${change.triedVendor})` : sql.identifier(['vendors_tried'])},
          completed_at = ${final ? sql.fragment`now()` : sql.identifier(['completed_at'])},
          updated_at = now()
      where id = ${id}
      returning ${columns}
    ), event as (
      insert into disbursement_events (disbursement_id, status, event, source, detail)
      select id, status, ${`disbursement.${change.status.toLowerCase()}`}, ${event.source},
             ${event.detail === undefined ? null : sql.jsonb(event.detail as never)}
      from changed
    )${lowered}
    select ${columns} from changed`);
}

export const disbursementEventRow = z.object({ status: z.string(), event: z.string(), source: z.string(), detail: z.unknown(), created_at: z.date() });

export function listDisbursementEvents(db: Db, id: string) {
  return db.any(sql.type(disbursementEventRow)`
    select status, event, source, detail, created_at from disbursement_events where disbursement_id = ${id} order by id`);
}

