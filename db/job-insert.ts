// pg-boss's job insert as part of one of Kasir's own statements, so the row a job is about and
// the job commit together in one round trip instead of a transaction of four (START, the row,
// pg-boss's insert, COMMIT): the API's order create (db/orders.sql.ts).
//
// The insert is pg-boss's own text (`insertJobs` from its plans, as `send` runs it), not a copy:
// column defaults from the queue's row, the queue's table, policy checks, all as pg-boss writes
// them. Two things differ, both the way pg-boss composes its own statements:
// - its job list parameter ($1) is read from the caller's CTE (`(select $1 from gate)`), so the
//   job is inserted only when the caller's row was (pg-boss's flow batches substitute $1 the
//   same way);
// - its wake-up NOTIFY for a notify-enabled queue is this module's CTE, with pg-boss's channel
//   and payload, because pg-boss's own wrapper is a WITH of its own and cannot be nested.
import type { PgBoss } from 'pg-boss';
import { insertJobs, notifyChannelSql } from 'pg-boss/dist/plans.js';
import { FragmentToken, type FragmentSqlToken } from '@slonik/sql-tag';
import { perQueue, queues, type Payload, type QueueName } from './queue.ts';

/** pg-boss's schema (its default, which Kasir keeps; db/job-claim.ts reads the same). */
const SCHEMA = 'pgboss';

/** The CTE a statement built with jobsFor must reference (`where (select count(*) from jobs_notified) >= 0`) so the wake-up runs. */
export const JOBS_NOTIFIED = 'jobs_notified';

/** The CTEs that insert one job per payload of `data` if the caller's CTE `gate` returned a row. */
export type JobsFragment<Q extends QueueName> = (gate: string, data: readonly Payload<Q>[]) => FragmentSqlToken;

const built = perQueue(load);

/**
 * For queue `name`: a builder of the CTEs `queued_jobs` (pg-boss's insert, one job per payload,
 * each checked by the queue's schema as sendJob checks it) and `jobs_notified` (the queue's
 * wake-up). The queue's table and notify setting are read once per pg-boss instance.
 */
export function jobsFor<Q extends QueueName>(boss: PgBoss, name: Q): Promise<JobsFragment<Q>> {
  return built(boss, name) as Promise<JobsFragment<Q>>;
}

async function load(boss: PgBoss, name: QueueName): Promise<JobsFragment<QueueName>> {
  const queue = await boss.getQueue(name);
  if (!queue) throw new Error(`queue ${name} does not exist`);
  const insert = insertJobs(SCHEMA, { table: queue.table, name, returnId: true, notify: false });
  if (insert.split('$1').length !== 2) throw new Error(`pg-boss's insert for ${name} no longer takes its jobs as one parameter`);
  const notify = queue.notify ? `select pg_notify(${notifyChannelSql(SCHEMA)}, '${name}') from queued_jobs limit 1` : 'select 1 where false';
  const schema = queues[name].schema;
  return (gate, data) => {
    if (!/^[a-z_]+$/.test(gate)) throw new Error(`unexpected CTE name ${gate}`);
    const jobs = insert.replace('$1', () => `(select $slonik_1::text from ${gate} limit 1)`);
    return {
      type: FragmentToken,
      sql: `queued_jobs as (${jobs}), ${JOBS_NOTIFIED} as (${notify})`,
      values: [JSON.stringify(data.map((d) => ({ data: schema.parse(d) })))],
    } as unknown as FragmentSqlToken;
  };
}
