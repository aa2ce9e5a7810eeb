// CSV imports of disbursements: many disbursements from one file, with the rules, the money and
// the queueing of createDisbursement (db/disbursements.ts), decided for the file as a whole.
//
// Invariants and why they hold:
// - Same rules as one request: every row goes through checkRules, in the contract's order, with
//   the same lookups answered once per distinct bank or e-wallet code instead of once per row.
// - All or nothing: the file is one transaction; the rows, their events and jobs, the refusals,
//   the debit, the day's running total and the import record commit together or not at all.
// - One balance decision, no overdraft: the decision is taken under the wallet lock (every
//   writer of a disbursement or of the wallet takes it), from the balance and the day's running
//   total read there, and accepts valid rows in file order while their running total_debit fits
//   both; the first row that does not fit stops acceptance, and every later valid row is refused
//   with the same code. What the decision accepts is paid by one DISBURSEMENT_IMPORT transfer
//   (WALLET → DISBURSEMENTS_IN_FLIGHT, referring to the import); each disbursement then
//   completes or is reversed on its own from DISBURSEMENTS_IN_FLIGHT, as a single create does.
// - A short lock: the rows, events, jobs and refusals are written before the lock, in the same
//   transaction, for the decision the balance as last committed allows (a forecast). Under the
//   lock the decision is taken again; when it differs, the lock is given back (a savepoint rolled
//   back) and the writes are brought to the new decision outside it. So the lock covers a few
//   statements whatever the file's size, and payment credits and single creates of the merchant
//   wait for those, not for the file. From the third attempt on, a smaller decision is applied
//   under the lock (deletes of this transaction's own rows, which wait for nobody) so the loop
//   ends; a larger one always goes back outside, and can only grow up to the file's valid rows.
// - No deadlock: while holding the wallet lock the import never inserts a row another request
//   may hold (a key), so it waits for nobody there; before the lock it only waits for keys.
// - A retried import creates nothing twice: row n's key is `<prefix>-<n>`, unique per merchant.
//   Keys in committed rows are read first; a key a concurrent request holds is found when the
//   insert skips it (after that request commits), and that row is answered from its holder.
//   Under the lock, if the wallet moved since the keys were read (every disbursement commits
//   with a wallet posting), the keys of the rows not written are read again.
// - Every import is on record with its uploader, counts and refused rows (code and message), in
//   the same transaction as what it accepted, so GET /v1/disbursements/imports shows exactly
//   what the POST answered.
import { randomUUID } from 'node:crypto';
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { PgBoss } from 'pg-boss';
import { checkRules, destinationColumns, type DisbursementRequest } from './disbursements.ts';
import { addToDailyTotal, disbursedToday, type DisbursementStatus } from './disbursements.sql.ts';
import {
  checkDeferredConstraints,
  deleteRefusals,
  deleteRefusalsWithCodes,
  deleteStagedDisbursements,
  findByIdempotencyKeys,
  insertImport,
  insertImportedDisbursements,
  insertRefusals,
  type ExistingDisbursement,
  type NewImport,
} from './disbursement-imports.sql.ts';
import { ApiError, type ErrorCode } from './errors.ts';
import { lockMerchantAccounts, peekWallet, postTransfer } from './ledger.ts';
import { walletDecision } from './money-rules.ts';
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

function refused(row: ImportRow, code: ErrorCode, message: string): Extract<RowOutcome, { status: 'REFUSED' }> {
  return { row: row.row, key: row.key, status: 'REFUSED', error: { code, message } };
}

type Staged = Candidate & { id: string; refCode: string; status: 'PENDING' | 'IN_REVIEW' };

/** Refused after the first row that did not fit: the codes the balance decision gives. */
const STOP_CODES = ['DAILY_LIMIT_EXCEEDED', 'INSUFFICIENT_BALANCE'] as const;
type StopCode = (typeof STOP_CODES)[number];

/**
 * A balance decision: the first `accepted` candidates fit; the next one (if any) is the stop,
 * refused with `code` and the figures it was refused on.
 */
interface Decision {
  accepted: number;
  stop: { code: StopCode; today: number; balance: number } | null;
}

