// One function per statement on the ledger (ledger_accounts, ledger_transfers, ledger_postings).
// Only db/ledger.ts calls the writers.
import { z } from 'zod';
import { sql, type Db } from './pool.ts';

export const accountKind = z.enum([
  'WALLET',
  'SETTLEMENT_ACCRUAL',
  'DISBURSEMENTS_IN_FLIGHT',
  'VENDOR_CLEARING',
  'FEE_REVENUE',
  'ADJUSTMENTS',
  'REFUNDS_IN_FLIGHT',
  'SETTLEMENTS_IN_FLIGHT',
]);
export type AccountKind = z.infer<typeof accountKind>;

/** The canonical order of a merchant's accounts: locks are always taken in it (WALLET first). */
export const ACCOUNT_KINDS = accountKind.options;
/** Accounts whose balance may go below zero; every other one has a CHECK (balance >= 0). */
export const NEGATIVE_ALLOWED: ReadonlySet<AccountKind> = new Set(['VENDOR_CLEARING', 'ADJUSTMENTS']);

export const transferKind = z.enum([
  'ORDER_PAYMENT',
  'DISBURSEMENT',
  'DISBURSEMENT_COMPLETED',
  'DISBURSEMENT_REVERSAL',
  'ADJUSTMENT',
  'REFUND',
  'REFUND_COMPLETED',
  'REFUND_REVERSAL',
  'SETTLEMENT_PAYOUT',
  'SETTLEMENT_COMPLETED',
  'SETTLEMENT_REVERSAL',
]);
export type TransferKind = z.infer<typeof transferKind>;
export type ReferenceType = 'ORDER' | 'DISBURSEMENT' | 'ADJUSTMENT' | 'REFUND' | 'SETTLEMENT';

const lockedAccount = z.object({ id: z.number(), kind: accountKind, balance: z.number() });
export type LockedAccount = z.infer<typeof lockedAccount>;

/** Opens every account a merchant can have, in canonical order; existing ones are kept. */
export function insertMerchantAccounts(db: Db, merchantId: string) {
  return db.query(sql.unsafe`
    insert into ledger_accounts (merchant_id, kind, allow_negative)
    select ${merchantId}, k.kind, k.kind = any(${sql.array([...NEGATIVE_ALLOWED], 'text')})
    from unnest(${sql.array([...ACCOUNT_KINDS], 'text')}) with ordinality as k(kind, rank)
    order by k.rank
    on conflict (merchant_id, kind) do nothing`);
}

/**
 * Locks a merchant's accounts of the given kinds, in canonical kind order (the rows are locked
 * as the sort emits them). Every ledger writer locks this way, so two transfers on one merchant
 * queue behind each other instead of deadlocking.
 */
export function lockAccounts(db: Db, merchantId: string, kinds: readonly AccountKind[]) {
  return db.any(sql.type(lockedAccount)`
    select id, kind, balance from ledger_accounts
    where merchant_id = ${merchantId} and kind = any(${sql.array([...kinds], 'text')})
    order by array_position(${sql.array([...ACCOUNT_KINDS], 'text')}, kind)
    for update`);
}

export interface TransferRow {
  merchantId: string;
  kind: TransferKind;
  referenceType: ReferenceType;
  referenceId: string;
  refCode: string | null;
  description: string | null;
  legs: { accountId: number; amount: number; before: number; after: number }[];
}

/**
 * Writes a transfer, its postings and the accounts' new balances in one statement. Returns the
 * transfer id, or null when a transfer of this kind already exists for the reference (then
 * nothing is written). The caller holds the accounts' locks and computed the balances.
 */
export function insertTransfer(db: Db, t: TransferRow) {
  return db.maybeOneFirst(sql.type(z.object({ id: z.string() }))`
    with transfer as (
      insert into ledger_transfers (merchant_id, kind, reference_type, reference_id, ref_code, description)
      values (${t.merchantId}, ${t.kind}, ${t.referenceType}, ${t.referenceId}, ${t.refCode}, ${t.description})
      on conflict (kind, reference_id) do nothing
      returning id, created_at
    ), legs as (
      select * from ${sql.unnest(
        t.legs.map((l) => [l.accountId, l.amount, l.before, l.after]),
        ['int8', 'int8', 'int8', 'int8'],
      )} as l(account_id, amount, before, after)
    ), postings as (
      insert into ledger_postings (transfer_id, account_id, amount, balance_before, balance_after, created_at)
      select transfer.id, legs.account_id, legs.amount, legs.before, legs.after, transfer.created_at
      from transfer cross join legs
    ), accounts as (
      update ledger_accounts a set balance = legs.after, version = a.version + 1
      from legs
      where a.id = legs.account_id and exists (select 1 from transfer)
    )
    select id from transfer`);
}

