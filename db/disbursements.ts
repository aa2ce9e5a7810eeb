// The disbursement aggregate: payouts from a WALLET merchant's wallet (V1 and legacy alike).
//
// Invariants and why they hold:
// - No overdraft and no double debit: the wallet is row-locked (ledger lockMerchantAccounts)
//   before the daily limit and the balance are read, and the PENDING row, its debit of
//   total_debit and its execute job are written in that same transaction. The idempotency key
//   is unique per merchant, so a repeat inserts nothing and debits nothing.
// - The debit is returned exactly once: FAILED and REJECTED are final, reached only from a
//   locked non-final row, and post a reversal transfer that is unique per disbursement.
// - One send per disbursement and vendor: the worker records the vendor it is about to call
//   (vendor_call_pending) in a committed row first; a retry asks that vendor before anything
//   else, and vendors are idempotent on our ref_code.
// - Every status change appends an event and a webhook outbox row in its own transaction.
import { randomUUID } from 'node:crypto';
import type { PgBoss } from 'pg-boss';
import { ApiError, bankDisabled, bankNotFound, describeReceived } from './errors.ts';
import { lockMerchantAccounts, postTransfer } from './ledger.ts';
import { disbursementFee, walletDecision, withinDisbursementLimit } from './money-rules.ts';
import { findBankByShortCode, findEwalletByShortCode, type BankRow, type EwalletRow, type MasterDataCache } from './master-data.ts';
import type { MerchantMoneySettings } from './merchants.ts';
import type { PayoutCompletion } from './payout-outcome.ts';
import type { Db, Pool } from './pool.ts';
import { inTransaction, sendJob } from './queue.ts';
import { newRefCode } from './ref-codes.ts';
import {
  changeStatus,
  addToDailyTotal,
  findByIdempotencyKey,
  FINAL_STATUSES,
  insertDisbursement,
  lockDisbursement,
  type DisbursementRow,
  type StatusChange,
} from './disbursements.sql.ts';
import { boundToHolder, noteFinalWord, sourceOf, type Speaker } from './vendor-binding.ts';
import { enqueueWebhooks } from './webhooks.ts';
import { logger } from './logger.ts';
import { disbursementWebhookBody } from './present/disbursements.ts';

export interface DisbursementRequest {
  merchantId: string;
  api: 'V1' | 'LEGACY';
  source: string;
  idempotencyKey: string;
  channel: 'BANK' | 'EWALLET';
  bankShortCode: string | null;
  accountNumber: string | null;
  accountName: string | null;
  ewalletProvider: string | null;
  /** Already normalised to 62… by the caller (V1 and legacy accept different input forms). */
  ewalletPhone: string | null;
  /** As sent: checked here, in the contract's order, so it may be anything. */
  amount: unknown;
  notifyUrl: string | null;
  beneficiaryId: string | null;
  /** Pay even when the bank names another holder than account_name (a beneficiary's NAME_MISMATCH, or the vendor's inquiry). */
  acceptNameMismatch?: boolean;
}

/** Where the rules look things up: the database per request, or a bulk caller's own answers. */
export interface RuleLookups {
  /** The disbursement already holding the key, or null. */
  keyUsed(key: string): Promise<{ id: string; ref_code: string } | null> | { id: string; ref_code: string } | null;
  bank(shortCode: string): Promise<BankRow | null> | BankRow | null;
  ewallet(shortCode: string): Promise<EwalletRow | null> | EwalletRow | null;
}

/**
 * Checks a request in the contract's order (spec 4.3, issue 9): key not used, destination
 * fields, bank known and enabled, e-wallet known, amount a positive integer within the
 * per-transaction limit. The daily limit and the balance are checked under the wallet lock.
 */
export async function checkRequest(db: Db, settings: MerchantMoneySettings, r: DisbursementRequest, masterData?: MasterDataCache) {
  // Enabled banks and e-wallets come from the process's cache when it has one (dropped on any
  // change, in any process); only a code it lacks (unknown, or disabled) costs a read.
  const cached = <T extends { short_code: string }>(list: (() => Promise<readonly T[]>) | undefined, read: (code: string) => Promise<T | null>) =>
    async (code: string) => (list ? (await list()).find((x) => x.short_code === code.toUpperCase()) : undefined) ?? read(code);
  // The key comes first in the contract's order, but a request that passes every other rule
  // needs no read for it: createDisbursement's insert finds a used key on the unique index and
  // names its holder. So the key is read only when another rule refuses, and a used key still
  // answers 409 before that refusal (one round trip fewer per accepted create).
  try {
    return await checkRules(settings, r, {
      keyUsed: () => null,
      bank: cached(masterData && (() => masterData.banks.get()), (code) => findBankByShortCode(db, code)),
      ewallet: cached(masterData && (() => masterData.ewallets.get()), (code) => findEwalletByShortCode(db, code)),
    });
  } catch (err) {
    const holder = err instanceof ApiError ? await findByIdempotencyKey(db, r.merchantId, r.idempotencyKey) : null;
    throw holder ? duplicateOf(holder, r, settings) : err;
  }
}

