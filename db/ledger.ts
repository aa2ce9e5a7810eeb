// The ledger: the only module that moves money. Every movement is one transfer whose postings
// sum to zero across a merchant's accounts.
//
// Invariants and why they hold:
// - Cached balances equal their postings: a transfer's postings and the accounts' new balances
//   are written by one statement, under row locks on those accounts (lockAccounts), with the
//   balances computed from the locked rows.
// - No overdraft: balances are checked against the locked rows before writing (a typed
//   InsufficientFunds the caller maps to its error code), and CHECK (balance >= 0) backs it up.
// - Nothing is posted twice: a transfer is unique per (kind, reference); a retried or
//   concurrent caller finds the first one and writes nothing (postTransfer returns null).
// - No deadlock: all of one merchant's accounts are locked in one canonical order (WALLET
//   first), and a transfer never spans two merchants.
// - History is append-only (a trigger refuses updates and deletes); a correction is a new
//   transfer in the other direction.
import type { Db } from './pool.ts';
import {
  accountBalance,
  accountsAndPostings,
  accountState,
  addPaidOrderToProfitTotals,
  fillOrderFeesAfter,
  findLedgerProblems,
  findProfitTotalProblems,
  findTransfersWithoutPostings,
  lastCleanAuditStart,
  ledgerMerchants,
  merchantsChangedSinceCheckpoint,
  recordAuditCheckpoint,
  recordAuditRun,
  findTransfer,
  insertMerchantAccounts,
  insertTransfer,
  ledgerCounts,
  lockAccounts,
  NEGATIVE_ALLOWED,
  type AccountKind,
  type AuditProblem,
  type LockedAccount,
  type ReferenceType,
  type TransferKind,
} from './ledger.sql.ts';
import { countLedgerTransfers } from './metrics.ts';
import { mdrOf } from './money-rules.ts';
import { sql, type Pool } from './pool.ts';
import { z } from 'zod';

export type { AccountKind, TransferKind } from './ledger.sql.ts';

/** A transfer that would take an account below zero. Nothing was written. */
export class InsufficientFunds extends Error {
  readonly account: AccountKind;
  readonly balance: number;
  constructor(account: AccountKind, balance: number, needed: number) {
    super(`${account} holds ${balance}, ${needed} needed`);
    this.account = account;
    this.balance = balance;
  }
}

export interface Transfer {
  merchantId: string;
  kind: TransferKind;
  reference: { type: ReferenceType; id: string; refCode: string | null };
  description: string | null;
  /** Signed amounts per account of the merchant; zero legs are dropped. Must sum to zero. */
  legs: Partial<Record<AccountKind, number>>;
}

/**
 * Locks the merchant's accounts of `kinds` (opening them on first use) and returns them by kind.
 * Callers that must check something under the lock first (a disbursement's balance and daily
 * limit) call this, then postTransfer in the same transaction.
 */
export async function lockMerchantAccounts(tx: Db, merchantId: string, kinds: readonly AccountKind[]): Promise<Map<AccountKind, LockedAccount>> {
  let rows = await lockAccounts(tx, merchantId, kinds);
  if (rows.length < new Set(kinds).size) {
    await insertMerchantAccounts(tx, merchantId);
    rows = await lockAccounts(tx, merchantId, kinds);
  }
  return new Map(rows.map((r) => [r.kind, r]));
}

/**
 * Posts a transfer. Returns its id, or null when this (kind, reference) was already posted.
 * Throws InsufficientFunds (writing nothing) when a non-negative account would go below zero.
 * Must run inside the caller's transaction, which also holds the state change it pays for.
 * `locked` balances must be those read under lock in this transaction, with nothing posted since.
 */
export async function postTransfer(tx: Db, transfer: Transfer, locked?: Map<AccountKind, LockedAccount>): Promise<string | null> {
  const legs = Object.entries(transfer.legs).filter(([, amount]) => amount !== 0) as [AccountKind, number][];
  let sum = 0;
  for (const [kind, amount] of legs) {
    if (!Number.isSafeInteger(amount)) throw new RangeError(`ledger amount for ${kind} is not a whole Rupiah: ${amount}`);
    sum += amount;
  }
  if (sum !== 0) throw new RangeError(`transfer ${transfer.kind} does not balance: legs sum to ${sum}`);
  if (legs.length < 2) throw new RangeError(`transfer ${transfer.kind} needs at least two non-zero legs`);

  // A caller that locked the accounts itself (to check something under the lock) passes them in.
  const kinds = legs.map(([kind]) => kind);
  const accounts = locked && kinds.every((k) => locked.has(k)) ? locked : await lockMerchantAccounts(tx, transfer.merchantId, kinds);
  const rows = legs.map(([kind, amount]) => {
    const account = accounts.get(kind)!;
    return { kind, accountId: account.id, amount, before: account.balance, after: account.balance + amount };
  });
  const overdrawn = rows.find((r) => r.after < 0 && !NEGATIVE_ALLOWED.has(r.kind));
  if (overdrawn) {
    // A repeat of a transfer already posted is a no-op, even if the money has moved on since.
    if (await findTransfer(tx, transfer.kind, transfer.reference.id)) return null;
    throw new InsufficientFunds(overdrawn.kind, overdrawn.before, -overdrawn.amount);
  }
  const id = await insertTransfer(tx, {
    merchantId: transfer.merchantId,
    kind: transfer.kind,
    referenceType: transfer.reference.type,
    referenceId: transfer.reference.id,
    refCode: transfer.reference.refCode,
    description: transfer.description,
    legs: rows,
  });
  if (id) countLedgerTransfers(tx, transfer.kind);
  return id;
}