/** Attempts at which any change of decision gives the lock back (see the invariants above). */
const FREE_REPLANS = 2;

/** Thrown out of the locked savepoint: the decision changed; write it outside the lock and try again. */
class Replan extends Error {}

/** The import as written so far in its transaction. */
interface ImportState {
  boss: PgBoss;
  settings: MerchantMoneySettings;
  input: ImportInput;
  importId: string;
  outcomes: RowOutcome[];
  /** Valid rows not answered from a holder of their key, in file order, ids assigned. */
  candidates: Staged[];
  /** How many candidates (a prefix) have their row, event and job written. */
  written: number;
  /** The stop whose later rows' refusals are written (code, and the stop's file row). */
  tail: { code: StopCode; row: number } | null;
  /** Rows with a request that the rules refused (file indexes): a key taken later answers them instead. */
  ruleRefused: number[];
  /** Rows whose outcome changed after their refusal (if any) was written. */
  stale: Set<number>;
  /** The wallet's version when the keys were last read. */
  keysReadAt: number;
}

/**
 * Imports the rows in one transaction: checks every row, writes what the balance allows, then
 * locks the wallet for the decision, the debit and the import record. Refusals are outcomes,
 * not errors: whatever the rows, the import commits (possibly with nothing accepted).
 */
export async function importDisbursements(pool: Pool, boss: PgBoss, settings: MerchantMoneySettings, input: ImportInput): Promise<ImportResult> {
  const importId = randomUUID();
  const { state, decision } = await pool.transaction(async (tx) => {
    // Read before the keys: a disbursement committed after this moves the wallet's version.
    const { version } = await peekWallet(tx, input.merchantId);
    const { outcomes, candidates, ruleRefused } = await checkRows(tx, settings, input);
    const refCodes = newRefCodes('DSB', candidates.length);
    const state: ImportState = {
      boss, settings, input, importId, outcomes,
      candidates: candidates.map((c, n) => ({
        ...c, id: randomUUID(), refCode: refCodes[n],
        status: settings.review_threshold !== null && c.amount > settings.review_threshold ? 'IN_REVIEW' : 'PENDING',
      })),
      written: 0,
      ruleRefused,
      tail: null,
      stale: new Set(),
      keysReadAt: version,
    };
    await writeRefusals(tx, importId, outcomes.filter((o) => o?.status === 'REFUSED'));
    for (let attempt = 1; ; attempt++) {
      // Outside the lock: the writes for what the balance as last committed allows.
      for (;;) {
        const forecast = decide(settings, state.candidates, await money(tx, input.merchantId));
        if (await stage(tx, state, forecast)) break;
      }
      await checkDeferredConstraints(tx);
      try {
        // The savepoint's rollback (a Replan) gives the wallet lock back.
        const decision = await tx.transaction((locked) => settle(locked, state, attempt));
        return { state, decision };
      } catch (err) {
        if (!(err instanceof Replan)) throw err;
      }
    }
  });
  return answer(state, decision);
}

/** The balance and the day's running total as last committed (a forecast: nothing is locked). */
async function money(db: Db, merchantId: string) {
  const { balance } = await peekWallet(db, merchantId);
  return { balance, today: await disbursedToday(db, merchantId) };
}

/**
 * The balance decision, in file order: each candidate against the daily limit (the rows
 * accepted above it included) and then the balance left, as for one request.
 */
function decide(settings: MerchantMoneySettings, candidates: readonly Staged[], start: { today: number; balance: number }): Decision {
  let { today, balance } = start;
  for (const [n, c] of candidates.entries()) {
    const refusal = walletDecision(settings, { disbursedToday: today, balance }, c);
    if (refusal) return { accepted: n, stop: { code: refusal, today, balance } };
    today += c.amount;
    balance -= c.amount + c.fee;
  }
  return { accepted: candidates.length, stop: null };
}

/**
 * Under the wallet lock: the decision from the locked balance and the day's total; when it is
 * the one written, the debit, the running total, the stop's refusal and the import record.
 */
