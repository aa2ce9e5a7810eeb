// settlement-run (scheduler group): builds the settlements of the day that just closed, for
// every ACTIVE MANUAL merchant (db/settlements.ts runSettlements). A pg-boss schedule sends the
// job at SETTLEMENT_CRON in WIB; the day is read from the job's creation time, so a retry hours
// later still builds the same day. A run cut off anywhere (a SIGKILL) is retried by pg-boss once
// the heartbeat goes stale, and reruns create nothing twice. Merchants that failed make the job
// fail after the others are built, so pg-boss retries them.
import type { Job } from 'pg-boss';
import { logger } from '../db/logger.ts';
import type { Payload } from '../db/queue.ts';
import { dayHasEnded, runSettlements, settlementDateAt } from '../db/settlements.ts';
import type { WorkerContext } from './context.ts';

/** Registers (or updates) the daily schedule; every scheduler process may do it at start. */
export async function scheduleSettlementRun(ctx: WorkerContext): Promise<void> {
  // missed 'once': a scheduler that was down at the cut-off still runs the day when it is back.
  await ctx.boss.schedule('settlement-run', ctx.config.SETTLEMENT_CRON, {}, { tz: 'Asia/Jakarta', key: 'daily', missed: 'once' });
}

/** When the schedule sent the job (fetched jobs carry no metadata); now, if it is gone. */
async function createdOn(ctx: WorkerContext, job: Job<unknown>): Promise<Date> {
  const [found] = await ctx.boss.findJobs('settlement-run', { id: job.id });
  return found?.createdOn ?? new Date();
}

export async function handleSettlementRun(ctx: WorkerContext, payload: Payload<'settlement-run'>, job: Job<unknown>) {
  const settlementDate = payload.settlement_date ?? settlementDateAt(await createdOn(ctx, job), ctx.config.SETTLEMENT_CUTOFF_HOUR);
  // A job sent by hand for a day still running is refused, not retried: a partial day is worse
  // than none (ops settlements:run refuses it the same way).
  if (!dayHasEnded(settlementDate, ctx.config.SETTLEMENT_CUTOFF_HOUR)) {
    logger.error({ date: settlementDate }, 'settlement run refused: the day has not ended');
    return { date: settlementDate, refused: 'day_not_ended' };
  }
  const report = await runSettlements(
    ctx.pool,
    ctx.boss,
    { settlementDate, cutoffHour: ctx.config.SETTLEMENT_CUTOFF_HOUR, merchantId: payload.merchant_id }
  );
  const summary = { date: settlementDate, created: report.created, existing: report.existing, skipped: report.skipped, failed: report.failed };
  logger.info(summary, 'settlement run finished');
  if (report.failed) throw new Error(`settlement run ${settlementDate}: ${report.failed} merchant(s) failed`);
  return summary;
}
