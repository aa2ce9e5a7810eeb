// CSV imports of disbursements: many disbursements from one file, with the rules, the money and
// the queueing of createDisbursement (db/disbursements.ts), decided for the file as a whole.
//
// Invariants and why they hold:
// - Same rules as one request: every row goes through checkRules, in the contract's order, with
//   the same lookups answered once per distinct bank or e-wallet code instead of once per row.
// - One balance decision, no overdraft, no double debit: one transaction locks the wallet once
//   (every disbursement writer takes that lock before inserting), reads the day's total and the
//   balance, and accepts valid rows in file order while their running total_debit fits both;
//   the first row that does not fit stops acceptance, and every later valid row is refused
//   with the same code. The rows, one DISBURSEMENT transfer each (so completion and reversal
//   work per disbursement as for the JSON endpoint) and their execute jobs are written in that
//   transaction, set-based, or not at all.
// - A retried import creates nothing twice: row n's key is `<prefix>-<n>`, unique per merchant;
//   the keys already used are read under the wallet lock, so a concurrent import of the same
//   file waits for the first and then finds its rows imported.
// - Every import is on record with its uploader, counts and refused rows (code and message), in
//   the same transaction as what it accepted, so GET /v1/disbursements/imports shows exactly
//   what the POST answered.
import { randomUUID } from 'node:crypto';
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { PgBoss } from 'pg-boss';
import { checkRules, destinationColumns, type DisbursementRequest } from './disbursements.ts';
import { addToDailyTotal, disbursedToday, type DisbursementStatus } from './disbursements.sql.ts';
import { findByIdempotencyKeys, insertImport, insertImportedDisbursements, insertRefusals, type ExistingDisbursement, type NewImport } from './disbursement-imports.sql.ts';
import { ApiError, type ErrorCode } from './errors.ts';
import { lockMerchantAccounts, postTransfersInBulk, type Transfer } from './ledger.ts';
import { findBankByShortCode, findEwalletByShortCode, type BankRow, type EwalletRow } from './master-data.ts';
import type { MerchantMoneySettings } from './merchants.ts';
import type { Db, Pool } from './pool.ts';
import { inTransaction, type Payload } from './queue.ts';
import { newRefCodes } from './ref-codes.ts';

/** A row of the file as the API read it: a request, a problem found reading it, or blank. */
export type ImportRow =
  | { row: number; key: string; request: DisbursementRequest }
  | { row: number; key: string; error: ApiError }
  | { row: number; key: string; blank: true };

export type RowOutcome =
  | { row: number; key: string; status: 'ACCEPTED' | 'ALREADY_IMPORTED'; disbursement: { id: string; refCode: string; status: DisbursementStatus; totalDebit: number } }
  | { row: number; key: string; status: 'REFUSED'; error: { code: ErrorCode; message: string } }
  | { row: number; key: string; status: 'SKIPPED' };

export interface ImportResult {
  importId: string;
  prefix: string;
  rows: number;
  accepted: number;
  alreadyImported: number;
  refused: number;
  skipped: number;
  /** Accepted rows whose execution was queued (the others wait IN_REVIEW). */
  queued: number;
  totalDebit: number;
  outcomes: RowOutcome[];
}

export interface ImportInput {
  merchantId: string;
  prefix: string;
  fileName: string | null;
  fileSha256: string;
  fileBytes: number;
  uploadedBy: NewImport['uploadedBy'];
  rows: readonly ImportRow[];
}

/**
 * Rows per statement (serialising a statement's arrays holds the event loop: ~40 ms for 5,000
 * rows) and per stretch of synchronous work: keeps the API's other requests moving.
 */
const CHUNK = 2_000;
const YIELD_EVERY = 1_000;

interface Candidate {
  index: number;
  request: DisbursementRequest;
  amount: number;
  fee: number;
  bank: BankRow | null;
}

/** Memoised by code: a file names a handful of banks and e-wallets, many times over. */
function memo<T>(find: (code: string) => Promise<T>) {
  const seen = new Map<string, Promise<T>>();
  return (code: string) => {
    let found = seen.get(code);
    if (!found) seen.set(code, (found = find(code)));
    return found;
  };
}

/** The same destination and amount: a retry of the row, not another payment under its key. */
function sameRow(existing: ExistingDisbursement, r: DisbursementRequest): boolean {
  return (
    existing.channel === r.channel &&
    existing.request_amount === r.amount &&
    (r.channel === 'BANK'
      ? existing.bank_short_code === r.bankShortCode?.toUpperCase() && existing.account_number === r.accountNumber && existing.account_name === r.accountName
      : existing.ewallet_provider === r.ewalletProvider?.toUpperCase() && existing.ewallet_phone === r.ewalletPhone)
  );
}

