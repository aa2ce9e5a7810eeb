// The money rules as pure functions: each rule is the one that single creates, CSV imports,
// the ledger and settlements decide by (db/money-rules.ts), so these cases hold for all of them.
import t from 'tap';
import { disbursementFee, refundableAmount, settlementNet, walletDecision, withinDisbursementLimit } from '../../db/money-rules.ts';

const settings = { mdr_bps: 70, fee_bank: 2_500, fee_ewallet: 1_000, disbursement_limit: 100_000_000, daily_disbursement_limit: 500_000 };

t.test('fee by channel', async (t) => {
  t.equal(disbursementFee(settings, 'BANK'), 2_500);
  t.equal(disbursementFee(settings, 'EWALLET'), 1_000);
});

t.test('per-transaction limit: the limit itself is allowed, one Rupiah more is not', async (t) => {
  t.equal(withinDisbursementLimit(settings, 100_000_000), true);
  t.equal(withinDisbursementLimit(settings, 100_000_001), false);
});

t.test('refundable: only a PAID order, what is left of its amount', async (t) => {
  t.equal(refundableAmount({ status: 'PAID', amount: 150_000, refunded_amount: 50_000 }), 100_000);
  t.equal(refundableAmount({ status: 'PAID', amount: 150_000, refunded_amount: 150_000 }), 0);
  for (const status of ['PENDING', 'EXPIRED', 'FAILED', 'CREATING']) t.equal(refundableAmount({ status, amount: 150_000, refunded_amount: 0 }), 0, status);
});

t.test('settlement net: gross − MDR − net refunds − fee', async (t) => {
  t.equal(settlementNet({ gross: 1_000_000, mdr: 7_000, refunds: 50_000, fee: 2_500 }), 940_500);
  t.equal(settlementNet({ gross: 10_000, mdr: 70, refunds: 10_000, fee: 2_500 }), -2_570, 'can be negative: the caller defers it');
});

t.test('wallet decision: the daily limit first, then amount + fee against the balance', async (t) => {
  const ok = { disbursedToday: 400_000, balance: 102_500 };
  t.equal(walletDecision(settings, ok, { amount: 100_000, fee: 2_500 }), null, 'exactly the limit and exactly the balance');
  t.equal(walletDecision(settings, ok, { amount: 100_001, fee: 2_500 }), 'DAILY_LIMIT_EXCEEDED', 'one Rupiah past the day');
  t.equal(walletDecision(settings, { disbursedToday: 0, balance: 102_499 }, { amount: 100_000, fee: 2_500 }), 'INSUFFICIENT_BALANCE', 'the fee counts');
  t.equal(walletDecision(settings, { disbursedToday: 500_000, balance: 0 }, { amount: 1, fee: 0 }), 'DAILY_LIMIT_EXCEEDED', 'over both: the limit is named');
});