/** 409 naming the disbursement that holds the key, so a client that lost its answer can read it. */
function duplicateKey(holder: { id: string; ref_code: string }) {
  return new ApiError('DUPLICATE_IDEMPOTENCY_KEY', `A disbursement with this idempotency_key exists: id ${holder.id}, ref_code ${holder.ref_code}`);
}

/**
 * The 409 of a used key, saying whether the disbursement holding it is this request: the same
 * amount and destination (what the client sends) is a retry of a request whose answer was lost;
 * anything else is a key used twice, a bug in the client. The fee is compared too, but is not
 * the client's to send: a fee changed since the first request does not make the retry another
 * request.
 */
export function duplicateOf(holder: DisbursementRow, r: DisbursementRequest, settings: MerchantMoneySettings) {
  const upper = (v: string | null) => v?.toUpperCase() ?? null;
  const destination = r.channel === 'BANK'
    ? holder.channel === 'BANK' && upper(holder.bank_short_code) === upper(r.bankShortCode)
      && holder.account_number === r.accountNumber && holder.account_name === r.accountName
    : holder.channel === 'EWALLET' && upper(holder.ewallet_provider) === upper(r.ewalletProvider) && holder.ewallet_phone === r.ewalletPhone;
  const amount = holder.request_amount === r.amount;
  const fee = holder.fee === (r.channel === 'BANK' ? settings.fee_bank : settings.fee_ewallet);
  const same = amount && destination;
  const differing = [amount ? null : 'amount', destination ? null : 'destination'].filter(Boolean).join(' and ');
  const error = new ApiError('DUPLICATE_IDEMPOTENCY_KEY', same
    ? `A disbursement with this idempotency_key exists and matches this request (same amount and destination): ${holder.ref_code} (${holder.status}) is your earlier request; read it instead of retrying`
    : `A disbursement with this idempotency_key exists for another request (its ${differing} differ): ${holder.ref_code} (${holder.status}); use a new idempotency_key for a new disbursement`);
  error.details = {
    id: holder.id,
    ref_code: holder.ref_code,
    status: holder.status,
    same_request: same,
    same_amount: amount,
    same_destination: destination,
    same_fee: fee,
  };
  return error;
}

/** 422 saying what the wallet holds and what this disbursement needs (amount plus fee). */
function insufficientBalance(balance: number, row: { request_amount: number; fee: number; total_debit: number }) {
  return new ApiError(
    'INSUFFICIENT_BALANCE',
    `Balance is below amount plus fee: ${balance} available, ${row.total_debit} needed (amount ${row.request_amount} + fee ${row.fee})`,
  );
}

/** checkRequest's rules, for any source of lookups (the CSV import answers them in bulk). */
export async function checkRules(settings: MerchantMoneySettings, r: DisbursementRequest, lookups: RuleLookups) {
  const holder = await lookups.keyUsed(r.idempotencyKey);
  if (holder) throw duplicateKey(holder);
  let bank: BankRow | null = null;
  if (r.channel === 'BANK') {
    if (!r.accountNumber || !r.accountName) throw new ApiError('MISSING_BANK_INFO');
    if (!r.bankShortCode) throw new ApiError('MISSING_BANK_INFO', 'bank_short_code, account_number and account_name are required for BANK');
    bank = await lookups.bank(r.bankShortCode);
    if (!bank) throw bankNotFound(r.bankShortCode);
    if (!bank.is_enabled) throw bankDisabled(bank.short_code);
  } else {
    if (!r.ewalletProvider || !r.ewalletPhone) throw new ApiError('MISSING_EWALLET_INFO');
    const wallet = await lookups.ewallet(r.ewalletProvider);
    if (!wallet || !wallet.is_enabled) throw new ApiError('INVALID_BODY', `ewallet_provider: no enabled e-wallet has the code ${JSON.stringify(r.ewalletProvider)}; GET /v1/ewallets lists them`);
  }
  const amount = r.amount;
  if (typeof amount !== 'number' || !Number.isSafeInteger(amount) || amount < 1) {
    throw new ApiError('INVALID_BODY', `amount: must be a positive integer number of Rupiah; got ${describeReceived(amount)}`);
  }
  if (!withinDisbursementLimit(settings, amount)) throw new ApiError('AMOUNT_EXCEEDS_LIMIT');
  const fee = disbursementFee(settings, r.channel);
  return { amount, fee, bank };
}