async function settle(tx: Db, state: ImportState, attempt: number): Promise<Decision> {
  const { merchantId } = state.input;
  const accounts = await lockMerchantAccounts(tx, merchantId, ['WALLET', 'DISBURSEMENTS_IN_FLIGHT']);
  const wallet = accounts.get('WALLET')!;
  if (wallet.version !== state.keysReadAt) {
    // Something committed since the keys were read: one of the rows not written may be taken.
    await answerTakenKeys(tx, state, unwrittenRows(state));
    state.keysReadAt = wallet.version;
  }
  const decision = decide(state.settings, state.candidates, { today: await disbursedToday(tx, merchantId), balance: wallet.balance });
  if (decision.accepted !== state.written || !sameTail(state, decision) || state.stale.size) {
    if (decision.accepted > state.written || attempt <= FREE_REPLANS) throw new Replan();
    // Fewer rows than written: deletes of this transaction's own rows, which wait for nobody.
    await stage(tx, state, decision);
  }

  const accepted = state.candidates.slice(0, decision.accepted);
  const amounts = accepted.reduce((sum, d) => sum + d.amount, 0);
  const totalDebit = accepted.reduce((sum, d) => sum + d.amount + d.fee, 0);
  if (accepted.length) {
    await postTransfer(
      tx,
      {
        merchantId,
        kind: 'DISBURSEMENT_IMPORT',
        reference: { type: 'DISBURSEMENT_IMPORT', id: state.importId, refCode: null },
        description: `Disbursement import ${state.input.prefix}: ${accepted.length} disbursements (amounts ${amounts}, fees ${totalDebit - amounts})`,
        legs: { WALLET: -totalDebit, DISBURSEMENTS_IN_FLIGHT: totalDebit },
      },
      accounts,
    );
    await addToDailyTotal(tx, merchantId, amounts);
  }
  if (decision.stop) {
    const stop = stopOutcome(state, decision);
    await insertRefusals(tx, state.importId, [{ row: stop.row, key: stop.key, code: stop.error.code, message: stop.error.message }]);
  }
  // The candidates' outcomes are built after commit; their counts follow from the decision.
  const count = countOutcomes(state.outcomes);
  count.ACCEPTED += decision.accepted;
  count.REFUSED += state.candidates.length - decision.accepted;
  await insertImport(tx, {
    id: state.importId,
    merchantId,
    prefix: state.input.prefix,
    fileName: state.input.fileName,
    fileSha256: state.input.fileSha256,
    fileBytes: state.input.fileBytes,
    rows: state.input.rows.length,
    accepted: count.ACCEPTED,
    alreadyImported: count.ALREADY_IMPORTED,
    refused: count.REFUSED,
    skipped: count.SKIPPED,
    totalDebit,
    uploadedBy: state.input.uploadedBy,
  });
  return decision;
}

/** Whether the refusals written after the stop are the decision's. */
function sameTail(state: ImportState, d: Decision): boolean {
  const want = d.stop && { code: d.stop.code, row: state.input.rows[state.candidates[d.accepted].index].row };
  return want === null || state.tail === null ? want === state.tail : want.code === state.tail.code && want.row === state.tail.row;
}

/**
 * Brings what is written to `d`: candidate rows (with events and jobs) inserted up to
 * d.accepted or deleted down to it, the refusals after the stop, the rows whose outcome
 * changed. False when a key turned out to be held by another request: those rows are answered
 * from their holder and the candidates changed, so the caller decides again.
 */
