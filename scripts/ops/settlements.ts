// Settlements: run (or rerun) a day, list, retry a FAILED payout, cancel; and the bank account a
// MANUAL merchant's settlements are paid to.
import { z } from 'zod';
import { configSchema } from '../../db/config.ts';
import { findBankByShortCode } from '../../db/master-data.ts';
import { getMerchant, setSettlementAccount } from '../../db/merchants.ts';
import { cancelSettlement, dayHasEnded, periodOf, retrySettlement, runSettlements, SettlementRefused } from '../../db/settlements.ts';
import { listSettlements, type SettlementRow } from '../../db/settlements.sql.ts';
import { presentSettlement } from '../../db/present/settlements.ts';
import { command, OpsError, type OpsContext } from './command.ts';
import { eachId, givenIds, manyIdFlags, oneIdGiven } from './many-ids.ts';

const merchantId = z.uuid('--merchant must be a merchant UUID');
const id = z.uuid('--id must be a settlement UUID');
const date = z.iso.date('--date must be a date YYYY-MM-DD');

/** The cut-off the workers use (SETTLEMENT_CUTOFF_HOUR), so a rerun covers the same period. */
function cutoffHour(): number {
  const parsed = configSchema.shape.SETTLEMENT_CUTOFF_HOUR.safeParse(process.env.SETTLEMENT_CUTOFF_HOUR);
  if (!parsed.success) throw new OpsError('SETTLEMENT_CUTOFF_HOUR must be an hour 0..23');
  return parsed.data;
}

const shown = (s: SettlementRow) => ({ ...presentSettlement(s), merchant_id: s.merchant_id, failure_reason: s.failure_reason });

export const settlementsRun = command({
  name: 'settlements:run',
  summary: 'Build the settlements of a day that has ended for every MANUAL merchant (or one); a rerun creates nothing twice',
  usage: 'settlements:run --date YYYY-MM-DD [--merchant ID] [--json]',
  flags: { date: { type: 'string' }, merchant: { type: 'string' } },
  input: z.object({ date, merchant: merchantId.optional() }),
  async run(ctx, input) {
    const cutoff = cutoffHour();
    // No --force: a day still running would be settled in part, and nothing builds the rest.
    if (!dayHasEnded(input.date, cutoff)) {
      const end = periodOf(input.date, cutoff).periodEnd.toISOString();
      throw new OpsError(`settlement day ${input.date} has not ended: its period closes at ${end} (cut-off ${cutoff}:00 WIB); run it after that`);
    }
    const report = await runSettlements(
      await ctx.pool(),
      await ctx.boss(),
      { settlementDate: input.date, cutoffHour: cutoff, merchantId: input.merchant }
    );
    const results = report.results.map((r) => ('settlement' in r ? { ...r, settlement: shown(r.settlement) } : r));
    const lines = results.map((r) =>
      'settlement' in r
        ? `  ${r.merchant_id} ${r.status} ${r.settlement.ref_code} net ${r.settlement.net_payout} (${r.settlement.order_count} orders)`
        : `  ${r.merchant_id} ${r.status}: ${r.reason}`,
    );
    return {
      json: { ...report, period_start: report.period_start.toISOString(), period_end: report.period_end.toISOString(), results },
      text: [
        `settlements of ${report.settlement_date} (${report.period_start.toISOString()} to ${report.period_end.toISOString()}): ` +
          `${report.created} created, ${report.existing} existing, ${report.skipped} skipped, ${report.failed} failed`,
        ...lines,
      ].join('\n'),
      exitCode: report.failed ? 1 : 0,
    };
  },
});

export const settlementsList = command({
  name: 'settlements:list',
  summary: 'List settlements, newest first (at most 100), by merchant, date and status',
  usage: 'settlements:list [--merchant ID] [--date YYYY-MM-DD] [--status PENDING|PROCESSING|PAID|FAILED|CANCELLED] [--json]',
  flags: { merchant: { type: 'string' }, date: { type: 'string' }, status: { type: 'string' } },
  input: z.object({
    merchant: merchantId.optional(),
    date: date.optional(),
    status: z.enum(['PENDING', 'PROCESSING', 'PAID', 'FAILED', 'CANCELLED'], '--status must be a settlement status').optional(),
  }),
  async run(ctx, input) {
    const rows = await listSettlements(await ctx.pool(), { merchantId: input.merchant ?? null, date: input.date ?? null, status: input.status ?? null }, 100);
    return {
      json: rows.map(shown),
      text: rows.length
        ? rows.map((s) => `${s.id} ${s.ref_code} ${s.status} net ${s.net_payout} merchant ${s.merchant_id}${s.failure_reason ? ` (${s.failure_reason})` : ''}`).join('\n')
        : 'no settlements',
    };
  },
});