function refused(row: ImportRow, code: ErrorCode, message: string): RowOutcome {
  return { row: row.row, key: row.key, status: 'REFUSED', error: { code, message } };
}

type Accepted = Candidate & { id: string; refCode: string; status: 'PENDING' | 'IN_REVIEW' };

/**
 * Imports the rows in one transaction: locks the wallet, checks every row, decides the balance
 * for the file, writes what was accepted and records the import. Refusals are outcomes, not
 * errors: whatever the rows, the import commits (possibly with nothing accepted).
 */
export async function importDisbursements(pool: Pool, boss: PgBoss, settings: MerchantMoneySettings, input: ImportInput): Promise<ImportResult> {
  const importId = randomUUID();
  return pool.transaction(async (tx) => {
    // The wallet lock first: the keys, the day's total and the balance read below cannot change
    // until commit, whoever else disburses for this merchant meanwhile.
    const accounts = await lockMerchantAccounts(tx, input.merchantId, ['WALLET', 'DISBURSEMENTS_IN_FLIGHT']);
    const { outcomes, candidates } = await checkRows(tx, settings, input);
    const accepted = await decide(settings, input, outcomes, candidates, {
      today: await disbursedToday(tx, input.merchantId),
      balance: accounts.get('WALLET')!.balance,
    });

    const count = (status: RowOutcome['status']) => outcomes.filter((o) => o.status === status).length;
    const result: ImportResult = {
      importId,
      prefix: input.prefix,
      rows: input.rows.length,
      accepted: accepted.length,
      alreadyImported: count('ALREADY_IMPORTED'),
      refused: count('REFUSED'),
      skipped: count('SKIPPED'),
      queued: accepted.filter((d) => d.status === 'PENDING').length,
      totalDebit: accepted.reduce((sum, d) => sum + d.amount + d.fee, 0),
      outcomes,
    };
    await insertImport(tx, {
      id: importId,
      merchantId: input.merchantId,
      prefix: input.prefix,
      fileName: input.fileName,
      fileSha256: input.fileSha256,
      fileBytes: input.fileBytes,
      rows: result.rows,
      accepted: result.accepted,
      alreadyImported: result.alreadyImported,
      refused: result.refused,
      skipped: result.skipped,
      totalDebit: result.totalDebit,
      uploadedBy: input.uploadedBy,
    });
    await writeRefusals(tx, importId, outcomes);
    if (accepted.length) await writeAccepted(tx, boss, input.merchantId, importId, accepted, accounts);
    return result;
  });
}

/** Every row through the rules, in file order; a used key is answered from the row it holds. */
async function checkRows(tx: Db, settings: MerchantMoneySettings, input: ImportInput) {
  const keys = input.rows.flatMap((r) => ('request' in r ? [r.key] : []));
  const existing = new Map<string, ExistingDisbursement>();
  for (let start = 0; start < keys.length; start += CHUNK) {
    for (const d of await findByIdempotencyKeys(tx, input.merchantId, keys.slice(start, start + CHUNK))) existing.set(d.idempotency_key, d);
  }
  const lookups = {
    keyUsed: () => null, // answered above from the rows that hold the keys
    bank: memo<BankRow | null>((code) => findBankByShortCode(tx, code)),
    ewallet: memo<EwalletRow | null>((code) => findEwalletByShortCode(tx, code)),
  };
  const outcomes: RowOutcome[] = new Array(input.rows.length);
  const candidates: Candidate[] = [];
  for (const [index, row] of input.rows.entries()) {
    if (index % YIELD_EVERY === YIELD_EVERY - 1) await nextTurn();
    if ('blank' in row) {
      outcomes[index] = { row: row.row, key: row.key, status: 'SKIPPED' };
      continue;
    }
    if ('error' in row) {
      outcomes[index] = refused(row, row.error.code, row.error.message);
      continue;
    }
    const used = existing.get(row.key);
    if (used) {
      outcomes[index] = sameRow(used, row.request)
        ? { row: row.row, key: row.key, status: 'ALREADY_IMPORTED', disbursement: { id: used.id, refCode: used.ref_code, status: used.status, totalDebit: used.total_debit } }
        : refused(row, 'DUPLICATE_IDEMPOTENCY_KEY', `${row.key} is already used by ${used.ref_code}, for another destination or amount`);
      continue;
    }
    try {
      candidates.push({ index, request: row.request, ...(await checkRules(settings, row.request, lookups)) });
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      outcomes[index] = refused(row, err.code, err.message);
    }
  }
  return { outcomes, candidates };
}

/**
 * The balance decision, in file order: each valid row against the daily limit (the rows
 * accepted above it included) and then the balance left, as for one request; the first that
 * does not fit stops the rest, which are refused with its code.
 */