async function stage(tx: Db, state: ImportState, d: Decision): Promise<boolean> {
  const { merchantId } = state.input;
  if (d.accepted < state.written) {
    const dropped = state.candidates.slice(d.accepted, state.written);
    for (let start = 0; start < dropped.length; start += CHUNK) {
      const ids = dropped.slice(start, start + CHUNK).map((c) => c.id);
      await state.boss.deleteJob('disbursement-execute', ids, { db: inTransaction(tx) });
      await deleteStagedDisbursements(tx, state.importId, ids);
    }
    state.written = d.accepted;
  }
  while (state.written < d.accepted) {
    const chunk = state.candidates.slice(state.written, Math.min(d.accepted, state.written + CHUNK));
    const inserted = new Set(
      await insertImportedDisbursements(
        tx,
        { merchantId, importId: state.importId, source: 'IMPORT', eventSource: 'import' },
        chunk.map(({ id, refCode, status, request: r, amount, fee, bank }) => ({
          id, refCode, idempotencyKey: r.idempotencyKey, channel: r.channel, ...destinationColumns(r, bank),
          requestAmount: amount, fee, notifyUrl: r.notifyUrl, status,
        })),
      ),
    );
    // Job ids are the disbursement ids (UUIDs made above, so the payload contract of db/queue.ts
    // holds without a parse per job): a row dropped later takes its job with it.
    const jobs = chunk.filter((c) => c.status === 'PENDING' && inserted.has(c.id))
      .map((c) => ({ id: c.id, data: { disbursement_id: c.id } satisfies Payload<'disbursement-execute'> }));
    if (jobs.length) await state.boss.insert('disbursement-execute', jobs, { db: inTransaction(tx) });
    if (inserted.size < chunk.length) {
      const held = chunk.filter((c) => !inserted.has(c.id));
      // Written rows stay a prefix: the ones held are taken out of the candidates.
      state.written += inserted.size;
      await answerTakenKeys(tx, state, held.map((c) => state.input.rows[c.index]));
      return false;
    }
    state.written += chunk.length;
  }
  if (!sameTail(state, d)) {
    await deleteRefusalsWithCodes(tx, state.importId, STOP_CODES);
    state.tail = null;
    if (d.stop) {
      const stopRow = state.input.rows[state.candidates[d.accepted].index];
      const message = tailMessage(d.stop.code, stopRow.row);
      await writeRefusals(tx, state.importId, state.candidates.slice(d.accepted + 1).map((c) => refused(state.input.rows[c.index], d.stop!.code, message)));
      state.tail = { code: d.stop.code, row: stopRow.row };
    }
  }
  if (state.stale.size) {
    const rows = [...state.stale];
    for (let start = 0; start < rows.length; start += CHUNK) await deleteRefusals(tx, state.importId, rows.slice(start, start + CHUNK));
    const byRow = new Map(state.input.rows.map((r, index) => [r.row, index]));
    await writeRefusals(tx, state.importId, rows.flatMap((row) => {
      const o = state.outcomes[byRow.get(row)!];
      return o.status === 'REFUSED' ? [o] : [];
    }));
    state.stale.clear();
  }
  return true;
}

function tailMessage(code: StopCode, row: number) {
  const what = code === 'INSUFFICIENT_BALANCE' ? 'balance' : 'daily limit';
  return `not accepted: row ${row} was the first the ${what} could not cover, and rows are accepted in file order`;
}

/**
 * The rows a key committed since the last read can answer instead: the candidates not written
 * and the rows the rules refused (rows answered from a committed holder keep their answer).
 */
function unwrittenRows(state: ImportState): ImportRow[] {
  const refusedByRules = state.ruleRefused.filter((i) => {
    const o = state.outcomes[i];
    return o.status === 'REFUSED' && o.error.code !== 'DUPLICATE_IDEMPOTENCY_KEY';
  });
  return [...refusedByRules, ...state.candidates.slice(state.written).map((c) => c.index)].map((i) => state.input.rows[i]);
}

/**
 * Answers rows whose key another request holds (committed) from that holder, as checkRows
 * does; they stop being candidates. A key found free stays as it was.
 */
async function answerTakenKeys(tx: Db, state: ImportState, rows: readonly ImportRow[]) {
  const holders = new Map<string, ExistingDisbursement>();
  for (let start = 0; start < rows.length; start += CHUNK) {
    for (const d of await findByIdempotencyKeys(tx, state.input.merchantId, rows.slice(start, start + CHUNK).map((r) => r.key))) holders.set(d.idempotency_key, d);
  }
  if (!holders.size) return;
  const index = new Map(state.input.rows.map((r, i) => [r.key, i]));
  for (const [key, used] of holders) {
    const i = index.get(key)!;
    const row = state.input.rows[i];
    if (!('request' in row)) continue;
    state.outcomes[i] = answerFromHolder(row, used);
    state.stale.add(row.row);
  }
  state.candidates = state.candidates.filter((c) => !holders.has(state.input.rows[c.index].key));
}