/** The destination as stored: only the chosen channel's fields, the bank as it is today. */
export function destinationColumns(
  r: Pick<DisbursementRequest, 'channel' | 'accountNumber' | 'accountName' | 'ewalletProvider' | 'ewalletPhone'>,
  bank: { id: string; short_code: string; name: string } | null,
) {
  return {
    bankId: bank?.id ?? null,
    bankShortCode: bank?.short_code ?? null,
    bankName: bank?.name ?? null,
    accountNumber: r.channel === 'BANK' ? r.accountNumber : null,
    accountName: r.channel === 'BANK' ? r.accountName : null,
    ewalletProvider: r.channel === 'EWALLET' ? r.ewalletProvider!.toUpperCase() : null,
    ewalletPhone: r.channel === 'EWALLET' ? r.ewalletPhone : null,
  };
}

/**
 * Creates a disbursement in one transaction: inserts the row (PENDING, or IN_REVIEW above the
 * merchant's review threshold) and queues its execution, then locks the wallet, checks the
 * daily limit and the balance and debits total_debit into DISBURSEMENTS_IN_FLIGHT.
 */
export async function createDisbursement(pool: Pool, boss: PgBoss, settings: MerchantMoneySettings, r: DisbursementRequest, masterData?: MasterDataCache): Promise<DisbursementRow> {
  const { amount, fee, bank } = await checkRequest(pool, settings, r, masterData);
  const id = randomUUID();
  return pool.transaction(async (tx) => {
    // The row, its event and its job are written first, before the wallet lock: concurrent
    // creates of one merchant then queue on the lock only for the checks and the transfer. A
    // key raced by a concurrent request waits on the unique index and is a duplicate (409),
    // whatever the balance left by the winner; a refusal below rolls everything back.
    const review = settings.review_threshold !== null && amount > settings.review_threshold;
    const row = await insertDisbursement(
      tx,
      {
        id,
        merchantId: r.merchantId,
        refCode: newRefCode('DSB'),
        idempotencyKey: r.idempotencyKey,
        api: r.api,
        source: r.source,
        channel: r.channel,
        ...destinationColumns(r, bank),
        beneficiaryId: r.beneficiaryId,
        requestAmount: amount,
        fee,
        notifyUrl: r.notifyUrl,
        status: review ? 'IN_REVIEW' : 'PENDING',
        acceptNameMismatch: r.acceptNameMismatch ?? false,
      },
      r.api === 'V1' ? 'api' : 'legacy-api',
    );
    // Taken by a request that committed meanwhile (the insert waited for it): name it.
    if (!row) {
      const holder = await findByIdempotencyKey(tx, r.merchantId, r.idempotencyKey);
      throw holder ? duplicateOf(holder, r, settings) : new ApiError('DUPLICATE_IDEMPOTENCY_KEY');
    }
    if (!review) await sendJob(boss, 'disbursement-execute', { disbursement_id: row.id }, { db: inTransaction(tx) });

    // Under the wallet lock until commit: the day's running total, the balance, the transfer.
    const accounts = await lockMerchantAccounts(tx, r.merchantId, ['WALLET', 'DISBURSEMENTS_IN_FLIGHT']);
    // The day's running total, this row included (a refusal below rolls the addition back).
    const disbursedToday = (await addToDailyTotal(tx, r.merchantId, amount)) - amount;
    const balance = accounts.get('WALLET')!.balance;
    const refusal = walletDecision(settings, { disbursedToday, balance }, { amount, fee });
    if (refusal === 'DAILY_LIMIT_EXCEEDED') throw new ApiError('DAILY_LIMIT_EXCEEDED');
    if (refusal === 'INSUFFICIENT_BALANCE') throw insufficientBalance(balance, row);
    await postTransfer(
      tx,
      {
        merchantId: r.merchantId,
        kind: 'DISBURSEMENT',
        reference: { type: 'DISBURSEMENT', id: row.id, refCode: row.ref_code },
        description: `Disbursement ${row.ref_code} (amount ${amount}, fee ${fee})`,
        legs: { WALLET: -row.total_debit, DISBURSEMENTS_IN_FLIGHT: row.total_debit },
      },
      accounts,
    );
    return row;
  });
}

