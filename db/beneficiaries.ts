// The beneficiary aggregate: a merchant's saved payout destinations (spec 2.4, 4.5).
//
// Invariants and why they hold:
// - At most one live default per merchant: the partial unique index beneficiaries_one_default_key
//   says so, and a create with is_default locks the merchant row before it unsets the old
//   default and inserts, so concurrent default creates queue up instead of colliding on the
//   index; the last to commit is the default.
// - A beneficiary is checked with the rules of a disbursement to the same destination (bank
//   known and enabled, e-wallet known, phone normalised by the caller), so a saved one can be
//   paid to.
// - Every check ends: its verify job is queued in the transaction that starts it (the insert,
//   or the merchant's request to check again), the result is written only onto a PENDING row
//   (workers/beneficiary-verify.ts), the job's last retry records FAILED instead of throwing,
//   and a chain that died without reaching it (a worker killed mid-attempt, a lost job) is
//   failed by the scheduler's sweep once VERIFY_DEADLINE_SECONDS pass. Both record the last
//   attempt's reason. The sweep is the guarantee: it needs nothing but the row.
// - At most one check runs per beneficiary: asking again while PENDING queues nothing.
// - Deleting is soft: disbursements keep their beneficiary_id, and a deleted beneficiary is
//   never the default and is found by nothing but the verify job.
import { randomUUID } from 'node:crypto';
import type { PgBoss } from 'pg-boss';
import { ApiError, bankDisabled, bankNotFound } from './errors.ts';
import { findBankById, findBankByShortCode, findEwalletByShortCode } from './master-data.ts';
import type { Pool, Db } from './pool.ts';
import { inTransaction, queues, sendJob } from './queue.ts';
import {
  failOverdueVerifications,
  findMerchantBeneficiary,
  insertBeneficiary,
  lockMerchantBeneficiary,
  lockMerchantDefaults,
  restartVerification,
  unsetDefault,
  type BeneficiaryRow,
} from './beneficiaries.sql.ts';

/**
 * The longest a verify job chain can run: every backoff at its longest (pg-boss waits at most
 * retryDelay × 2^n, capped at retryDelayMax, before retry n) plus every attempt running until
 * its expiry. About 73 minutes with the queue's options.
 */
export function longestVerifyChainSeconds(o: { retryLimit: number; retryDelay: number; retryDelayMax: number; expireInSeconds: number } = queues['beneficiary-verify'].options): number {
  let waits = 0;
  for (let n = 1; n <= o.retryLimit; n++) waits += Math.min(o.retryDelayMax, o.retryDelay * 2 ** n);
  return waits + (o.retryLimit + 1) * o.expireInSeconds;
}

/**
 * When the sweep fails a check still PENDING: well past the longest chain, so a chain slowed by
 * a worker outage or a busy queue still ends it itself, with the vendor's answer if one comes.
 * The sweep only catches chains that died; a merchant can ask again at once after.
 */
export const VERIFY_DEADLINE_SECONDS = 3 * longestVerifyChainSeconds();

/** The reason recorded when no attempt ran at all before the deadline. */
export const NO_ATTEMPT_REASON = 'verification did not complete: no vendor inquiry finished before the deadline';

/** A payout destination, as a disbursement request carries it. */
export interface Destination {
  channel: 'BANK' | 'EWALLET' | null;
  bankShortCode: string | null;
  accountNumber: string | null;
  accountName: string | null;
  ewalletProvider: string | null;
  /** Already normalised to 62… by the caller. */
  ewalletPhone: string | null;
}

export interface BeneficiaryRequest extends Destination {
  merchantId: string;
  channel: 'BANK' | 'EWALLET';
  label: string | null;
  isDefault: boolean;
}

/** Checks the destination in the order of a disbursement's rules, then saves it and queues its verification. */
export async function createBeneficiary(pool: Db, boss: PgBoss, r: BeneficiaryRequest): Promise<BeneficiaryRow> {
  let bankId: string | null = null;
  let provider: string | null = null;
  let label: string;
  if (r.channel === 'BANK') {
    if (!r.bankShortCode || !r.accountNumber) throw new ApiError('MISSING_BANK_INFO', 'bank_short_code and account_number are required for BANK');
    const bank = await findBankByShortCode(pool, r.bankShortCode);
    if (!bank) throw bankNotFound(r.bankShortCode);
    if (!bank.is_enabled) throw bankDisabled(bank.short_code);
    bankId = bank.id;
    label = r.label ?? `${bank.short_code} ${r.accountNumber}`;
  } else {
    if (!r.ewalletProvider || !r.ewalletPhone) throw new ApiError('MISSING_EWALLET_INFO');
    const wallet = await findEwalletByShortCode(pool, r.ewalletProvider);
    if (!wallet || !wallet.is_enabled) throw new ApiError('INVALID_BODY', `ewallet_provider: no enabled e-wallet has the code ${JSON.stringify(r.ewalletProvider)}; GET /v1/ewallets lists them`);
    provider = wallet.short_code;
    label = r.label ?? `${wallet.short_code} ${r.ewalletPhone}`;
  }
  const isBank = r.channel === 'BANK';
  return pool.transaction(async (tx) => {
    if (r.isDefault) {
      // Locked before the old default is read: a concurrent default create waits here, then
      // unsets ours (read committed re-reads), so the index never sees two.
      await lockMerchantDefaults(tx, r.merchantId);
      await unsetDefault(tx, r.merchantId);
    }
    const row = await insertBeneficiary(tx, {
      id: randomUUID(),
      merchantId: r.merchantId,
      label,
      channel: r.channel,
      bankId,
      accountNumber: isBank ? r.accountNumber : null,
      accountName: isBank ? r.accountName : null,
      ewalletProvider: provider,
      ewalletPhone: isBank ? null : r.ewalletPhone,
      isDefault: r.isDefault,
    });
    await sendJob(boss, 'beneficiary-verify', { beneficiary_id: row.id }, { db: inTransaction(tx) });
    return row;
  });
}

