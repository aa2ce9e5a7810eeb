// The fetch of Kasir's work loops (workers/work.ts, workers/webhook-dispatch.ts): pg-boss's own
// fetch for a standard queue, with one change in how the claimed rows are found again.
//
// pg-boss claims a batch as `WITH next AS (select ... limit n for update skip locked) UPDATE job
// FROM next WHERE job.id = next.id`, and leaves the join's order to the planner. On statistics
// from before a burst (pg-boss's job table analyzed while it held other queues' jobs) both sides
// are estimated at one row, and the planner may put `next` on the inner side of a nested loop
// over every job of the queue: a burst of 6,000 order.expired webhooks read the whole queue for
// each fetch of 100 (599,900 rows removed by the join filter, 33 ms a fetch; docs/performance.md,
// "The burst as a flash sale makes it"). pg-boss itself uses this statement's cure for its
// group-concurrency fetch: the claimed ids become one array, computed once, and the UPDATE
// probes the primary key with it, whatever the estimates say.
//
// Everything else is pg-boss's, column for column: the claim (state, started_on, heartbeat_on,
// and retry_count counted up on a reclaim, which is the attempt pg-boss's complete, fail and touch
// are fenced to), the order (priority, then creation) and the index it reads (job_i11), and the
// returned fields of its Job. Only the standard policy is written here: no Kasir queue has
// another, and a queue that did would be refused at the first fetch.
import type { Job, PgBoss } from 'pg-boss';

export interface ClaimOptions {
  batchSize: number;
  /** Jobs of these groups are passed over (the webhook dispatcher's full destinations). */
  ignoreGroups?: readonly string[];
}

export type ClaimJobs = (options: ClaimOptions) => Promise<Job<unknown>[]>;

/** pg-boss's schema (its default, which Kasir keeps). */
const SCHEMA = 'pgboss';

/**
 * A claimer for one queue. Its table (pg-boss's common job table, or the queue's own partition)
 * is read on the first claim; the statement's text is one per queue, so it is prepared once.
 */
export function jobClaimer(boss: PgBoss, name: string): ClaimJobs {
  let statement: Promise<string> | null = null;
  const text = async () => {
    const queue = await boss.getQueue(name);
    if (!queue) throw new Error(`queue ${name} does not exist`);
    if (queue.policy !== 'standard') throw new Error(`queue ${name} has policy ${queue.policy}: only standard queues are claimed by jobClaimer`);
    return claimStatement(queue.table);
  };
  return async ({ batchSize, ignoreGroups = [] }) => {
    statement ??= text().catch((err: unknown) => {
      statement = null;
      throw err;
    });
    const result = await boss.getDb().executeSql(await statement, [name, batchSize, ignoreGroups]);
    return result.rows as Job<unknown>[];
  };
}

/** The claim, on the job table `table` of pg-boss's schema ($1 queue, $2 batch size, $3 groups passed over). */
export function claimStatement(table: string): string {
  if (!/^[a-z_][a-z0-9_]*$/.test(table)) throw new Error(`unexpected pg-boss job table name ${table}`);
  const job = `${SCHEMA}.${table}`;
  return `
    with next as (
      select j.id
      from ${job} j
      where j.name = $1
        and j.state < 'active'
        and not j.blocked
        and j.start_after <= ${SCHEMA}.job_now()
        and (j.group_id is null or j.group_id <> all($3::text[]))
      order by j.priority desc, j.created_on
      limit $2
      for update of j skip locked
    )
    update ${job} j set
      state = 'active',
      started_on = ${SCHEMA}.job_now(),
      heartbeat_on = ${SCHEMA}.job_now(),
      retry_count = case when started_on is not null then retry_count + 1 else retry_count end
    where j.name = $1 and j.id = any (array(select id from next))
    returning j.id, j.name, j.data, j.retry_count as "retryCount", j.expire_seconds as "expireInSeconds",
      j.heartbeat_seconds as "heartbeatSeconds", j.group_id as "groupId", j.group_tier as "groupTier"`;
}