async function notify(tx: Db, boss: PgBoss, d: DisbursementRow) {
  const event = `disbursement.${d.status.toLowerCase()}`;
  await enqueueWebhooks(tx, boss, [{ merchantId: d.merchant_id, orderId: null, disbursementId: d.id, event, url: d.notify_url, body: disbursementWebhookBody(d, event) }]);
}

/** A status change of a locked row, with its webhook. */
export async function moveDisbursement(
  tx: Db,
  boss: PgBoss,
  d: DisbursementRow,
  change: StatusChange,
  event: { source: string; detail?: unknown },
): Promise<DisbursementRow> {
  const moved = await changeStatus(tx, d.id, change, event);
  if (moved.status !== d.status) await notify(tx, boss, moved);
  return moved;
}

/**
 * The final word on a disbursement: a vendor's (callback or reconciliation), or Kasir's own (no
 * vendor left, an operator). SUCCESS: the money left through the vendor, the fee is revenue.
 * FAILED: the debit goes back to the wallet. A repeated or late report on a final disbursement
 * changes nothing; one that says the opposite of its final state is recorded as a
 * contradiction. A vendor's word on a disbursement another vendor holds changes nothing and
 * is recorded (db/vendor-binding.ts).
 */
export async function completeDisbursement(
  tx: Db,
  boss: PgBoss,
  where: { id: string } | { refCode: string },
  outcome: PayoutCompletion,
  speaker: Speaker,
  /** Added to the status event's detail (an operator's reason and evidence). */
  detail: Record<string, unknown> = {},
): Promise<'completed' | 'already_final' | 'contradicted' | 'not_its_record' | 'unknown'> {
  const d = await lockDisbursement(tx, where);
  if (!d) return 'unknown';
  const held = { type: 'DISBURSEMENT' as const, vendor_code: d.vendor_code };
  const word = {
    recordId: d.id,
    reference: d.ref_code,
    kasirStatus: d.status,
    vendorStatus: outcome.status,
    detail: { vendor_disbursement_id: outcome.vendorDisbursementId, ...(outcome.status === 'FAILED' ? { reason: outcome.reason } : {}) },
  };
  if (!(await boundToHolder(tx, speaker, held, word))) return 'not_its_record';
  if (FINAL_STATUSES.has(d.status)) {
    const opposite = d.status === 'SUCCESS' ? outcome.status === 'FAILED' : outcome.status === 'SUCCESS';
    return (await noteFinalWord(tx, speaker, held, word, opposite)) ? 'contradicted' : 'already_final';
  }
  const source = sourceOf(speaker);
  const vendorId = outcome.vendorDisbursementId ?? d.vendor_disbursement_id;
  if (outcome.status === 'SUCCESS') {
    await postTransfer(tx, {
      merchantId: d.merchant_id,
      kind: 'DISBURSEMENT_COMPLETED',
      reference: { type: 'DISBURSEMENT', id: d.id, refCode: d.ref_code },
      description: `Disbursement ${d.ref_code} delivered`,
      legs: { DISBURSEMENTS_IN_FLIGHT: -d.total_debit, VENDOR_CLEARING: d.request_amount, FEE_REVENUE: d.fee },
    });
    await moveDisbursement(tx, boss, d, { status: 'SUCCESS', vendorDisbursementId: vendorId, vendorCallPending: false }, { source, ...(Object.keys(detail).length ? { detail } : {}) });
  } else {
    await reverse(tx, d, `Disbursement ${d.ref_code} failed: ${outcome.reason}`);
    await moveDisbursement(
      tx,
      boss,
      d,
      { status: 'FAILED', vendorDisbursementId: vendorId, vendorCallPending: false, failureReason: outcome.reason },
      { source, detail: { reason: outcome.reason, ...detail } }
    );
  }
  return 'completed';
}