const merchantMoney = z.object({ settlement_type: z.enum(['WALLET', 'MANUAL']), mdr_bps: z.number() });

/** What a payment of the order moves: its MDR, and where the merchant's share goes. */
export interface PaymentTerms {
  mdr: number;
  owed: 'WALLET' | 'SETTLEMENT_ACCRUAL';
}

/**
 * The terms a payment of `order` is posted on, from the merchant's fees as they are now. Read
 * before the order is marked PAID, which keeps the MDR on the order (orders.mdr_amount: the
 * orders export reads it there), then passed to postOrderPayment, which posts that same MDR.
 */
export async function paymentTerms(tx: Db, order: { merchant_id: string; amount: number }): Promise<PaymentTerms> {
  const merchant = await tx.one(sql.type(merchantMoney)`
    select settlement_type, mdr_bps from merchants where id = ${order.merchant_id}`);
  return { mdr: mdrOf(order.amount, merchant.mdr_bps), owed: merchant.settlement_type === 'WALLET' ? 'WALLET' : 'SETTLEMENT_ACCRUAL' };
}

/**
 * A paid order: the vendor holds the amount for the merchant, the merchant is owed amount − MDR
 * (in the wallet, or accrued for settlement when MANUAL), the platform earned the MDR. Runs in
 * the transaction that marks the order PAID, on the terms read for it (paymentTerms); a second
 * call for the order posts nothing.
 */
export async function postOrderPayment(tx: Db, order: { id: string; merchant_id: string; ref_code: string; amount: number }, terms: PaymentTerms) {
  const { mdr, owed } = terms;
  const id = await postTransfer(tx, {
    merchantId: order.merchant_id,
    kind: 'ORDER_PAYMENT',
    reference: { type: 'ORDER', id: order.id, refCode: order.ref_code },
    description: `QRIS payment ${order.ref_code} (MDR ${mdr})`,
    legs: { VENDOR_CLEARING: -order.amount, [owed]: order.amount - mdr, FEE_REVENUE: mdr },
  });
  // The profits report's day totals move with the posting, in its transaction, once.
  if (id) await addPaidOrderToProfitTotals(tx, order.id, mdr);
  return id;
}

/**
 * Fills the fee kept on orders paid before migration 105 (see there), `batch` orders visited per
 * statement, each its own short transaction: a year of orders is never one long write holding
 * paid orders' locks, and a run cut off resumes by being run again (filled orders are skipped).
 */
export async function fillOrderFees(pool: Pool, options: { batch: number; onProgress?: (p: { visited: number; filled: number }) => void }) {
  let after = '00000000-0000-0000-0000-000000000000';
  let visited = 0;
  let filled = 0;
  for (;;) {
    const step = await fillOrderFeesAfter(pool, after, options.batch);
    if (step.last_id === null) return { visited, filled };
    after = step.last_id;
    visited += step.visited;
    filled += step.filled;
    options.onProgress?.({ visited, filled });
  }
}

/** An operator's correction of a wallet (positive credits, negative debits), as its own transfer. */
export async function adjustWallet(tx: Db, a: { merchantId: string; adjustmentId: string; amount: number; reason: string }) {
  return postTransfer(tx, {
    merchantId: a.merchantId,
    kind: 'ADJUSTMENT',
    reference: { type: 'ADJUSTMENT', id: a.adjustmentId, refCode: null },
    description: a.reason,
    legs: { WALLET: a.amount, ADJUSTMENTS: -a.amount },
  });
}

export async function walletBalance(db: Db, merchantId: string): Promise<number> {
  return (await accountBalance(db, merchantId, 'WALLET')) ?? 0;
}

/**
 * The wallet's balance and version as last committed, without its lock: a forecast for work
 * done before locking, to be checked again under the lock (a wallet never posted to reads 0/0).
 */
export async function peekWallet(db: Db, merchantId: string): Promise<{ balance: number; version: number }> {
  return (await accountState(db, merchantId, 'WALLET')) ?? { balance: 0, version: 0 };
}

export interface AuditReport {
  ok: boolean;
  accounts: number;
  transfers: number;
  postings: number;
  problems: AuditProblem[];
}

/**
 * Proves the whole ledger in one statement: see findLedgerProblems for every check. For tests and
 * benches at their sizes; an operator's audit at any size is auditLedgerSince or auditLedgerFull.
 */
export async function auditLedger(db: Db): Promise<AuditReport> {
  const [problems, counts] = await Promise.all([findLedgerProblems(db), ledgerCounts(db)]);
  return { ok: problems.length === 0, ...counts, problems: [...problems] };
}

