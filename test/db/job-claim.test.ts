// Kasir's fetch (db/job-claim.ts): it claims what pg-boss's fetch claims, in pg-boss's order,
// with pg-boss's attempt count (which complete, fail and touch are fenced to), and it reads
// only the jobs it claims even on planner statistics from before the queue filled, where
// pg-boss's own statement may walk the whole queue for each fetch.
import { randomUUID } from 'node:crypto';
import t from 'tap';
import pg from 'pg';
import type { PgBoss } from 'pg-boss';
import { jobClaimer, claimStatement } from '../../db/job-claim.ts';
import { sendJob, startBoss } from '../../db/queue.ts';
import { testDatabase } from '../helpers/db.ts';

const url = await testDatabase(t);
const boss: PgBoss = await startBoss(url, { role: 'worker', preparedStatements: false, poolSize: 4 });
t.teardown(() => boss.stop({ graceful: false }));
const claim = jobClaimer(boss, 'ping');
const state = async (id: string) => (await boss.getJobById('ping', id))!;
const sent = async (n: number, options: Parameters<typeof sendJob>[3] = {}) => (await sendJob(boss, 'ping', { sent_at: n }, options))!;
/** Claims until the queue has nothing due, so each test starts from an empty line. */
const drain = async () => {
  while ((await claim({ batchSize: 100 })).length);
};

t.test('claims by priority, then creation, no more than the batch, passing over held-back groups and future jobs', async (t) => {
  await drain();
  const first = await sent(1);
  const second = await sent(2);
  const urgent = await sent(3, { priority: 5 });
  const later = await sent(4, { startAfter: 3600 });
  const passedOver = await sent(5, { group: { id: 'full.example' } });
  const grouped = await sent(6, { group: { id: 'open.example' } });

  const two = await claim({ batchSize: 2, ignoreGroups: ['full.example'] });
  // Which jobs, not in what order: like pg-boss's, the claim returns its rows as the update met them.
  const byId = new Map(two.map((j) => [j.id, j]));
  t.same([...byId.keys()].sort(), [urgent, first].sort(), 'the higher priority, then the oldest');
  const job = byId.get(urgent)!;
  t.same(job.data, { sent_at: 3 }, 'with its data');
  t.equal(job.name, 'ping', 'and its queue');
  t.equal(job.retryCount, 0, 'a first claim is attempt 0');
  t.equal(job.expireInSeconds, 60, "with the queue's expiry as a number");
  t.equal((await state(urgent)).state, 'active', 'a claimed job is active');
  t.equal((await state(second)).state, 'created', 'one beyond the batch is not');

  const rest = await claim({ batchSize: 10, ignoreGroups: ['full.example'] });
  t.same(rest.map((j) => j.id).sort(), [second, grouped].sort(), 'the rest, a group not held back included');
  t.equal(rest.find((j) => j.id === grouped)?.groupId, 'open.example', 'with its group');
  t.equal((await state(passedOver)).state, 'created', 'a held-back group is passed over');
  t.equal((await state(later)).state, 'created', 'a job not yet due is passed over');
  t.same((await claim({ batchSize: 10 })).map((j) => j.id), [passedOver], 'the held-back group is claimed once no longer held back');
});

t.test('a reclaimed job counts its attempt, and only the current attempt may settle it', async (t) => {
  await drain();
  const id = await sent(10);
  const [once] = await claim({ batchSize: 1 });
  // An expired claim, as the supervisor leaves it: back to retry, due now.
  await boss.getDb().executeSql(`update pgboss.job_common set state = 'retry', start_after = now() - interval '1 second' where name = 'ping' and id = $1`, [id]);
  const [twice] = await claim({ batchSize: 1 });
  t.equal(twice.id, id, 'the job is claimed again');
  t.equal(twice.retryCount, once.retryCount + 1, 'as its next attempt');
  // pg-boss answers how many jobs a settle changed (its types do not say so).
  const affected = (r: unknown) => (r as { affected: number }).affected;
  t.equal(affected(await boss.complete('ping', [{ id, retryCount: once.retryCount }], { by: 'the first attempt' })), 0, "the first attempt's completion is refused");
  t.equal(affected(await boss.complete('ping', [{ id, retryCount: twice.retryCount }], { by: 'the second attempt' })), 1, "the current attempt's is taken");
  t.same((await state(id)).output, { by: 'the second attempt' }, 'with its output');
});