export function findTransfer(db: Db, kind: TransferKind, referenceId: string) {
  return db.maybeOneFirst(sql.type(z.object({ id: z.string() }))`
    select id from ledger_transfers where kind = ${kind} and reference_id = ${referenceId}`);
}

export function accountBalance(db: Db, merchantId: string, kind: AccountKind) {
  return db.maybeOneFirst(sql.type(z.object({ balance: z.number() }))`
    select balance from ledger_accounts where merchant_id = ${merchantId} and kind = ${kind}`);
}

export const movementRow = z.object({
  id: z.string(),
  type: transferKind,
  amount: z.number(),
  balance_before: z.number(),
  balance_after: z.number(),
  reference_type: z.string(),
  reference_id: z.string(),
  ref_code: z.string().nullable(),
  description: z.string().nullable(),
  created_at: z.date(),
});
export type MovementRow = z.infer<typeof movementRow>;

const movementColumns = sql.fragment`
  p.id, t.kind as type, p.amount, p.balance_before, p.balance_after, t.reference_type, t.reference_id,
  t.ref_code, t.description, p.created_at`;

/** A merchant's movements on one account, newest first (by posting sequence). */
export interface MovementFilter {
  type?: TransferKind;
  /** WIB calendar days of the posting, inclusive (YYYY-MM-DD). */
  dateFrom?: string;
  dateTo?: string;
}

export function listMovements(db: Db, merchantId: string, kind: AccountKind, page: number, limit: number, filter: MovementFilter = {}) {
  if (filter.type !== undefined || filter.dateFrom !== undefined || filter.dateTo !== undefined) return listMovementsFiltered(db, merchantId, kind, page, limit, filter);
  return Promise.all([
    db.any(sql.type(movementRow)`
      select ${movementColumns}
      from ledger_accounts a
      join ledger_postings p on p.account_id = a.id
      join ledger_transfers t on t.id = p.transfer_id
      where a.merchant_id = ${merchantId} and a.kind = ${kind}
      order by p.seq desc
      limit ${limit} offset ${(page - 1) * limit}`),
    db.oneFirst(sql.type(z.object({ n: z.number() }))`
      select coalesce((select version from ledger_accounts where merchant_id = ${merchantId} and kind = ${kind}), 0)::int as n`),
  ]);
}

/** Filtered, the total is counted (the account's version counts every posting, unfiltered). */
function listMovementsFiltered(db: Db, merchantId: string, kind: AccountKind, page: number, limit: number, filter: MovementFilter) {
  const where = sql.fragment`a.merchant_id = ${merchantId} and a.kind = ${kind}
    ${filter.type === undefined ? sql.fragment`` : sql.fragment`and t.kind = ${filter.type}`}
    ${filter.dateFrom === undefined ? sql.fragment`` : sql.fragment`and p.created_at >= (${filter.dateFrom}::date)::timestamp at time zone 'Asia/Jakarta'`}
    ${filter.dateTo === undefined ? sql.fragment`` : sql.fragment`and p.created_at < (${filter.dateTo}::date + 1)::timestamp at time zone 'Asia/Jakarta'`}`;
  const from = sql.fragment`ledger_accounts a join ledger_postings p on p.account_id = a.id join ledger_transfers t on t.id = p.transfer_id`;
  return Promise.all([
    db.any(sql.type(movementRow)`select ${movementColumns} from ${from} where ${where} order by p.seq desc limit ${limit} offset ${(page - 1) * limit}`),
    db.oneFirst(sql.type(z.object({ n: z.number() }))`select count(*)::int as n from ${from} where ${where}`),
  ]);
}

export function findMovement(db: Db, merchantId: string, kind: AccountKind, postingId: string) {
  return db.maybeOne(sql.type(movementRow)`
    select ${movementColumns}
    from ledger_postings p
    join ledger_accounts a on a.id = p.account_id
    join ledger_transfers t on t.id = p.transfer_id
    where p.id = ${postingId} and a.merchant_id = ${merchantId} and a.kind = ${kind}`);
}

const problemRow = z.object({ check: z.string(), subject: z.string(), detail: z.string() });
export type AuditProblem = z.infer<typeof problemRow>;

/**
 * Every way the ledger can be wrong, as rows: cached balances or versions that differ from their
 * postings, transfers that do not sum to zero (or have fewer than two legs, or legs on another
 * merchant's accounts), broken balance chains, overdrawn accounts, paid orders with no posting.
 */
