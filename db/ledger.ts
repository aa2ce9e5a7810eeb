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
  accountState,
  findLedgerProblems,
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
import { sql } from './pool.ts';
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

/**
 * A paid order: the vendor holds the amount for the merchant, the merchant is owed amount − MDR
 * (in the wallet, or accrued for settlement when MANUAL), the platform earned the MDR. Runs in
 * the transaction that marks the order PAID; a second call for the order posts nothing.
 */
export async function postOrderPayment(tx: Db, order: { id: string; merchant_id: string; ref_code: string; amount: number }) {
  const merchant = await tx.one(sql.type(merchantMoney)`
    select settlement_type, mdr_bps from merchants where id = ${order.merchant_id}`);
  const mdr = mdrOf(order.amount, merchant.mdr_bps);
  const owed: AccountKind = merchant.settlement_type === 'WALLET' ? 'WALLET' : 'SETTLEMENT_ACCRUAL';
  return postTransfer(tx, {
    merchantId: order.merchant_id,
    kind: 'ORDER_PAYMENT',
    reference: { type: 'ORDER', id: order.id, refCode: order.ref_code },
    description: `QRIS payment ${order.ref_code} (MDR ${mdr})`,
    legs: { VENDOR_CLEARING: -order.amount, [owed]: order.amount - mdr, FEE_REVENUE: mdr },
  });
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

/** Proves the ledger: see findLedgerProblems for every check. */
export async function auditLedger(db: Db): Promise<AuditReport> {
  const [problems, counts] = await Promise.all([findLedgerProblems(db), ledgerCounts(db)]);
  return { ok: problems.length === 0, ...counts, problems: [...problems] };
}