export interface AuditRun {
  ok: boolean;
  mode: 'FULL' | 'INCREMENTAL';
  /** The incremental audit's reach: orders paid since then (null: a full audit). */
  since: Date | null;
  /** Merchants whose accounts were proved, accounts and postings they hold. */
  merchants: number;
  accounts: number;
  postings: number;
  problems: AuditProblem[];
}

export interface AuditProgress {
  merchantsDone: number;
  merchantsTotal: number;
  problems: number;
}

/** Merchants per statement of the full audit; the one with a year of history is a chunk of its own anyway. */
const FULL_AUDIT_CHUNK = 50;
/**
 * How far before the last clean audit's start the incremental audit looks for paid orders
 * without their posting: a payment's paid_at is its transaction's start, which may commit later
 * than the audit's snapshot (statements and idle transactions are cut off long before this).
 */
const PAID_OVERLAP_MS = 60 * 60_000;

/**
 * One chunk of an audit, in one REPEATABLE READ snapshot: the problems of `merchants` (null: all)
 * within the scope and, when there are none, their accounts recorded as proved (the checkpoint
 * the next incremental audit starts from). `statementTimeoutMs` replaces the pool's limit for
 * this chunk only (a full audit is no request).
 */
async function auditChunk(pool: Pool, merchants: readonly string[] | null, fromCheckpoint: boolean, paidSince: Date | null, statementTimeoutMs: number | null) {
  return pool.transaction(async (tx) => {
    await tx.query(sql.unsafe`set transaction isolation level repeatable read`);
    if (statementTimeoutMs !== null) await tx.query(sql.unsafe`select set_config('statement_timeout', ${String(statementTimeoutMs)}, true)`);
    const problems = [
      ...(await findLedgerProblems(tx, { merchants, fromCheckpoint, paidSince })),
      // The full audit also proves the profits report's kept totals (a full read of the records).
      ...(fromCheckpoint ? [] : await findProfitTotalProblems(tx, merchants)),
    ];
    if (problems.length === 0) await recordAuditCheckpoint(tx, merchants);
    return [...problems];
  });
}

/**
 * Proves everything, merchant by merchant (FULL_AUDIT_CHUNK per snapshot), each chunk under its
 * own statement limit, reporting progress after each; then the transfers with no posting at all.
 * A clean chunk records its accounts as proved, so an interrupted full audit still moves the
 * checkpoint for what it finished.
 */
export async function auditLedgerFull(pool: Pool, options: { statementTimeoutMs?: number | null; onProgress?: (p: AuditProgress) => void } = {}): Promise<AuditRun> {
  const startedAt = new Date();
  const timeout = options.statementTimeoutMs ?? null;
  const merchants = await ledgerMerchants(pool);
  const problems: AuditProblem[] = [];
  for (let i = 0; i < merchants.length; i += FULL_AUDIT_CHUNK) {
    const chunk = merchants.slice(i, i + FULL_AUDIT_CHUNK);
    problems.push(...(await auditChunk(pool, chunk, false, null, timeout)));
    options.onProgress?.({ merchantsDone: Math.min(i + FULL_AUDIT_CHUNK, merchants.length), merchantsTotal: merchants.length, problems: problems.length });
  }
  problems.push(
    ...(await pool.transaction(async (tx) => {
      if (timeout !== null) await tx.query(sql.unsafe`select set_config('statement_timeout', ${String(timeout)}, true)`);
      return findTransfersWithoutPostings(tx);
    })),
  );
  const counts = await accountsAndPostings(pool, null);
  await recordAuditRun(pool, { mode: 'FULL', startedAt, ...counts, problems: problems.length });
  return { ok: problems.length === 0, mode: 'FULL', since: null, merchants: merchants.length, ...counts, problems };
}

/**
 * Proves what changed since the last clean audit: each changed account from its last proved
 * posting on (ledger_audit_balances), the transfers of those postings, the disbursement checks
 * of their merchants, and orders paid since the last clean run started (PAID_OVERLAP_MS before
 * it). Accounts unchanged since are compared with what was proved, which catches a cached
 * balance edited since. An edit of history already proved is for auditLedgerFull to find.
 * With no clean audit yet, it is a full audit.
 */
export async function auditLedgerSince(pool: Pool, options: { onProgress?: (p: AuditProgress) => void } = {}): Promise<AuditRun> {
  const last = await lastCleanAuditStart(pool);
  if (!last) return auditLedgerFull(pool, { onProgress: options.onProgress });
  const startedAt = new Date();
  const since = new Date(last.getTime() - PAID_OVERLAP_MS);
  const changed = await merchantsChangedSinceCheckpoint(pool);
  const problems = await auditChunk(pool, changed, true, since, null);
  options.onProgress?.({ merchantsDone: changed.length, merchantsTotal: changed.length, problems: problems.length });
  const counts = await accountsAndPostings(pool, changed);
  await recordAuditRun(pool, { mode: 'INCREMENTAL', startedAt, ...counts, problems: problems.length });
  return { ok: problems.length === 0, mode: 'INCREMENTAL', since, merchants: changed.length, ...counts, problems };
}