export function findLedgerProblems(db: Db) {
  return db.any(sql.type(problemRow)`
    select 'account_balance' as check, a.id::text as subject,
           format('cached %s/%s, postings %s/%s', a.balance, a.version, coalesce(s.total, 0), coalesce(s.n, 0)) as detail
    from ledger_accounts a
    left join (select account_id, sum(amount)::bigint as total, count(*) as n from ledger_postings group by account_id) s
      on s.account_id = a.id
    where a.balance <> coalesce(s.total, 0) or a.version <> coalesce(s.n, 0)
    union all
    select 'transfer_sum', t.id::text, format('sum %s over %s postings', coalesce(sum(p.amount), 0), count(p.id))
    from ledger_transfers t left join ledger_postings p on p.transfer_id = t.id
    group by t.id
    having coalesce(sum(p.amount), 0) <> 0 or count(p.id) < 2
    union all
    select 'transfer_merchant', p.transfer_id::text, format('posting %s on account %s of merchant %s', p.id, a.id, a.merchant_id)
    from ledger_postings p
    join ledger_accounts a on a.id = p.account_id
    join ledger_transfers t on t.id = p.transfer_id
    where a.merchant_id <> t.merchant_id
    union all
    select 'balance_chain', c.id::text, format('balance_before %s, previous balance_after %s', c.balance_before, c.previous)
    from (
      select id, balance_before, coalesce(lag(balance_after) over (partition by account_id order by seq), 0) as previous
      from ledger_postings
    ) c
    where c.balance_before <> c.previous
    union all
    select 'overdrawn', a.id::text, format('%s account at %s', a.kind, a.balance)
    from ledger_accounts a where a.balance < 0 and not a.allow_negative
    union all
    select 'unposted_payment', o.ref_code, format('order %s is %s with no ledger payment', o.id, o.status)
    from orders o
    where o.status in ('PAID', 'REFUNDED')
      and not exists (select 1 from ledger_transfers t where t.kind = 'ORDER_PAYMENT' and t.reference_id = o.id)
    union all
    -- The daily limit's running total (migration 020) must equal the day's live disbursements.
    select 'daily_total', coalesce(t.merchant_id, r.merchant_id)::text || ' ' || coalesce(t.wib_date, r.wib_date)::text,
           format('running total %s, disbursements %s', coalesce(t.total, 0), coalesce(r.total, 0))
    from disbursement_daily_totals t
    full join (
      select merchant_id, wib_date, sum(request_amount)::bigint as total from disbursements
      where status not in ('FAILED', 'REJECTED') group by merchant_id, wib_date
    ) r on r.merchant_id = t.merchant_id and r.wib_date = t.wib_date
    where coalesce(t.total, 0) <> coalesce(r.total, 0)`);
}

export function ledgerCounts(db: Db) {
  return db.one(sql.type(z.object({ accounts: z.number(), transfers: z.number(), postings: z.number() }))`
    select (select count(*) from ledger_accounts)::int as accounts,
           (select count(*) from ledger_transfers)::int as transfers,
           (select count(*) from ledger_postings)::int as postings`);
}

export interface BulkTransferRow {
  id: string;
  kind: TransferKind;
  referenceType: ReferenceType;
  referenceId: string;
  refCode: string | null;
  description: string | null;
}

export interface BulkPostingRow {
  transferId: string;
  accountId: number;
  amount: number;
  before: number;
  after: number;
}

/**
 * Writes many transfers of one merchant and their postings in one statement, postings in the
 * given order (their seq follows it, so each account's balance chain reads in that order).
 * Account balances are not touched: setAccountBalances follows. A reference already posted
 * under the kind violates ledger_transfers_kind_reference_key and aborts the transaction.
 */
export function insertTransfersInBulk(db: Db, merchantId: string, transfers: readonly BulkTransferRow[], postings: readonly BulkPostingRow[]) {
  return db.query(sql.unsafe`
    with transfers as (
      insert into ledger_transfers (id, merchant_id, kind, reference_type, reference_id, ref_code, description)
      select t.id, ${merchantId}, t.kind, t.reference_type, t.reference_id, t.ref_code, t.description
      from ${sql.unnest(
        transfers.map((t) => [t.id, t.kind, t.referenceType, t.referenceId, t.refCode, t.description]),
        ['uuid', 'text', 'text', 'uuid', 'text', 'text'],
      )} with ordinality as t(id, kind, reference_type, reference_id, ref_code, description, n)
      order by t.n
    )
    insert into ledger_postings (transfer_id, account_id, amount, balance_before, balance_after)
    select p.transfer_id, p.account_id, p.amount, p.before, p.after
    from ${sql.unnest(
      postings.map((p) => [p.transferId, p.accountId, p.amount, p.before, p.after]),
      ['uuid', 'int8', 'int8', 'int8', 'int8'],
    )} with ordinality as p(transfer_id, account_id, amount, before, after, n)
    order by p.n`);
}

/** Sets (locked) accounts to the balance their new postings reached, counting those postings. */
export function setAccountBalances(db: Db, accounts: readonly { id: number; balance: number; postings: number }[]) {
  return db.query(sql.unsafe`
    update ledger_accounts a set balance = u.balance, version = a.version + u.postings
    from ${sql.unnest(
      accounts.map((a) => [a.id, a.balance, a.postings]),
      ['int8', 'int8', 'int8'],
    )} as u(id, balance, postings)
    where a.id = u.id`);
}
