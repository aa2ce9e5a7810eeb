// The money rules, in one pure module: what a payment costs the merchant (MDR), what a payout
// costs (the fee), how much one payout may be, how much of an order can still be refunded, what
// a settlement pays out, and whether the wallet can take a disbursement today. No I/O: the
// callers read the settings, the balance and the day's running total (under the wallet lock
// where the decision is final) and write what the rule decided. A single create, a CSV import,
// the ledger and the settlement run all decide through these functions, so a rule changes here
// or nowhere. Amounts are whole Rupiah (safe integers); nothing here sees a float.

export interface MoneySettings {
  mdr_bps: number;
  fee_bank: number;
  fee_ewallet: number;
  disbursement_limit: number;
  daily_disbursement_limit: number;
}

/** The merchant discount on a payment: `bps` basis points of the amount, rounded half up. */
export function mdrOf(amount: number, bps: number): number {
  if (!Number.isSafeInteger(amount) || amount < 0 || !Number.isInteger(bps) || bps < 0 || bps > 10_000) {
    throw new RangeError(`mdrOf(${amount}, ${bps})`);
  }
  // BigInt: amount × bps reaches 10^17 for the largest QRIS amount, past 2^53.
  return Number((BigInt(amount) * BigInt(bps) + 5000n) / 10_000n);
}

/** The fee a disbursement costs the merchant, by channel (a settlement payout is a BANK transfer). */
export function disbursementFee(settings: Pick<MoneySettings, 'fee_bank' | 'fee_ewallet'>, channel: 'BANK' | 'EWALLET'): number {
  return channel === 'BANK' ? settings.fee_bank : settings.fee_ewallet;
}

/** Whether one disbursement's amount is within the merchant's per-transaction limit. */
export function withinDisbursementLimit(settings: Pick<MoneySettings, 'disbursement_limit'>, amount: number): boolean {
  return amount <= settings.disbursement_limit;
}

/** What is left to refund on an order: only a PAID order can be refunded, never past its amount. */
export function refundableAmount(order: { status: string; amount: number; refunded_amount: number }): number {
  return order.status === 'PAID' ? order.amount - order.refunded_amount : 0;
}

/** A settlement's payout: gross − MDR − net refunds − the transfer fee (positive, or deferred). */
export function settlementNet(figures: { gross: number; mdr: number; refunds: number; fee: number }): number {
  return figures.gross - figures.mdr - figures.refunds - figures.fee;
}

export type WalletRefusal = 'DAILY_LIMIT_EXCEEDED' | 'INSUFFICIENT_BALANCE';

/**
 * The wallet's decision on one more disbursement: the day's disbursed amounts so far
 * (`disbursedToday`, this one excluded) plus this amount must stay within the daily limit, and
 * the balance must cover the amount plus its fee. The daily limit is checked first, so a
 * merchant over both hears of the limit. Null means accepted.
 */
export function walletDecision(
  settings: Pick<MoneySettings, 'daily_disbursement_limit'>,
  state: { disbursedToday: number; balance: number },
  payout: { amount: number; fee: number },
): WalletRefusal | null {
  if (state.disbursedToday + payout.amount > settings.daily_disbursement_limit) return 'DAILY_LIMIT_EXCEEDED';
  if (state.balance < payout.amount + payout.fee) return 'INSUFFICIENT_BALANCE';
  return null;
}