async function refusing<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof SettlementRefused) throw new OpsError(err.message);
    throw err;
  }
}

export const settlementsRetry = command({
  name: 'settlements:retry',
  summary: 'Send FAILED settlements again (PENDING, a new payout attempt): one, several (--id repeated) or a column of ids on stdin',
  usage: 'settlements:retry (--id UUID [--id UUID …] | --stdin) [--json]',
  flags: manyIdFlags,
  input: z.object({ id: z.array(id).optional(), stdin: z.boolean().optional() }),
  async run(ctx: OpsContext, input) {
    const pool = await ctx.pool();
    const boss = await ctx.boss();
    const ids = await givenIds(input, 'settlement');
    const { done, skipped } = await eachId(ids, (one) => refusing(() => retrySettlement(pool, boss, one)));
    const line = (s: SettlementRow) => `settlement ${s.ref_code} is PENDING again (attempt ${s.payout_attempt})`;
    if (oneIdGiven(input)) {
      if (skipped.length) throw new OpsError(skipped[0].reason);
      return { json: shown(done[0]), text: line(done[0]) };
    }
    const text = [...done.map(line), ...skipped.map((s) => `skipped ${s.id}: ${s.reason}`)].join('\n') || 'nothing retried';
    return { json: { retried: done.map(shown), skipped }, text, exitCode: skipped.length ? 1 : 0 };
  },
});

export const settlementsCancel = command({
  name: 'settlements:cancel',
  summary: 'Cancel a PENDING or FAILED settlement: money back to the accrual, its orders free for a rerun of the day',
  usage: 'settlements:cancel --id UUID [--reason TEXT] [--json]',
  flags: { id: { type: 'string' }, reason: { type: 'string' } },
  input: z.object({ id, reason: z.string().trim().min(1).max(500).optional() }),
  async run(ctx, input) {
    const { settlement, released } = await refusing(async () =>
      cancelSettlement(await ctx.pool(), await ctx.boss(), input.id, input.reason ?? null),
    );
    return {
      json: { ...shown(settlement), released },
      text: `settlement ${settlement.ref_code} CANCELLED; ${released.orders} orders and ${released.refunds + released.give_backs} refunds freed`,
    };
  },
});

export const merchantSetSettlementAccount = command({
  name: 'merchant:set-settlement-account',
  summary: "Set the bank account a MANUAL merchant's settlements are paid to",
  usage: 'merchant:set-settlement-account --merchant ID --bank BCA --account-number N --account-name NAME [--json]',
  flags: { merchant: { type: 'string' }, bank: { type: 'string' }, 'account-number': { type: 'string' }, 'account-name': { type: 'string' } },
  input: z.object({
    merchant: merchantId,
    bank: z.string('--bank is required (a bank short code)').trim().min(1, '--bank is required (a bank short code)').max(32),
    'account-number': z.string('--account-number is required').trim().regex(/^\d{5,34}$/, '--account-number must be 5 to 34 digits'),
    'account-name': z.string('--account-name is required').trim().min(1, '--account-name is required').max(255),
  }),
  async run(ctx, input) {
    const pool = await ctx.pool();
    const merchant = await getMerchant(pool, input.merchant);
    if (merchant.settlement_type !== 'MANUAL') throw new OpsError(`merchant ${input.merchant} is ${merchant.settlement_type}: only MANUAL merchants are settled`);
    const bank = await findBankByShortCode(pool, input.bank);
    if (!bank) throw new OpsError(`no bank ${input.bank}`);
    if (!bank.is_enabled) throw new OpsError(`bank ${bank.short_code} is disabled for disbursement`);
    await setSettlementAccount(pool, input.merchant, { bankId: bank.id, accountNumber: input['account-number'], accountName: input['account-name'] });
    const account = { merchant_id: input.merchant, bank_id: bank.id, bank_short_code: bank.short_code, account_number: input['account-number'], account_name: input['account-name'] };
    return { json: account, text: `settlements of ${input.merchant} go to ${bank.short_code} ${account.account_number} (${account.account_name})` };
  },
});
