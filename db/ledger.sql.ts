// One function per statement on the ledger (ledger_accounts, ledger_transfers, ledger_postings).
// Only db/ledger.ts calls the writers.
import { z } from 'zod';
import { sql, type Db } from './pool.ts';
import { countRow, idRow, merchantIdRow } from './row-shapes.ts';

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
  'DISBURSEMENT_IMPORT',
  'DISBURSEMENT_COMPLETED',
  'DISBURSEMENT_REVERSAL',
  'DISBURSEMENT_RETURNED',
  'ADJUSTMENT',
  'REFUND',
  'REFUND_COMPLETED',
  'REFUND_REVERSAL',
  'SETTLEMENT_PAYOUT',
  'SETTLEMENT_COMPLETED',
  'SETTLEMENT_REVERSAL',
]);
export type TransferKind = z.infer<typeof transferKind>;
export type ReferenceType = 'ORDER' | 'DISBURSEMENT' | 'DISBURSEMENT_IMPORT' | 'ADJUSTMENT' | 'REFUND' | 'SETTLEMENT';

const lockedAccount = z.object({ id: z.number(), kind: accountKind, balance: z.number(), version: z.number() });
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
    select id, kind, balance, version from ledger_accounts
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
 * A paid order's share of the profits report's day totals (profit_daily_totals, migration 063):
 * on the WIB day of its paid_at, counted as the report counts it (PAID or since REFUNDED).
 */
export async function addPaidOrderToProfitTotals(db: Db, orderId: string, mdr: number) {
  await db.query(sql.unsafe`
    select profit_totals_add(o.merchant_id, o.paid_at, o.id, 1, o.amount, ${mdr}, 0, 0, 0, 0)
    from orders o
    where o.id = ${orderId} and o.status in ('PAID', 'REFUNDED') and o.paid_at is not null`);
}

const fillOrderFeesAfterRow = z.object({ last_id: z.string().nullable(), visited: z.number(), filled: z.number() });

/**
 * Keeps the fee of orders paid before migration 105 on the order, from their ORDER_PAYMENT
 * transfer's FEE_REVENUE leg: the orders after `afterId` in id order, `limit` of them visited,
 * those with a posted payment and no kept fee filled. Returns the last id visited (null past the
 * end), how many were visited and how many filled. A payment committing meanwhile writes its
 * own fee; the update re-reads such a row and leaves it (mdr_amount is no longer null).
 */
export function fillOrderFeesAfter(db: Db, afterId: string, limit: number) {
  return db.one(sql.type(fillOrderFeesAfterRow)`
    with batch as (
      select id from orders where id > ${afterId}::uuid order by id limit ${limit}
    ), filled as (
      update orders o set mdr_amount = coalesce(fee.amount, 0)
      from batch b
      join ledger_transfers t on t.kind = 'ORDER_PAYMENT' and t.reference_id = b.id
      left join ledger_accounts a on a.merchant_id = t.merchant_id and a.kind = 'FEE_REVENUE'
      left join ledger_postings fee on fee.transfer_id = t.id and fee.account_id = a.id
      where o.id = b.id and o.mdr_amount is null
      returning o.id
    )
    select (select max(id::text) from batch) as last_id, (select count(*) from batch)::int as visited, (select count(*) from filled)::int as filled`);
}

/**
 * Writes a transfer, its postings and the accounts' new balances in one statement. Returns the
 * transfer id, or null when a transfer of this kind already exists for the reference (then
 * nothing is written). The caller holds the accounts' locks and computed the balances.
 */
export function insertTransfer(db: Db, t: TransferRow) {
  return db.maybeOneFirst(sql.type(idRow)`
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
      -- The transfer's kind on each posting: GET /v1/balance-history?type= reads it on an index.
      insert into ledger_postings (transfer_id, transfer_kind, account_id, amount, balance_before, balance_after, created_at)
      select transfer.id, ${t.kind}, legs.account_id, legs.amount, legs.before, legs.after, transfer.created_at
      from transfer cross join legs
    ), accounts as (
      update ledger_accounts a set balance = legs.after, version = a.version + 1
      from legs
      where a.id = legs.account_id and exists (select 1 from transfer)
    )
    select id from transfer`);
}