function answerFromHolder(row: ImportRow & { request: DisbursementRequest }, used: ExistingDisbursement): RowOutcome {
  return sameRow(used, row.request)
    ? { row: row.row, key: row.key, status: 'ALREADY_IMPORTED', disbursement: { id: used.id, refCode: used.ref_code, status: used.status, totalDebit: used.total_debit } }
    : refused(row, 'DUPLICATE_IDEMPOTENCY_KEY', `${row.key} is already used by ${used.ref_code}, for another destination or amount`);
}

/** The stop's refusal, with the figures it was refused on. */
function stopOutcome(state: ImportState, d: Decision) {
  const c = state.candidates[d.accepted];
  const row = state.input.rows[c.index];
  const { code, today, balance } = d.stop!;
  return code === 'DAILY_LIMIT_EXCEEDED'
    ? refused(row, code, `today's disbursements so far (${today}, rows above included) plus this amount (${c.amount}) exceed the daily limit (${state.settings.daily_disbursement_limit})`)
    : refused(row, code, `the balance left after the rows above (${balance}) is below this row's amount plus fee (${c.amount + c.fee})`);
}

/** Outcomes answered so far (the candidates' come with the decision), by status. */
function countOutcomes(outcomes: readonly (RowOutcome | undefined)[]) {
  const count = { ACCEPTED: 0, ALREADY_IMPORTED: 0, REFUSED: 0, SKIPPED: 0 };
  for (const o of outcomes) if (o) count[o.status]++;
  return count;
}

/**
 * The answer, built after commit (the wallet lock is given back by then): the decision's
 * outcomes for the candidates (accepted, the stop, the rows after it), then the counts.
 */
async function answer(state: ImportState, d: Decision): Promise<ImportResult> {
  const stopRow = d.stop && state.input.rows[state.candidates[d.accepted].index].row;
  for (const [n, c] of state.candidates.entries()) {
    if (n % YIELD_EVERY === YIELD_EVERY - 1) await nextTurn();
    const row = state.input.rows[c.index];
    state.outcomes[c.index] =
      n < d.accepted ? { row: row.row, key: row.key, status: 'ACCEPTED', disbursement: { id: c.id, refCode: c.refCode, status: c.status, totalDebit: c.amount + c.fee } }
      : n === d.accepted ? stopOutcome(state, d)
      : refused(row, d.stop!.code, tailMessage(d.stop!.code, stopRow!));
  }
  const accepted = state.candidates.slice(0, d.accepted);
  const count = countOutcomes(state.outcomes);
  return {
    importId: state.importId,
    prefix: state.input.prefix,
    rows: state.input.rows.length,
    accepted: count.ACCEPTED,
    alreadyImported: count.ALREADY_IMPORTED,
    refused: count.REFUSED,
    skipped: count.SKIPPED,
    queued: accepted.filter((c) => c.status === 'PENDING').length,
    totalDebit: accepted.reduce((sum, c) => sum + c.amount + c.fee, 0),
    outcomes: state.outcomes,
  };
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
  const ruleRefused: number[] = [];
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
      outcomes[index] = answerFromHolder(row, used);
      continue;
    }
    try {
      candidates.push({ index, request: row.request, ...(await checkRules(settings, row.request, lookups)) });
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      outcomes[index] = refused(row, err.code, err.message);
      ruleRefused.push(index);
    }
  }
  return { outcomes, candidates, ruleRefused };
}

/** Refused rows' reasons, CHUNK rows per statement. */
async function writeRefusals(tx: Db, importId: string, outcomes: readonly RowOutcome[]) {
  const refusals = outcomes.flatMap((o) => (o.status === 'REFUSED' ? [{ row: o.row, key: o.key, code: o.error.code, message: o.error.message }] : []));
  for (let start = 0; start < refusals.length; start += CHUNK) await insertRefusals(tx, importId, refusals.slice(start, start + CHUNK));
}
