// The statements behind the database gauges (db/metrics.ts), run on a scrape. Each walks a
// partial index only, so its cost follows the backlog, never the history: pg-boss's index of
// waiting jobs (state < active, not blocked), and the partial index of each watched state.
import { z } from 'zod';
import { sql, type Db } from './pool.ts';

const queueRow = z.object({
  name: z.string(),
  ready: z.number(),
  deferred: z.number(),
  active: z.number(),
  failed: z.number(),
  oldest_ready_seconds: z.number(),
});
export type QueueGaugeRow = z.infer<typeof queueRow>;

/**
 * Per queue: jobs due now (ready), scheduled for later (deferred: retries, delayed reconciles),
 * and how long the oldest due job has been due; counted now. Active and failed come from
 * pg-boss's own figures, refreshed by its monitor (QUEUE_MONITOR_INTERVAL_SECONDS): counting
 * them here would walk the retained job history.
 */
export async function readQueueGauges(db: Db): Promise<readonly QueueGaugeRow[]> {
  return db.any(sql.type(queueRow)`
    select q.name,
           coalesce(w.ready, 0)::int as ready,
           coalesce(w.deferred, 0)::int as deferred,
           q.active_count::int as active,
           q.failed_count::int as failed,
           coalesce(w.oldest_ready_seconds, 0)::float8 as oldest_ready_seconds
      from pgboss.queue q
      left join (
        select name,
               count(*) filter (where start_after <= now()) as ready,
               count(*) filter (where start_after > now()) as deferred,
               extract(epoch from now() - min(start_after) filter (where start_after <= now())) as oldest_ready_seconds
          from pgboss.job
         where state < 'active' and not blocked
         group by name
      ) w on w.name = q.name
     order by q.name`);
}

const stateRow = z.object({ table: z.string(), status: z.string(), count: z.number(), oldest_age_seconds: z.number() });
export type StateGaugeRow = z.infer<typeof stateRow>;

/**
 * Rows in the states an operator watches: create attempts not yet resolved, money out at a
 * vendor without a final answer, settlements failed and waiting for an operator, and refunds
 * and payouts UNRESOLVED (an unclear vendor answer no read can settle: an operator must; they
 * are also counted in their PENDING / ON_PROCESS / PROCESSING row). Age is since the row last
 * changed (updated_at), the clock the stale-work sweeps use too.
 */
export async function readStateGauges(db: Db): Promise<readonly StateGaugeRow[]> {
  const age = sql.fragment`coalesce(extract(epoch from now() - min(updated_at)), 0)::float8 as oldest_age_seconds`;
  return db.any(sql.type(stateRow)`
    select 'orders' as "table", 'CREATING' as status, count(*)::int as count, ${age} from orders where status = 'CREATING'
    union all
    select 'disbursements', 'ON_PROCESS', count(*)::int, ${age} from disbursements where status = 'ON_PROCESS'
    union all
    select 'refunds', 'PENDING', count(*)::int, ${age} from refunds where status = 'PENDING'
    union all
    select 'settlements', 'PENDING', count(*)::int, ${age} from settlements where status = 'PENDING'
    union all
    select 'settlements', 'PROCESSING', count(*)::int, ${age} from settlements where status = 'PROCESSING'
    union all
    select 'settlements', 'FAILED', count(*)::int, ${age} from settlements where status = 'FAILED'
    union all
    select 'refunds', 'UNRESOLVED', count(*)::int, ${age} from refunds where status = 'PENDING' and unresolved_at is not null
    union all
    select 'disbursements', 'UNRESOLVED', count(*)::int, ${age} from disbursements where status = 'ON_PROCESS' and unresolved_at is not null
    union all
    select 'settlements', 'UNRESOLVED', count(*)::int, ${age} from settlements where status = 'PROCESSING' and unresolved_at is not null`);
}
