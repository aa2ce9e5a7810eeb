// pg-boss's job completion as part of one of Kasir's own statements, so a job's result and its
// completion commit together in one round trip instead of two (the result's statement, then
// pg-boss's complete from the work loop): the vendor worker's confirmation of the attempts it
// fetched together (db/orders.sql.ts confirmAttempts, workers/order-create.ts).
//
// The update is pg-boss's own text (`completeJobs`, as `complete` runs it for jobs a worker
// fetched: fenced to the fetched attempt, so a job retried elsewhere meanwhile is left alone),
// not a copy. Its parameters are read from the caller's CTE instead of being sent: the ids, the
// attempts and each job's output are that CTE's rows, the queue's name a literal. Each job gets
// its own output, so `{ confirmed: 'xendit' }` and `{ confirmed: 'midtrans' }` share one statement.
// The sibling for pg-boss's insert is db/job-insert.ts.
import type { PgBoss } from 'pg-boss';
import { completeJobs } from 'pg-boss/dist/plans.js';
import { FragmentToken, type FragmentSqlToken } from '@slonik/sql-tag';
import { perQueue, type QueueName } from './queue.ts';

/** pg-boss's schema (its default, which Kasir keeps; db/job-claim.ts reads the same). */
const SCHEMA = 'pgboss';

/** The CTE a completion defines: the jobs it completed, with the attempt each was completed at (`id`, `retry_count`). */
export const JOBS_COMPLETED = 'jobs_completed';

/**
 * The CTE `jobs_completed`, completing the jobs listed by the caller's CTE `source`, whose columns
 * are `job_id` (uuid), `retry_count` (int, the attempt the worker fetched) and `output` (jsonb).
 */
export type JobsCompletion = (source: string) => FragmentSqlToken;

/** The completion for queue `name`; its table is read once per pg-boss instance. */
export const completionFor = perQueue(load);

/** pg-boss's statement is `WITH results AS (<the update> RETURNING id) SELECT <count and ids>`: its update is what is kept. */
const SHAPE = /^\s*WITH results AS \(\s*(UPDATE [\s\S]+?RETURNING id)\s*\)\s*SELECT COUNT\(\*\)[^()]*\(array_agg\(id\)[^()]*\)[^()]*FROM results\s*$/;

async function load(boss: PgBoss, name: QueueName): Promise<JobsCompletion> {
  const queue = await boss.getQueue(name);
  if (!queue) throw new Error(`queue ${name} does not exist`);
  if (!/^[a-z_][a-z0-9_]*$/.test(queue.table) || !/^[a-z-]+$/.test(name)) throw new Error(`unexpected pg-boss queue ${name} or table ${queue.table}`);
  const update = SHAPE.exec(completeJobs(SCHEMA, queue.table, false, true))?.[1];
  // $1 the queue, $2 the ids, $3 the output, $4 the fetched attempts (`id:retry_count`).
  if (!update || [1, 2, 3, 4].some((n) => update.split(new RegExp(`\\$${n}(?![0-9])`)).length !== 2) || /\$[05-9]/.test(update)) {
    throw new Error(`pg-boss's completion for ${name} no longer has the shape Kasir embeds`);
  }
  return (source) => {
    if (!/^[a-z_]+$/.test(source)) throw new Error(`unexpected CTE name ${source}`);
    const text = update
      .replace(/\$1(?![0-9])/, () => `'${name}'`)
      .replace(/\$2(?![0-9])/, () => `array(select job_id from ${source})`)
      // The job's own output: pg-boss's update names its table unaliased, as the target. The
      // attempt too, so two attempts of one job in a batch (one retried elsewhere) give one row.
      .replace(/\$3(?![0-9])/, () => `(select s.output from ${source} s where s.job_id = ${queue.table}.id and s.retry_count = ${queue.table}.retry_count)`)
      // The attempt pairs as pg-boss builds them (attemptPairs): the id's canonical text, a colon, the retry count.
      .replace(/\$4(?![0-9])/, () => `array(select job_id::text || ':' || retry_count::text from ${source})`);
    // pg-boss returns the ids; the attempt beside them tells two attempts of one job apart.
    return { type: FragmentToken, sql: `${JOBS_COMPLETED} as (${text}, retry_count)`, values: [] } as unknown as FragmentSqlToken;
  };
}
