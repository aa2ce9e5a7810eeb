// The idempotency-key sweep (scheduler group): keys are a promise to replay a create for
// IDEMPOTENCY_KEY_TTL_HOURS (at least 24), not forever. Each pass deletes the older ones in
// statements of BATCH rows, each its own short transaction, until a statement finds fewer:
// a backlog (the first pass after keys were kept forever) never becomes one long transaction
// holding millions of row locks. Orders are untouched; a key that is gone only means a repeated
// request is answered by merchant_order_id (spec 4.2 rule 3) instead of by replay. SKIP LOCKED
// lets several scheduler processes run it; a pass that fails is retried on the next one.
import { logger } from '../db/logger.ts';
import { deleteAnswersOlderThan } from '../db/idempotency.ts';
import { deleteIdempotencyKeysOlderThan } from '../db/orders.sql.ts';
import type { WorkerContext } from './context.ts';
import { every, type Periodic } from './periodic.ts';

const BATCH = 1_000;
// Keys live for a day or more: a pass every 10 minutes keeps none more than that past its TTL,
// and a pass with nothing to delete is one index probe.
const INTERVAL_MS = 10 * 60_000;

/** Deletes every key past the TTL (order keys and the other POSTs' answers), BATCH rows per statement; returns how many. */
export async function sweepIdempotencyKeys(ctx: WorkerContext, stopped: () => boolean = () => false): Promise<number> {
  let total = 0;
  for (const deleteOlder of [deleteIdempotencyKeysOlderThan, deleteAnswersOlderThan]) {
    for (;;) {
      const deleted = await deleteOlder(ctx.pool, ctx.config.IDEMPOTENCY_KEY_TTL_HOURS, BATCH);
      total += deleted;
      if (deleted < BATCH || stopped()) break;
    }
  }
  return total;
}

/** Runs a pass at start and every INTERVAL_MS until stopped; passes never overlap. */
export function startIdempotencySweep(ctx: WorkerContext): Periodic {
  return every(ctx.pool, 'idempotency-keys', INTERVAL_MS, async (stopped) => {
    const deleted = await sweepIdempotencyKeys(ctx, stopped);
    if (deleted) logger.info({ deleted, ttlHours: ctx.config.IDEMPOTENCY_KEY_TTL_HOURS }, 'idempotency keys past their TTL deleted');
  });
}
