// The expiry sweep (scheduler group): every EXPIRY_SWEEP_INTERVAL_MS, PENDING orders past
// expires_at become EXPIRED, in batches, each batch one transaction with its events and
// webhooks. A sweep over an index beats a delayed job per order: millions of deferred jobs
// would slow every queue fetch. One scheduler process runs each pass (workers/periodic.ts), and
// a restarted process simply finds the overdue rows on its next pass, well within the 30
// seconds the contract allows; batches lock with SKIP LOCKED, so a pass that overruns its
// interval and meets the next one shares the rows instead of expiring any twice.
//
// A second sweep re-queues create attempts left CREATING for longer than a create job can take
// (jobs that exhausted their retries; each claimed by moving its updated_at, so it is re-queued
// once per staleness period): the create handler asks the pending vendor first; and
// restarts disbursements, refunds and settlement payouts whose job chain went quiet
// (workers/payout-execute.ts, workers/refund-execute.ts); and fails beneficiary checks PENDING
// past their deadline (a verify chain that died: db/beneficiaries.ts), the deadline being hours,
// so once a minute is plenty.
import { failOverdueChecks } from '../db/beneficiaries.ts';
import { logger } from '../db/logger.ts';
import { expireBatch } from '../db/orders.ts';
import { claimStaleCreating } from '../db/orders.sql.ts';
import { sendJob } from '../db/queue.ts';
import type { WorkerContext } from './context.ts';
import { every, type Periodic } from './periodic.ts';
import { requeueStaleDisbursements, requeueStaleSettlements } from './payout-execute.ts';
import { requeueStaleRefunds } from './refund-execute.ts';

const BATCH = 500;
const STALE_CREATING_SECONDS = 300;

export async function sweepExpiredOrders(ctx: WorkerContext): Promise<number> {
  let total = 0;
  for (;;) {
    const expired = await expireBatch(ctx.pool, ctx.boss, BATCH);
    total += expired;
    if (expired < BATCH) return total;
  }
}

async function requeueStaleCreating(ctx: WorkerContext): Promise<number> {
  const stale = await claimStaleCreating(ctx.pool, STALE_CREATING_SECONDS, 100);
  for (const id of stale) await sendJob(ctx.boss, 'order-create', { order_id: id });
  return stale.length;
}

// Restarts are for chains that died (hours of deadline, minutes of staleness): once a minute.
const RESTARTS_INTERVAL_MS = 60_000;

/**
 * Runs the expiry sweep and the restart sweep until stopped; each runs once per interval
 * across every scheduler process (workers/periodic.ts).
 */
export function startExpirySweep(ctx: WorkerContext): Periodic {
  const expiry = every(ctx.pool, 'expiry', ctx.config.EXPIRY_SWEEP_INTERVAL_MS, async () => {
    const expired = await sweepExpiredOrders(ctx);
    if (expired) logger.info({ expired }, 'orders expired');
  });
  const restarts = every(ctx.pool, 'restarts', RESTARTS_INTERVAL_MS, async () => {
    const requeued = await requeueStaleCreating(ctx);
    if (requeued) logger.warn({ requeued }, 'stale create attempts re-queued');
    const restarted = await requeueStaleDisbursements(ctx);
    if (restarted) logger.warn({ restarted }, 'quiet disbursements re-queued');
    const refunds = await requeueStaleRefunds(ctx);
    if (refunds) logger.warn({ refunds }, 'quiet refunds re-queued');
    const settlements = await requeueStaleSettlements(ctx);
    if (settlements) logger.warn({ settlements }, 'quiet settlement payouts re-queued');
    const checks = await failOverdueChecks(ctx.pool);
    if (checks) logger.warn({ checks }, 'beneficiary checks past their deadline failed');
  });
  return {
    async stop() {
      await Promise.all([expiry.stop(), restarts.stop()]);
    },
  };
}
