// The one name rule for payouts (docs/money.md, "Whose account is paid"). Before a payout, every
// connector whose vendor can name an account's holder asks it; when the bank names another
// holder than the payout's account_name, the payout is refused for every vendor (it ends FAILED
// with ACCOUNT_NAME_MISMATCH and its debit comes back) unless the disbursement accepted that
// (accept_name_mismatch). Names are compared as db/account-names.ts reads them (case,
// punctuation, spacing and titles aside), the reading beneficiary verification uses too, so a
// destination saved as a beneficiary and the same one entered on a payout get one outcome.
//
// An inquiry that gives no holder (no answer, or no such account) refuses nothing here: what a
// connector does then is its vendor's matter (the vendor's own checks, or no transfer at all).
import { sameHolder } from '../db/account-names.ts';
import type { AccountInquiry, DisburseInput, Outcome } from './gateway.ts';
import { nameMismatch } from './results.ts';

/** Whether the payout needs the bank's word on its holder at all: a name to compare, not waived. */
export const holderToCheck = (payout: Pick<DisburseInput, 'accountName' | 'acceptNameMismatch'>): boolean =>
  Boolean(payout.accountName) && !payout.acceptNameMismatch;

/**
 * The refusal for a payout whose holder the bank names otherwise, or null to go on. `who` is
 * how the reason names the vendor's answer ("Iris", "the bank").
 */
export function holderRefusal(
  payout: Pick<DisburseInput, 'accountName' | 'acceptNameMismatch'>,
  inquiry: Outcome<AccountInquiry>,
  who: string,
): Outcome<never> | null {
  if (!holderToCheck(payout) || inquiry.kind !== 'ok' || inquiry.value.status !== 'FOUND') return null;
  const banks = inquiry.value.accountName;
  return sameHolder(payout.accountName!, banks) ? null : nameMismatch(`ACCOUNT_NAME_MISMATCH: ${who} names the holder ${banks}, not ${payout.accountName}`);
}
