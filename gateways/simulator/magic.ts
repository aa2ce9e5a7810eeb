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

/** The holder's name, the same for a number on every run and every instance; null: no such account. */
export function accountHolder(accountNumber: string): string | null {
  if (accountNumber.endsWith('9999')) return null;
  const hash = createHash('sha256').update(accountNumber).digest();
  return HOLDERS[hash.readUInt32BE(0) % HOLDERS.length];
}