export function findTransfer(db: Db, kind: TransferKind, referenceId: string) {
  return db.maybeOneFirst(sql.type(idRow)`
    select id from ledger_transfers where kind = ${kind} and reference_id = ${referenceId}`);
}

const accountStateRow = z.object({ balance: z.number(), version: z.number() });

/** An account's balance and version as last committed, unlocked (null: not opened yet). */
export function accountState(db: Db, merchantId: string, kind: AccountKind) {
  return db.maybeOne(sql.type(accountStateRow)`
    select balance, version from ledger_accounts where merchant_id = ${merchantId} and kind = ${kind}`);
}

const accountBalanceRow = z.object({ balance: z.number() });

export function accountBalance(db: Db, merchantId: string, kind: AccountKind) {
  return db.maybeOneFirst(sql.type(accountBalanceRow)`
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

// The account is found first, as a value (an InitPlan), so its postings are read on
// ledger_postings_account_idx (account_id, seq desc), ..._account_kind_idx (account_id,
// transfer_kind, seq desc) for a type, or ..._account_created_idx for a period, and only the
// page's postings are joined to their transfers; joined before the limit, Postgres read every
// posting of the wallet and probed each one's transfer (43 s at 830,000 postings).
function accountOf(merchantId: string, kind: AccountKind) {
  return sql.fragment`(select id from ledger_accounts where merchant_id = ${merchantId} and kind = ${kind})`;
}

const periodStart = (day: string) => sql.fragment`(${day}::date)::timestamp at time zone 'Asia/Jakarta'`;
const periodEnd = (day: string) => sql.fragment`(${day}::date + 1)::timestamp at time zone 'Asia/Jakarta'`;

/**
 * WIB calendar days, inclusive, as the bounds of a posting's created_at, and the posting
 * sequence they lie within, so the page is walked on (account_id, seq desc) from the period's
 * end rather than sorted out of all the period's postings.
 *
 * created_at is when the posting's transaction began, and postings of one account are made one
 * transaction at a time (each holds the account's row), so seq follows created_at except where a
 * transaction waited for the one before it. The seq bounds are taken an hour outside the period
 * (the last posting begun more than an hour before it, the first begun more than an hour after
 * it): a transaction would have to wait an hour on the account for a posting of the period to lie
 * beyond them, where every money transaction here lasts well under a minute (statement limits). The created_at filter stays
 * exact; it is written as an expression so that no plan reads the period on
 * ledger_postings_account_created_idx and sorts it (a generic plan of the prepared statement did:
 * 82,000 postings sorted for a page of the last 30 days at a year of data).
 */
function periodOf(account: ReturnType<typeof sql.fragment>, filter: MovementFilter) {
  return sql.fragment`
    ${filter.dateFrom === undefined ? sql.fragment`` : sql.fragment`
      and (created_at + interval '0') >= ${periodStart(filter.dateFrom)}
      and seq > coalesce((select seq from ledger_postings where account_id = ${account}
                            and created_at < ${periodStart(filter.dateFrom)} - interval '1 hour'
                          order by created_at desc limit 1), 0)`}
    ${filter.dateTo === undefined ? sql.fragment`` : sql.fragment`
      and (created_at + interval '0') < ${periodEnd(filter.dateTo)}
      and seq < coalesce((select seq from ledger_postings where account_id = ${account}
                            and created_at >= ${periodEnd(filter.dateTo)} + interval '1 hour'
                          order by created_at limit 1), 9223372036854775807)`}`;
}

export function listMovements(db: Db, merchantId: string, kind: AccountKind, page: number, limit: number, filter: MovementFilter = {}) {
  const ofType = filter.type === undefined ? sql.fragment`` : sql.fragment`and transfer_kind = ${filter.type}`;
  const dated = filter.dateFrom !== undefined || filter.dateTo !== undefined;
  const offset = (page - 1) * limit;
  // A type alone: the page's seqs are chosen on ..._account_kind_idx alone (an index-only scan,
  // so a deep offset walks index entries, not postings), then only they are read. Asked for the
  // postings themselves, Postgres walked ledger_postings_seq_key backwards through every account's
  // postings, filtering, since it cannot know how rare the account is behind the InitPlan: 124,000
  // postings read for a page at 700,000 (28 ms), the whole table for a small merchant.
  const postings = filter.type !== undefined && !dated
    ? sql.fragment`(select p.* from (select seq from ledger_postings where account_id = ${accountOf(merchantId, kind)} ${ofType}
                                     order by seq desc limit ${limit} offset ${offset}) k
                    join ledger_postings p on p.seq = k.seq)`
    : sql.fragment`(select * from ledger_postings where account_id = ${accountOf(merchantId, kind)} ${ofType} ${periodOf(accountOf(merchantId, kind), filter)}
                    order by seq desc limit ${limit} offset ${offset})`;
  return Promise.all([
    db.any(sql.type(movementRow)`
      select ${movementColumns}
      from ${postings} p
      join ledger_transfers t on t.id = p.transfer_id
      order by p.seq desc`),
    // Unfiltered, the account's version counts its postings; a type or a period sums the kept
    // per-day counts (ledger_posting_counts, migration 102) of its kind and days.
    filter.type === undefined && !dated
      ? db.oneFirst(sql.type(countRow)`
          select coalesce((select version from ledger_accounts where merchant_id = ${merchantId} and kind = ${kind}), 0)::int as n`)
      : db.oneFirst(sql.type(countRow)`
          select coalesce(sum(n), 0)::int as n from ledger_posting_counts
          where account_id = ${accountOf(merchantId, kind)}
            ${filter.type === undefined ? sql.fragment`` : sql.fragment`and transfer_kind = ${filter.type}`}
            ${filter.dateFrom === undefined ? sql.fragment`` : sql.fragment`and wib_date >= ${filter.dateFrom}::date`}
            ${filter.dateTo === undefined ? sql.fragment`` : sql.fragment`and wib_date <= ${filter.dateTo}::date`}`),
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
 * The profits report's kept day totals (profit_daily_totals) against the same totals counted
 * from the records, day by day, for the merchants given (null: all). The full audit runs it:
 * it reads every paid order, refund and payout of those merchants.
 */
export function findProfitTotalProblems(db: Db, merchants: readonly string[] | null) {
  const m = merchants === null ? null : sql.array([...merchants], 'uuid');
  const byDay = (from: ReturnType<typeof sql.fragment>) => sql.fragment`
    select merchant_id, wib_date, row(sum(order_count), sum(gross_amount), sum(mdr_total), sum(refund_total),
                                      sum(disbursement_count), sum(disbursement_total), sum(disbursement_fee_total)) as totals
    from ${from} group by 1, 2`;
  return db.any(sql.type(problemRow)`
    with kept as (${byDay(sql.fragment`(select * from profit_daily_totals where ${m === null ? sql.fragment`true` : sql.fragment`merchant_id = any(${m})`}) k`)}),
         counted as (${byDay(sql.fragment`profit_totals_from_records(${m}::uuid[])`)})
    select 'profit_totals' as check, coalesce(k.merchant_id, c.merchant_id)::text || ' ' || coalesce(k.wib_date, c.wib_date)::text as subject,
           format('kept %s, counted from the records %s', coalesce(k.totals::text, '()'), coalesce(c.totals::text, '()')) as detail
    from kept k
    full join counted c on c.merchant_id = k.merchant_id and c.wib_date = k.wib_date
    -- Kept rows of all zeros (a payout reversed on its day) are no difference from nothing counted.
    where coalesce(k.totals::text, '(0,0,0,0,0,0,0)') is distinct from coalesce(c.totals::text, '(0,0,0,0,0,0,0)')`);
}

/**
 * Which part of the ledger an audit statement proves. `merchants` null: every merchant.
 * `fromCheckpoint`: each account from its last proved posting (ledger_audit_balances) instead of
 * its first, and only accounts that changed since. `paidSince`: the unposted-payment check reads
 * orders paid since then (of any merchant) instead of every paid order of the merchants in scope.
 */
export interface AuditScope {
  merchants: readonly string[] | null;
  fromCheckpoint: boolean;
  paidSince: Date | null;
}

export const WHOLE_LEDGER: AuditScope = { merchants: null, fromCheckpoint: false, paidSince: null };

/**
 * The history's kept counts (ledger_posting_counts, migration 102) against the postings, as
 * audit rows over the accounts `touched`. From the first posting, per account, kind and WIB day;
 * from a checkpoint only the account's own postings since are read, so there each account's
 * counts must sum to its version (which the account_balance check proves against the postings).
 */
function postingCounts(fromCheckpoint: boolean) {
  if (fromCheckpoint) {
    return sql.fragment`
    select 'posting_counts', a.id::text, format('kept counts sum to %s, account version %s', coalesce(k.n, 0), a.version)
    from touched a
    left join (select account_id, sum(n)::bigint as n from ledger_posting_counts where account_id in (select id from touched) group by 1) k
      on k.account_id = a.id
    where coalesce(k.n, 0) <> a.version`;
  }
  return sql.fragment`
    select 'posting_counts', coalesce(k.account_id, c.account_id)::text || ' ' || coalesce(k.transfer_kind, c.transfer_kind) || ' ' || coalesce(k.wib_date, c.wib_date)::text,
           format('kept %s, postings %s', coalesce(k.n, 0), coalesce(c.n, 0))
    from (select * from ledger_posting_counts where account_id in (select id from touched)) k
    full join (select account_id, transfer_kind, (created_at at time zone 'Asia/Jakarta')::date as wib_date, count(*) as n
               from fresh group by 1, 2, 3) c
      on c.account_id = k.account_id and c.transfer_kind = k.transfer_kind and c.wib_date = k.wib_date
    where coalesce(k.n, 0) <> coalesce(c.n, 0)`;
}

/**
 * Every way the ledger can be wrong, as rows: cached balances or versions that differ from their
 * postings, postings whose stored transfer kind or kept history counts differ from the records,
 * transfers that do not sum to zero (or have fewer than two legs, or legs on another merchant's
 * accounts), broken balance chains, overdrawn accounts, paid orders with no posting, paid
 * orders whose kept fee differs from their payment's,
 * daily running totals that differ from the rows, and disbursements whose money is not
 * accounted for (a debit, then a completion or a reversal, each exactly once; an import's one
 * debit equal to its disbursements; what is in flight equal to the unfinished disbursements).
 *
 * Within `scope` (AuditScope). Transfers are reached through the postings checked, so a transfer
 * with no posting at all is found only by findTransfersWithoutPostings (a whole-ledger scope
 * finds it here too). Each scope is its own statement text, so each gets its own plan.
 */
export function findLedgerProblems(db: Db, scope: AuditScope = WHOLE_LEDGER) {
  const merchants = scope.merchants === null ? null : sql.array([...scope.merchants], 'uuid');
  const inScope = (column: ReturnType<typeof sql.fragment>) => (merchants === null ? sql.fragment`true` : sql.fragment`${column} = any(${merchants})`);
  const base = scope.fromCheckpoint
    ? sql.fragment`coalesce(b.last_seq, 0) as from_seq, coalesce(b.balance, 0) as from_balance, coalesce(b.version, 0) as from_version`
    : sql.fragment`0::bigint as from_seq, 0::bigint as from_balance, 0::bigint as from_version`;
  const changed = scope.fromCheckpoint ? sql.fragment`where balance <> from_balance or version <> from_version` : sql.fragment``;
  const whole = scope.merchants === null && !scope.fromCheckpoint;
  const transfers = whole
    ? sql.fragment`select id from ledger_transfers`
    : sql.fragment`select distinct transfer_id as id from fresh`;
  const paid = scope.paidSince === null ? inScope(sql.fragment`o.merchant_id`) : sql.fragment`o.paid_at >= ${scope.paidSince.toISOString()}::timestamptz`;
  return db.any(sql.type(problemRow)`
    with acc as materialized (
      select a.id, a.merchant_id, a.kind, a.balance, a.version, a.allow_negative, ${base}
      from ledger_accounts a left join ledger_audit_balances b on b.account_id = a.id
      where ${inScope(sql.fragment`a.merchant_id`)}
    ), touched as materialized (
      select * from acc ${changed}
    ), fresh as materialized (
      select p.id, p.seq, p.transfer_id, p.transfer_kind, p.account_id, p.amount, p.balance_before, p.balance_after, p.created_at, a.from_balance
      from touched a join ledger_postings p on p.account_id = a.id and p.seq > a.from_seq
    )
    select 'account_balance' as check, a.id::text as subject,
           format('cached %s/%s, postings %s/%s', a.balance, a.version, a.from_balance + coalesce(s.total, 0), a.from_version + coalesce(s.n, 0)) as detail
    from touched a
    left join (select account_id, sum(amount)::bigint as total, count(*) as n from fresh group by account_id) s
      on s.account_id = a.id
    where a.balance <> a.from_balance + coalesce(s.total, 0) or a.version <> a.from_version + coalesce(s.n, 0)
    union all
    select 'transfer_sum', t.id::text, format('sum %s over %s postings', coalesce(sum(p.amount), 0), count(p.id))
    from (${transfers}) t left join ledger_postings p on p.transfer_id = t.id
    group by t.id
    having coalesce(sum(p.amount), 0) <> 0 or count(p.id) < 2
    union all
    -- Each posting against its transfer, in one join of the postings to their transfers: on an
    -- account of the transfer's merchant, and with the transfer's kind stored on it (GET
    -- /v1/balance-history?type= reads that).
    select c.check, c.subject, c.detail
    from (
      select p.id, p.transfer_id, p.transfer_kind, a.id as account_id, a.merchant_id, t.merchant_id as transfer_merchant, t.kind
      from fresh p
      join acc a on a.id = p.account_id
      join ledger_transfers t on t.id = p.transfer_id
      where a.merchant_id <> t.merchant_id or p.transfer_kind is distinct from t.kind
    ) b
    cross join lateral (
      select 'transfer_merchant' as check, b.transfer_id::text as subject,
             format('posting %s on account %s of merchant %s', b.id, b.account_id, b.merchant_id) as detail
      where b.merchant_id <> b.transfer_merchant
      union all
      select 'posting_kind', b.id::text, format('posting says %s, its transfer %s is %s', b.transfer_kind, b.transfer_id, b.kind)
      where b.transfer_kind is distinct from b.kind
    ) c
    union all
    ${postingCounts(scope.fromCheckpoint)}
    union all
    select 'balance_chain', c.id::text, format('balance_before %s, previous balance_after %s', c.balance_before, c.previous)
    from (
      select id, balance_before, lag(balance_after, 1, from_balance) over (partition by account_id order by seq) as previous
      from fresh
    ) c
    where c.balance_before <> c.previous
    union all
    select 'overdrawn', a.id::text, format('%s account at %s', a.kind, a.balance)
    from acc a where a.balance < 0 and not a.allow_negative
    union all
    select case when o.status in ('PAID', 'REFUNDED') then 'unposted_payment' else 'order_mdr' end, o.ref_code,
           format('order %s is %s with no ledger payment%s', o.id, o.status,
                  case when o.mdr_amount is not null then format(', yet MDR %s on it', o.mdr_amount) else '' end)
    from orders o
    where (o.status in ('PAID', 'REFUNDED') or o.mdr_amount is not null) and ${paid}
      and not exists (select 1 from ledger_transfers t where t.kind = 'ORDER_PAYMENT' and t.reference_id = o.id)
    union all
    -- The fee kept on each paid order (migration 105; the orders export reads it) is its
    -- payment's FEE_REVENUE leg: the payments reached through the postings checked, each once.
    -- None kept is no difference: an order paid before that migration and not yet filled (ops
    -- ledger:fill-order-fees), whose export row asks the ledger.
    select 'order_mdr', o.ref_code, format('order %s keeps MDR %s, its payment %s charged %s', o.id, coalesce(o.mdr_amount::text, 'none'), f.transfer_id, f.fee)
    from (
      select p.transfer_id, coalesce(sum(p.amount) filter (where a.kind = 'FEE_REVENUE'), 0) as fee
      from fresh p join acc a on a.id = p.account_id
      where p.transfer_kind = 'ORDER_PAYMENT'
      group by p.transfer_id
    ) f
    join ledger_transfers t on t.id = f.transfer_id
    join orders o on o.id = t.reference_id
    where o.mdr_amount <> f.fee
    union all
    -- The daily limit's running total (migration 020) must equal the day's live disbursements.
    select 'daily_total', coalesce(t.merchant_id, r.merchant_id)::text || ' ' || coalesce(t.wib_date, r.wib_date)::text,
           format('running total %s, disbursements %s', coalesce(t.total, 0), coalesce(r.total, 0))
    from (select * from disbursement_daily_totals t where ${inScope(sql.fragment`t.merchant_id`)}) t
    full join (
      select merchant_id, wib_date, sum(request_amount)::bigint as total from disbursements d
      where status not in ('FAILED', 'REJECTED') and ${inScope(sql.fragment`d.merchant_id`)} group by merchant_id, wib_date
    ) r on r.merchant_id = t.merchant_id and r.wib_date = t.wib_date
    where coalesce(t.total, 0) <> coalesce(r.total, 0)
    union all
    -- Each disbursement is debited once: by its own DISBURSEMENT transfer (single creates, and
    -- imports before migration 023) or by its import's DISBURSEMENT_IMPORT; then completed once
    -- when SUCCESS and reversed once when FAILED or REJECTED, never both, never while open. A
    -- FAILED one may instead have been completed and then returned once (the vendor reversed a
    -- payout that had succeeded: DISBURSEMENT_RETURNED), and then it has no reversal.
    select 'disbursement_transfers', d.ref_code,
           format('%s: debited %s, completed %s, reversed %s, returned %s', d.status, coalesce(o.own, 0) + coalesce(i.n, 0), coalesce(o.completed, 0), coalesce(o.reversed, 0), coalesce(o.returned, 0))
    from disbursements d
    left join lateral (
      select count(*) filter (where kind = 'DISBURSEMENT') as own,
             count(*) filter (where kind = 'DISBURSEMENT_COMPLETED') as completed,
             count(*) filter (where kind = 'DISBURSEMENT_REVERSAL') as reversed,
             count(*) filter (where kind = 'DISBURSEMENT_RETURNED') as returned
      from ledger_transfers where reference_type = 'DISBURSEMENT' and reference_id = d.id
    ) o on true
    left join lateral (
      select count(*) as n from ledger_transfers where kind = 'DISBURSEMENT_IMPORT' and reference_id = d.import_id
    ) i on true
    where ${inScope(sql.fragment`d.merchant_id`)}
      and (coalesce(o.own, 0) + coalesce(i.n, 0) <> 1
       or coalesce(o.returned, 0) > (d.status = 'FAILED')::int
       or coalesce(o.completed, 0) <> (d.status = 'SUCCESS' or coalesce(o.returned, 0) = 1)::int
       or coalesce(o.reversed, 0) <> (d.status in ('FAILED', 'REJECTED') and coalesce(o.returned, 0) = 0)::int)
    union all
    -- An import's one debit is exactly its disbursements' total debit, and what its record says.
    select 'import_debit', t.reference_id::text,
           format('transfer %s, disbursements %s, import record %s', p.amount, coalesce(s.total, 0), coalesce(r.total_debit::text, 'missing'))
    from ledger_transfers t
    join ledger_postings p on p.transfer_id = t.id
    join ledger_accounts a on a.id = p.account_id and a.kind = 'DISBURSEMENTS_IN_FLIGHT'
    left join (
      select import_id, sum(total_debit)::bigint as total from disbursements where import_id is not null group by import_id
    ) s on s.import_id = t.reference_id
    left join disbursement_imports r on r.id = t.reference_id
    where t.kind = 'DISBURSEMENT_IMPORT' and ${inScope(sql.fragment`a.merchant_id`)}
      and (p.amount <> coalesce(s.total, 0) or r.total_debit is distinct from p.amount)
    union all
    -- Money in flight is exactly the total debit of the disbursements not finished yet.
    select 'disbursements_in_flight', a.merchant_id::text, format('account %s, unfinished disbursements %s', a.balance, coalesce(u.total, 0))
    from acc a
    left join (
      select merchant_id, sum(total_debit)::bigint as total from disbursements d
      where status not in ('SUCCESS', 'FAILED', 'REJECTED') and ${inScope(sql.fragment`d.merchant_id`)} group by merchant_id
    ) u on u.merchant_id = a.merchant_id
    where a.kind = 'DISBURSEMENTS_IN_FLIGHT' and a.balance <> coalesce(u.total, 0)`);
}

/** Transfers with no posting at all (the scoped audits reach transfers through their postings). */
export function findTransfersWithoutPostings(db: Db) {
  return db.any(sql.type(problemRow)`
    select 'transfer_sum' as check, t.id::text as subject, 'sum 0 over 0 postings' as detail
    from ledger_transfers t
    where not exists (select 1 from ledger_postings p where p.transfer_id = t.id)`);
}

/** The merchants whose accounts changed since their last proved posting (all, before any audit). */
export function merchantsChangedSinceCheckpoint(db: Db) {
  return db.anyFirst(sql.type(merchantIdRow)`
    select distinct a.merchant_id from ledger_accounts a left join ledger_audit_balances b on b.account_id = a.id
    where a.balance <> coalesce(b.balance, 0) or a.version <> coalesce(b.version, 0)`);
}

/** Every merchant holding ledger accounts, in id order: the full audit's chunks. */
export function ledgerMerchants(db: Db) {
  return db.anyFirst(sql.type(merchantIdRow)`
    select distinct merchant_id from ledger_accounts order by merchant_id`);
}

const recordAuditCheckpointRow = z.object({ postings: z.number() });

/**
 * Records the accounts of `merchants` (null: all) as proved up to their latest posting, at the
 * balance and version cached. Only after a clean audit of them in this same snapshot, where
 * the cached values were shown to equal the postings. Returns the postings the accounts hold.
 */
export function recordAuditCheckpoint(db: Db, merchants: readonly string[] | null) {
  const where = merchants === null ? sql.fragment`true` : sql.fragment`a.merchant_id = any(${sql.array([...merchants], 'uuid')})`;
  return db.oneFirst(sql.type(recordAuditCheckpointRow)`
    with proved as (
      insert into ledger_audit_balances as b (account_id, last_seq, balance, version)
      select a.id, coalesce((select max(p.seq) from ledger_postings p where p.account_id = a.id), 0), a.balance, a.version
      from ledger_accounts a where ${where}
      on conflict (account_id) do update
        set last_seq = excluded.last_seq, balance = excluded.balance, version = excluded.version, proved_at = now()
        where b.version <> excluded.version or b.balance <> excluded.balance
      returning 1
    )
    select coalesce(sum(a.version), 0)::bigint as postings from ledger_accounts a where ${where}`);
}

const lastCleanAuditStartRow = z.object({ started_at: z.date() });

/** When the last clean audit run started: the incremental audit reads payments since then. */
export function lastCleanAuditStart(db: Db) {
  return db.maybeOneFirst(sql.type(lastCleanAuditStartRow)`
    select started_at from ledger_audit_runs where problems = 0 order by started_at desc limit 1`);
}

export function recordAuditRun(db: Db, run: { mode: 'FULL' | 'INCREMENTAL'; startedAt: Date; accounts: number; postings: number; problems: number }) {
  return db.query(sql.unsafe`
    insert into ledger_audit_runs (mode, started_at, accounts, postings, problems)
    values (${run.mode}, ${run.startedAt.toISOString()}, ${run.accounts}, ${run.postings}, ${run.problems})`);
}

const accountsAndPostingsRow = z.object({ accounts: z.number(), postings: z.number() });

/** Each account's cached version is its count of postings: a count of the scope's postings without reading them. */
export function accountsAndPostings(db: Db, merchants: readonly string[] | null) {
  const where = merchants === null ? sql.fragment`true` : sql.fragment`merchant_id = any(${sql.array([...merchants], 'uuid')})`;
  return db.one(sql.type(accountsAndPostingsRow)`
    select count(*)::int as accounts, coalesce(sum(version), 0)::bigint as postings from ledger_accounts where ${where}`);
}

const ledgerCountsRow = z.object({ accounts: z.number(), transfers: z.number(), postings: z.number() });

export function ledgerCounts(db: Db) {
  return db.one(sql.type(ledgerCountsRow)`
    select (select count(*) from ledger_accounts)::int as accounts,
           (select count(*) from ledger_transfers)::int as transfers,
           (select count(*) from ledger_postings)::int as postings`);
}
