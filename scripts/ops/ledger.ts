// Money commands: prove the ledger, correct a wallet, set a merchant's fees and limits.
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { adjustWallet, auditLedger, InsufficientFunds, walletBalance } from '../../db/ledger.ts';
import { getMoneySettings, setMoneySettings } from '../../db/merchants.ts';
import { command, OpsError } from './command.ts';

const merchantId = z.uuid('--merchant must be a merchant UUID');
const rupiah = (flag: string) => z.string().regex(/^-?\d{1,15}$/, `${flag} must be whole Rupiah`).transform(Number);
const positive = (flag: string) => z.string().regex(/^\d{1,15}$/, `${flag} must be whole Rupiah`).transform(Number).refine((n) => n > 0, `${flag} must be above 0`);

export const ledgerAudit = command({
  name: 'ledger:audit',
  summary: 'Prove every cached balance equals its postings and every transfer sums to zero (exit 1 if not)',
  usage: 'ledger:audit [--json]',
  flags: {},
  input: z.object({}),
  async run(ctx) {
    const report = await auditLedger(await ctx.pool());
    const lines = report.problems.map((p) => `  ${p.check} ${p.subject}: ${p.detail}`);
    return {
      json: report,
      text: [`ledger ${report.ok ? 'OK' : 'BROKEN'}: ${report.accounts} accounts, ${report.transfers} transfers, ${report.postings} postings`, ...lines].join('\n'),
      exitCode: report.ok ? 0 : 1,
    };
  },
});

export const ledgerAdjust = command({
  name: 'ledger:adjust',
  summary: "Credit (+N) or debit (-N) a merchant's wallet as an adjustment transfer",
  usage: 'ledger:adjust --merchant ID --amount N | --amount=-N --reason TEXT [--json]',
  flags: { merchant: { type: 'string' }, amount: { type: 'string' }, reason: { type: 'string' } },
  input: z.object({
    merchant: merchantId,
    amount: rupiah('--amount').refine((n) => n !== 0, '--amount must not be 0'),
    reason: z.string().trim().min(3, '--reason is required (at least 3 characters)').max(500),
  }),
  async run(ctx, input) {
    const pool = await ctx.pool();
    const settings = await getMoneySettings(pool, input.merchant);
    if (settings.settlement_type !== 'WALLET') throw new OpsError(`merchant ${input.merchant} is ${settings.settlement_type}: it has no wallet`);
    const adjustmentId = randomUUID();
    try {
      await pool.transaction((tx) => adjustWallet(tx, { merchantId: input.merchant, adjustmentId, amount: input.amount, reason: input.reason }));
    } catch (err) {
      if (err instanceof InsufficientFunds) throw new OpsError(`the wallet holds ${err.balance}: it cannot be debited ${-input.amount}`);
      throw err;
    }
    const balance = await walletBalance(pool, input.merchant);
    return {
      json: { merchant_id: input.merchant, adjustment_id: adjustmentId, amount: input.amount, balance },
      text: `adjusted wallet of ${input.merchant} by ${input.amount}; balance ${balance}`,
    };
  },
});

export const merchantSetFees = command({
  name: 'merchant:set-fees',
  summary: 'Set MDR, disbursement fees, limits and review threshold of a merchant (only the flags given)',
  usage:
    'merchant:set-fees --merchant ID [--mdr-bps N] [--fee-bank N] [--fee-ewallet N] [--limit N] [--daily-limit N] [--review-threshold N|off] [--json]',
  flags: {
    merchant: { type: 'string' },
    'mdr-bps': { type: 'string' },
    'fee-bank': { type: 'string' },
    'fee-ewallet': { type: 'string' },
    limit: { type: 'string' },
    'daily-limit': { type: 'string' },
    'review-threshold': { type: 'string' },
  },
  input: z.object({
    merchant: merchantId,
    'mdr-bps': z.string().regex(/^\d{1,5}$/, '--mdr-bps must be whole basis points').transform(Number).refine((n) => n <= 10_000, '--mdr-bps must be at most 10000').optional(),
    'fee-bank': rupiah('--fee-bank').refine((n) => n >= 0, '--fee-bank must not be negative').optional(),
    'fee-ewallet': rupiah('--fee-ewallet').refine((n) => n >= 0, '--fee-ewallet must not be negative').optional(),
    limit: positive('--limit').optional(),
    'daily-limit': positive('--daily-limit').optional(),
    'review-threshold': z.union([z.literal('off').transform(() => null), positive('--review-threshold')]).optional(),
  }),
  async run(ctx, input) {
    const settings = await setMoneySettings(await ctx.pool(), input.merchant, {
      mdr_bps: input['mdr-bps'],
      fee_bank: input['fee-bank'],
      fee_ewallet: input['fee-ewallet'],
      disbursement_limit: input.limit,
      daily_disbursement_limit: input['daily-limit'],
      review_threshold: input['review-threshold'],
    });
    const { settlement_type: _, ...fees } = settings;
    return {
      json: { merchant_id: input.merchant, ...fees },
      text: Object.entries(fees).map(([k, v]) => `${k}: ${v ?? 'off'}`).join('\n'),
    };
  },
});
