// Sandbox behaviours keyed on the account number, like acquirers' test modes: the outcome of a
// disbursement or an inquiry is chosen by the caller's data, so tests need no extra knobs.
// Listed in docs/simulator.md; change both together.
import { createHash } from 'node:crypto';

export type DisbursementOutcome = { status: 'SUCCESS' } | { status: 'FAILED'; reason: string } | null;

/** null: the disbursement stays PROCESSING forever (a stuck transfer, for reconciliation). */
export function disbursementOutcome(accountNumber: string): DisbursementOutcome {
  if (accountNumber.endsWith('0000')) return { status: 'FAILED', reason: 'ACCOUNT_CLOSED' };
  if (accountNumber.endsWith('9999')) return { status: 'FAILED', reason: 'INVALID_ACCOUNT' };
  if (accountNumber.endsWith('7777')) return null;
  return { status: 'SUCCESS' };
}

/**
 * Xendit dialect only: a payout to an account with this ending SUCCEEDS (payout.succeeded), then
 * the bank bounces it and Xendit REVERSES it a moment later (payout.reversed; the money is back
 * in the account's balance), as Xendit's payout statuses allow (docs/simulator.md).
 */
export const REVERSED_AFTER_SUCCESS_SUFFIX = '6666';

/**
 * Xendit dialect only: a payout to an account with this ending is still being processed when its
 * first POST answers 500 SERVER_ERROR: it is not listed by reference yet, and a re-send under the same
 * Idempotency-key answers 409 IDEMPOTENCY_KEY_IN_PROGRESS (not DUPLICATE_ERROR); from then on it
 * is listed, and settles as usual.
 */
export const IN_PROGRESS_SUFFIX = '4090';

const HOLDERS = [
  'BUDI SANTOSO',
  'SITI RAHAYU',
  'AGUS SETIAWAN',
  'DEWI LESTARI',
  'EKO PRASETYO',
  'RINA WULANDARI',
  'HENDRA GUNAWAN',
  'NUR HIDAYAH',
  'ANDI WIJAYA',
  'FITRI HANDAYANI',
  'SRI MULYANI',
  'YUSUF MAULANA',
];

/** An account number with this ending is held by the bank's own holder, whatever name is entered. */
export const OTHER_HOLDER_SUFFIX = '8888';

/** The name as a bank prints it: capitals, single spaces. */
const asBankPrints = (name: string) => name.trim().replace(/\s+/g, ' ').toUpperCase();

/**
 * The holder's name as the sandbox bank gives it; null: no such account (`…9999`). Like the
 * vendors' test modes it confirms the name the caller entered (`entered`, where the inquiry
 * carries one: the native API's does), except on `…8888`: there the account's holder is one of
 * a fixed list, picked by a hash of the number (the same on every run and every instance), so
 * any other name entered is another holder's, and entering the listed one fixes it. An inquiry
 * with no name (Iris's and SNAP's wires carry none, or none was given) gets the listed holder too.
 */
export function accountHolder(accountNumber: string, entered: string | null = null): string | null {
  if (accountNumber.endsWith('9999')) return null;
  const given = entered === null ? '' : asBankPrints(entered);
  if (given && !accountNumber.endsWith(OTHER_HOLDER_SUFFIX)) return given;
  return HOLDERS[createHash('sha256').update(accountNumber).digest().readUInt32BE(0) % HOLDERS.length];
}

/**
 * Iris dialect only: an Iris account that approves payouts on its own, as Iris's create answers
 * `processed` and `completed` allow (issue 36 F2): a payout to an account ending `…5555` is
 * created `processed` (approved, it settles after the usual delay), one ending `…3333`
 * `completed` (paid at once); null: created `queued`, waiting for the approver.
 */
export function irisAutoApproval(accountNumber: string): 'processed' | 'completed' | null {
  if (accountNumber.endsWith('5555')) return 'processed';
  if (accountNumber.endsWith('3333')) return 'completed';
  return null;
}