t.test('on statistics from before the queue filled, a claim reads the jobs it claims, not the queue', async (t) => {
  await drain();
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  t.teardown(() => client.end());
  // The job table analyzed while it holds another queue's jobs only, then 3,000 jobs of this
  // one: the planner believes the queue holds none of them, as it did in a flash sale's first
  // seconds (the orders' jobs analyzed, then their webhooks queued).
  await boss.insert('order-reconcile', Array.from({ length: 5000 }, () => ({ data: { order_id: randomUUID() }, startAfter: 3600 })));
  await client.query('analyze pgboss.job_common');
  await boss.insert('ping', Array.from({ length: 3000 }, (_, n) => ({ data: { sent_at: n } })));

  const batch = 100;
  const explain = async (text: string, values: unknown[]) => {
    await client.query('begin');
    try {
      const { rows } = await client.query(`explain (analyze, format json) ${text}`, values);
      return (rows[0] as { 'QUERY PLAN': [{ Plan: PlanNode }] })['QUERY PLAN'][0].Plan;
    } finally {
      await client.query('rollback');
    }
  };

  const plan = await explain(claimStatement('job_common'), ['ping', batch, []]);
  const read = jobRowsRead(plan);
  t.comment(`job rows read by one claim of ${batch}: ${read}`);
  // The claimed rows are found again by their ids, an array computed once, never by a join the
  // planner could turn round (pg-boss's \`FROM next WHERE j.id = next.id\` is a nested loop whose
  // sides follow the estimates: a scan of the queue per claimed row, 300,000 rows here).
  t.same(nodes(plan).filter((n) => JOINS.has(n['Node Type'])).map((n) => n['Node Type']), [], 'no join in the plan');
  const { rows: [server] } = await client.query<{ version: number }>(`select current_setting('server_version_num')::int as version`);
  if (server.version >= 180000) {
    // PostgreSQL 18 probes the primary key with the array whatever the estimates: the claim reads
    // its batch, the rows its LIMIT looked past, and the same ids again.
    t.ok(read <= 4 * batch, `a claim of ${batch} reads at most ${4 * batch} job rows (read ${read})`);
    const probe = nodes(plan).find((n) => n['Relation Name'] === 'job_common' && n['Index Name'] === 'job_common_pkey');
    t.match(probe?.['Index Cond'], /id = ANY/, 'the update probes the primary key with the claimed ids');
  } else {
    // Older majors (15 in CI) may take the array as a filter over the queue's primary-key range
    // when they believe that range holds one row: one pass over the queue, not one per job.
    t.ok(read <= 3000 + 4 * batch, `a claim of ${batch} reads the queue at most once (read ${read} of 3,000)`);
  }
});

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Actual Rows': number;
  'Actual Loops': number;
  'Rows Removed by Filter'?: number;
  'Index Name'?: string;
  'Index Cond'?: string;
  Plans?: PlanNode[];
}

const JOINS = new Set(['Nested Loop', 'Hash Join', 'Merge Join']);
const nodes = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodes)];

/** Rows of the job table that scans of it returned or filtered out, over all their loops. */
function jobRowsRead(plan: PlanNode): number {
  return nodes(plan)
    .filter((n) => n['Relation Name'] === 'job_common' && n['Node Type'] !== 'ModifyTable')
    .reduce((sum, n) => sum + (n['Actual Rows'] + (n['Rows Removed by Filter'] ?? 0)) * n['Actual Loops'], 0);
}

