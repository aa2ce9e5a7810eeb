// The expiry sweep (scheduler group): every EXPIRY_SWEEP_INTERVAL_MS, PENDING orders past
// expires_at become EXPIRED, in batches, each batch one transaction with its events and
// webhooks. A sweep over an index beats a delayed job per order: millions of deferred jobs
// would slow every queue fetch. SKIP LOCKED lets several scheduler processes share the work,
// and a restarted process simply finds the overdue rows on its next pass, well within the
// 30 seconds the contract allows.
//
// The same loop re-queues create attempts left CREATING for longer than a create job can take
// (jobs that exhausted their retries): the create handler asks the pending vendor first; and
// restarts disbursements, refunds and settlement payouts whose job chain went quiet
// (workers/payout-execute.ts, workers/refund-execute.ts); and fails beneficiary checks PENDING
// past their deadline (a verify chain that died: db/beneficiaries.ts), the deadline being hours,
// so once a minute is plenty.
import { failOverdueChecks } from '../db/beneficiaries.ts';
import { logger } from '../db/logger.ts';
import { expireBatch } from '../db/orders.ts';
import { findStaleCreating } from '../db/orders.sql.ts';
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
  const stale = await findStaleCreating(ctx.pool, STALE_CREATING_SECONDS, 100);
  for (const id of stale) await sendJob(ctx.boss, 'order-create', { order_id: id });
  return stale.length;
}

/** Runs the sweep forever (until stopped); one pass at a time, never overlapping. */
export function startExpirySweep(ctx: WorkerContext): Periodic {
  let lastStaleCheck = 0;
  return every('expiry', ctx.config.EXPIRY_SWEEP_INTERVAL_MS, async () => {
    const expired = await sweepExpiredOrders(ctx);
    if (expired) logger.info({ expired }, 'orders expired');
    if (Date.now() - lastStaleCheck > 60_000) {
      lastStaleCheck = Date.now();
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
    }
  });
}