async function decide(settings: MerchantMoneySettings, input: ImportInput, outcomes: RowOutcome[], candidates: Candidate[], start: { today: number; balance: number }) {
  let { today, balance } = start;
  let stop: { code: 'DAILY_LIMIT_EXCEEDED' | 'INSUFFICIENT_BALANCE'; row: number } | null = null;
  const accepted: Accepted[] = [];
  const refCodes = newRefCodes('DSB', candidates.length);
  for (const [n, c] of candidates.entries()) {
    if (n % YIELD_EVERY === YIELD_EVERY - 1) await nextTurn();
    const row = input.rows[c.index];
    const total = c.amount + c.fee;
    if (stop) {
      const what = stop.code === 'INSUFFICIENT_BALANCE' ? 'balance' : 'daily limit';
      outcomes[c.index] = refused(row, stop.code, `not accepted: row ${stop.row} was the first the ${what} could not cover, and rows are accepted in file order`);
    } else if (today + c.amount > settings.daily_disbursement_limit) {
      stop = { code: 'DAILY_LIMIT_EXCEEDED', row: row.row };
      outcomes[c.index] = refused(row, stop.code, `today's disbursements so far (${today}, rows above included) plus this amount (${c.amount}) exceed the daily limit (${settings.daily_disbursement_limit})`);
    } else if (balance < total) {
      stop = { code: 'INSUFFICIENT_BALANCE', row: row.row };
      outcomes[c.index] = refused(row, stop.code, `the balance left after the rows above (${balance}) is below this row's amount plus fee (${total})`);
    } else {
      today += c.amount;
      balance -= total;
      const status = settings.review_threshold !== null && c.amount > settings.review_threshold ? 'IN_REVIEW' : 'PENDING';
      const d: Accepted = { ...c, id: randomUUID(), refCode: refCodes[n], status };
      accepted.push(d);
      outcomes[c.index] = { row: row.row, key: row.key, status: 'ACCEPTED', disbursement: { id: d.id, refCode: d.refCode, status, totalDebit: total } };
    }
  }
  return accepted;
}

/** The refused rows' reasons, CHUNK rows per statement. */
async function writeRefusals(tx: Db, importId: string, outcomes: readonly RowOutcome[]) {
  const refusals = outcomes.flatMap((o) => (o.status === 'REFUSED' ? [{ row: o.row, key: o.key, code: o.error.code, message: o.error.message }] : []));
  for (let start = 0; start < refusals.length; start += CHUNK) await insertRefusals(tx, importId, refusals.slice(start, start + CHUNK));
}

/** What createDisbursement writes for one, set-based: rows and events, debits, execute jobs. */
async function writeAccepted(tx: Db, boss: PgBoss, merchantId: string, importId: string, accepted: Accepted[], accounts: Awaited<ReturnType<typeof lockMerchantAccounts>>) {
  for (let start = 0; start < accepted.length; start += CHUNK) {
    await insertImportedDisbursements(
      tx,
      { merchantId, importId, source: 'IMPORT', eventSource: 'import' },
      accepted.slice(start, start + CHUNK).map(({ id, refCode, status, request: r, amount, fee, bank }) => ({
        id,
        refCode,
        idempotencyKey: r.idempotencyKey,
        channel: r.channel,
        ...destinationColumns(r, bank),
        requestAmount: amount,
        fee,
        notifyUrl: r.notifyUrl,
        status,
      })),
    );
  }
  // One DISBURSEMENT transfer per disbursement, exactly as createDisbursement posts it, so that
  // completion and reversal work per disbursement.
  const transfers: Transfer[] = accepted.map((d) => ({
    merchantId,
    kind: 'DISBURSEMENT',
    reference: { type: 'DISBURSEMENT', id: d.id, refCode: d.refCode },
    description: `Disbursement ${d.refCode} (amount ${d.amount}, fee ${d.fee})`,
    legs: { WALLET: -(d.amount + d.fee), DISBURSEMENTS_IN_FLIGHT: d.amount + d.fee },
  }));
  await postTransfersInBulk(tx, merchantId, transfers, accounts);
  // The day's running total grows by what the file adds, as for single creates.
  await addToDailyTotal(tx, merchantId, accepted.reduce((sum, d) => sum + d.amount, 0));
  // The ids are the UUIDs made in decide: the payload contract (db/queue.ts) holds without a parse per job.
  const jobs = accepted.filter((d) => d.status === 'PENDING').map((d) => ({ data: { disbursement_id: d.id } satisfies Payload<'disbursement-execute'> }));
  for (let start = 0; start < jobs.length; start += CHUNK) {
    await boss.insert('disbursement-execute', jobs.slice(start, start + CHUNK), { db: inTransaction(tx) });
  }
}