/**
 * The merchant's request to check the account again (POST /v1/beneficiaries/{id}/verify).
 * While a check is PENDING it is answered as it is and nothing is queued; otherwise (VERIFIED
 * or FAILED) a new check starts: PENDING, and its job queued in the same transaction.
 */
export async function requestVerification(pool: Pool, boss: PgBoss, merchantId: string, id: string): Promise<BeneficiaryRow> {
  return pool.transaction(async (tx) => {
    // Locked before its status is read: of two concurrent requests on a FAILED row, the second
    // waits for the first to commit and then finds it PENDING.
    const b = await lockMerchantBeneficiary(tx, merchantId, id);
    if (!b) throw new ApiError('BENEFICIARY_NOT_FOUND');
    if (b.verification_status === 'PENDING') return b;
    const restarted = await restartVerification(tx, b.id);
    await sendJob(boss, 'beneficiary-verify', { beneficiary_id: b.id }, { db: inTransaction(tx) });
    return restarted;
  });
}

/** Fails every check PENDING past the deadline, in batches (the scheduler's sweep); returns how many. */
export async function failOverdueChecks(pool: Pool, deadlineSeconds = VERIFY_DEADLINE_SECONDS, batch = 100): Promise<number> {
  let total = 0;
  for (;;) {
    const failed = await failOverdueVerifications(pool, deadlineSeconds, batch, NO_ATTEMPT_REASON);
    total += failed.length;
    if (failed.length < batch) return total;
  }
}

const sameName = (a: string, b: string) => a.replace(/\s+/g, ' ').toUpperCase() === b.replace(/\s+/g, ' ').toUpperCase();

const FIELDS = [
  ['channel', 'channel', (a: string, b: string) => a === b],
  ['bankShortCode', 'bank_short_code', (a: string, b: string) => a.toUpperCase() === b.toUpperCase()],
  ['accountNumber', 'account_number', (a: string, b: string) => a === b],
  ['accountName', 'account_name', sameName],
  ['ewalletProvider', 'ewallet_provider', (a: string, b: string) => a.toUpperCase() === b.toUpperCase()],
  ['ewalletPhone', 'ewallet_phone', (a: string, b: string) => a === b],
] as const;

/**
 * The destination of a disbursement that names a beneficiary (DESIGN 6): the saved fields fill
 * the request, and a field the request gives too must agree with the saved one (400
 * INVALID_BODY naming it). A bank beneficiary saved without account_name takes the request's,
 * else the name the vendor verified. One whose bank names another holder (NAME_MISMATCH) is
 * refused with 422 BENEFICIARY_NAME_MISMATCH unless the request accepts that
 * (accept_name_mismatch): a saved beneficiary is never edited, so the fix is to save it again
 * with the bank's name. Unknown, deleted or another merchant's: 404.
 */
export async function destinationOf(db: Db, merchantId: string, beneficiaryId: string, given: Destination, acceptNameMismatch = false): Promise<Destination> {
  const b = await findMerchantBeneficiary(db, merchantId, beneficiaryId);
  if (!b) throw new ApiError('BENEFICIARY_NOT_FOUND');
  if (!b.is_enabled) throw new ApiError('INVALID_BODY', 'beneficiary_id: the beneficiary is disabled');
  if (b.verification_status === 'FAILED') throw new ApiError('INVALID_BODY', 'beneficiary_id: the beneficiary failed account verification');
  if (b.verification_status === 'NAME_MISMATCH' && !acceptNameMismatch) {
    throw new ApiError(
      'BENEFICIARY_NAME_MISMATCH',
      `beneficiary_id: the bank names the account holder ${b.verified_name}, not ${b.account_name}. To pay ${b.verified_name}, delete this beneficiary (DELETE /v1/beneficiaries/${b.id}) and save it again with account_name "${b.verified_name}"; or send accept_name_mismatch: true to pay this account anyway`,
    );
  }
  const bank = b.bank_id ? await findBankById(db, b.bank_id) : null;
  const saved: Destination = {
    channel: b.channel,
    bankShortCode: bank?.short_code ?? null,
    accountNumber: b.account_number,
    accountName: b.account_name,
    ewalletProvider: b.ewallet_provider,
    ewalletPhone: b.ewallet_phone,
  };
  const fillsName = b.channel === 'BANK' && saved.accountName === null;
  for (const [key, field, same] of FIELDS) {
    const mine = given[key];
    const theirs = saved[key];
    if (mine === null || (key === 'accountName' && fillsName)) continue;
    if (theirs === null || !same(mine, theirs)) throw new ApiError('INVALID_BODY', `${field}: does not match the beneficiary`);
  }
  return fillsName ? { ...saved, accountName: given.accountName ?? b.verified_name } : saved;
}
