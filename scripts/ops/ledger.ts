// Money commands: prove the ledger, correct a wallet, set a merchant's fees and limits.
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { adjustWallet, auditLedgerFull, auditLedgerSince, fillOrderFees, InsufficientFunds, walletBalance, type AuditProgress } from '../../db/ledger.ts';
import { getMoneySettings, setMoneySettings } from '../../db/merchants.ts';
import { command, OpsError } from './command.ts';

const merchantId = z.uuid('--merchant must be a merchant UUID');
const rupiah = (flag: string) => z.string().regex(/^-?\d{1,15}$/, `${flag} must be whole Rupiah`).transform(Number);
const positive = (flag: string) => z.string().regex(/^\d{1,15}$/, `${flag} must be whole Rupiah`).transform(Number).refine((n) => n > 0, `${flag} must be above 0`);

export const ledgerAudit = command({
  name: 'ledger:audit',
  summary:
    'Prove cached balances equal their postings, transfers sum to zero and every payout and payment is posted (exit 1 if not): ' +
    'what changed since the last clean audit, or with --full everything, merchant by merchant with progress on stderr',
  usage: 'ledger:audit [--full [--statement-timeout-seconds N]] [--json]',
  flags: { full: { type: 'boolean' }, 'statement-timeout-seconds': { type: 'string' } },
  input: z
    .object({
      full: z.boolean().optional(),
      // 0: no limit. A chunk is one merchant's whole history at most, so an hour is generous.
      'statement-timeout-seconds': z.string().regex(/^\d{1,6}$/, '--statement-timeout-seconds must be whole seconds (0: no limit)').transform(Number).default(3600),
    })
    .refine((i) => i.full || i['statement-timeout-seconds'] === 3600, { message: '--statement-timeout-seconds goes with --full', path: ['statement-timeout-seconds'] }),
  async run(ctx, input) {
    const pool = await ctx.pool();
    const started = Date.now();
    const progress = (p: AuditProgress) =>
      process.stderr.write(`ledger:audit ${p.merchantsDone}/${p.merchantsTotal} merchants, ${p.problems} problems, ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
    const report = input.full
      ? await auditLedgerFull(pool, { statementTimeoutMs: input['statement-timeout-seconds'] * 1000, onProgress: progress })
      : await auditLedgerSince(pool);
    const lines = report.problems.map((p) => `  ${p.check} ${p.subject}: ${p.detail}`);
    const reach = report.mode === 'FULL' ? 'everything' : `changes since the last clean audit (payments since ${report.since!.toISOString()})`;
    return {
      json: { ...report, seconds: (Date.now() - started) / 1000 },
      text: [
        `ledger ${report.ok ? 'OK' : 'BROKEN'} (${report.mode.toLowerCase()}: ${reach}): ${report.merchants} merchants, ${report.accounts} accounts, ${report.postings} postings`,
        ...lines,
      ].join('\n'),
      exitCode: report.ok ? 0 : 1,
    };
  },
});

export const ledgerFillOrderFees = command({
  name: 'ledger:fill-order-fees',
  summary:
    'Keep the MDR of orders paid before migration 105 on the order, from their payment transfers, in short batches ' +
    '(the orders export reads it there; until then it asks the ledger); safe to rerun or interrupt',
  usage: 'ledger:fill-order-fees [--batch N] [--json]',
  flags: { batch: { type: 'string' } },
  input: z.object({
    batch: z.string().regex(/^\d{1,6}$/, '--batch must be a whole number of orders').transform(Number).refine((n) => n > 0, '--batch must be at least 1').default(5000),
  }),
  async run(ctx, input) {
    const started = Date.now();
    let reported = 0;
    const result = await fillOrderFees(await ctx.pool(), {
      batch: input.batch,
      onProgress: (p) => {
        if (p.visited - reported < 100_000) return;
        reported = p.visited;
        process.stderr.write(`ledger:fill-order-fees ${p.visited} orders visited, ${p.filled} filled, ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
      },
    });
    return {
      json: { ...result, seconds: (Date.now() - started) / 1000 },
      text: `filled the kept MDR of ${result.filled} paid orders (${result.visited} orders visited)`,
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