/**
 * The vendor reversed a payout that had succeeded (Xendit's REVERSED: the bank returned the
 * transfer, and the money is back in the platform's balance at that vendor), as the vendor's own
 * read shows it (api/payment-hints.ts, reconciliation). The spec's statuses have no word for it,
 * so it is FAILED with failure_reason REVERSED…, and the merchant gets the usual
 * disbursement.failed webhook (docs/decisions.md). A SUCCESS disbursement gets back everything
 * DISBURSEMENT_COMPLETED took (DISBURSEMENT_RETURNED, unique per disbursement: once, whoever says
 * it first); one still in flight simply fails; one already FAILED or REJECTED changes nothing.
 */
export async function returnDisbursement(
  tx: Db,
  boss: PgBoss,
  where: { id: string },
  outcome: { vendorDisbursementId: string | null; reason: string },
  speaker: Speaker,
): Promise<'completed' | 'already_final' | 'not_its_record' | 'unknown'> {
  const d = await lockDisbursement(tx, where);
  if (!d) return 'unknown';
  if (d.status !== 'SUCCESS') {
    const failed = await completeDisbursement(tx, boss, where, { status: 'FAILED', vendorDisbursementId: outcome.vendorDisbursementId, reason: outcome.reason }, speaker);
    // A FAILED or REJECTED one already holds its money back: a reversal of it is no news.
    return failed === 'contradicted' ? 'already_final' : failed;
  }
  const held = { type: 'DISBURSEMENT' as const, vendor_code: d.vendor_code };
  const word = { recordId: d.id, reference: d.ref_code, kasirStatus: d.status, vendorStatus: 'REVERSED', detail: { vendor_disbursement_id: outcome.vendorDisbursementId, reason: outcome.reason } };
  if (!(await boundToHolder(tx, speaker, held, word))) return 'not_its_record';
  await postTransfer(tx, {
    merchantId: d.merchant_id,
    kind: 'DISBURSEMENT_RETURNED',
    reference: { type: 'DISBURSEMENT', id: d.id, refCode: d.ref_code },
    description: `Disbursement ${d.ref_code} reversed by the vendor after delivery: ${outcome.reason}`,
    legs: { VENDOR_CLEARING: -d.request_amount, FEE_REVENUE: -d.fee, WALLET: d.total_debit },
  });
  await moveDisbursement(tx, boss, d, { status: 'FAILED', failureReason: outcome.reason }, { source: sourceOf(speaker), detail: { reason: outcome.reason, reversed_after: 'SUCCESS', vendor_disbursement_id: outcome.vendorDisbursementId } });
  logger.warn({ disbursement: d.ref_code, merchant: d.merchant_id, amount: d.request_amount, source: sourceOf(speaker) }, 'a delivered disbursement was reversed by its vendor: its debit returned to the wallet');
  return 'completed';
}

function reverse(tx: Db, d: DisbursementRow, description: string) {
  return postTransfer(tx, {
    merchantId: d.merchant_id,
    kind: 'DISBURSEMENT_REVERSAL',
    reference: { type: 'DISBURSEMENT', id: d.id, refCode: d.ref_code },
    description,
    legs: { DISBURSEMENTS_IN_FLIGHT: -d.total_debit, WALLET: d.total_debit },
  });
}

export class ReviewRefused extends Error {}

/** Operator decision on an IN_REVIEW disbursement: approve sends it, reject returns the debit. */
export async function reviewDisbursement(
  pool: Pool,
  boss: PgBoss,
  id: string,
  decision: 'approve' | 'reject',
  reason: string | null,
): Promise<DisbursementRow> {
  return pool.transaction(async (tx) => {
    const d = await lockDisbursement(tx, { id });
    if (!d) throw new ReviewRefused(`no disbursement ${id}`);
    if (d.status !== 'IN_REVIEW') throw new ReviewRefused(`disbursement ${d.ref_code} is ${d.status}, not IN_REVIEW`);
    if (decision === 'approve') {
      const moved = await moveDisbursement(tx, boss, d, { status: 'PENDING' }, { source: 'operator', detail: { decision } });
      await sendJob(boss, 'disbursement-execute', { disbursement_id: d.id }, { db: inTransaction(tx) });
      return moved;
    }
    const why = reason ?? 'rejected by the platform';
    await reverse(tx, d, `Disbursement ${d.ref_code} rejected: ${why}`);
    return moveDisbursement(tx, boss, d, { status: 'REJECTED', failureReason: why }, { source: 'operator', detail: { decision, reason: why } });
  });
}
