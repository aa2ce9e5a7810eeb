// The scheduler's statistics sweep (workers/statistics-sweep.ts, db/table-statistics.ts): a
// table a burst has changed is analyzed within seconds, by a real scheduler process, where
// autovacuum would wait for its next look (a minute at most). last_analyze is set only by an
// ANALYZE statement (autovacuum's own sets last_autoanalyze), so it tells the sweep's work.
import t from 'tap';
import { z } from 'zod';
import { createPool, sql } from '../../db/pool.ts';
import { staleTables } from '../../db/table-statistics.ts';
import { testEnv } from '../helpers/config.ts';
import { testDatabase } from '../helpers/db.ts';
import { eventually } from '../helpers/http.ts';
import { startWorkerGroup } from '../helpers/processes.ts';

const url = await testDatabase(t);
// One connection: a backend flushes its table counters at a transaction's end once a second has
// passed, or after 10 s idle (PostgreSQL 15+). With one connection the polls that wait for an
// insert's counts run on the backend that made it, and flush them; with two, the inserting one
// could sit idle for 10 s, past the polls' deadline.
const pool = await createPool(url, { size: 1 });
t.teardown(() => pool.end());

const analyzed = z.object({ last_analyze: z.date().nullable(), estimate: z.number() });
const statsOf = (table: string) =>
  pool.one(sql.type(analyzed)`
    select s.last_analyze, c.reltuples::int8 as estimate
    from pg_stat_user_tables s join pg_class c on c.oid = s.relid
    where s.schemaname = current_schema() and s.relname = ${table}`);

t.test('a burst of rows is analyzed within seconds by the scheduler', async (t) => {
  // Autovacuum off for the probe: had it analyzed the table first (last_autoanalyze, and the
  // change count reset), the sweep would rightly find nothing to do and the wait would time out,
  // as it did on a stock PostgreSQL 15 whose autovacuum looked within the minute.
  await pool.query(sql.unsafe`create table burst_probe (n int primary key, kind text not null) with (autovacuum_enabled = false)`);
  await pool.query(sql.unsafe`analyze burst_probe`);
  const before = await statsOf('burst_probe');
  await pool.query(sql.unsafe`insert into burst_probe select n, case when n % 10 = 0 then 'rare' else 'common' end from generate_series(1, 5000) n`);
  // pg_stat_user_tables learns of the insert when the backend reports its counters (at once
  // for a finished transaction, give or take the stats collector's flush).
  await eventually(async () => ((await staleTables(pool)).some((s) => s.name === 'burst_probe') ? true : undefined), 'the insert to count as a change');

  await startWorkerGroup(t, 'scheduler', testEnv(url));
  const after = await eventually(async () => {
    const now = await statsOf('burst_probe');
    return now.last_analyze && (!before.last_analyze || now.last_analyze > before.last_analyze) ? now : undefined;
  }, 'the statistics sweep to analyze burst_probe', 60_000); // the scheduler's start included: slow on a busy machine
  t.equal(after.estimate, 5000, 'the planner now knows the table holds 5,000 rows');
  t.notOk((await staleTables(pool)).some((s) => s.name === 'burst_probe'), 'and it is no longer stale');
});

t.test('a table with few changes is left to autovacuum', async (t) => {
  // Autovacuum off here too: an analyze of its own would reset the change count this test reads.
  await pool.query(sql.unsafe`create table calm_probe (n int primary key) with (autovacuum_enabled = false)`);
  const changed = () => pool.oneFirst(sql.type(z.object({ c: z.number() }))`
    select n_mod_since_analyze::int8 as c from pg_stat_user_tables where relname = 'calm_probe'`);
  await pool.query(sql.unsafe`insert into calm_probe select generate_series(1, 10000)`);
  // A backend reports its counters a little after its commit: the insert must be counted before
  // the ANALYZE, or its late report would count as changes after it.
  await eventually(async () => ((await changed()) >= 10_000 ? true : undefined), 'the insert to be counted');
  await pool.query(sql.unsafe`analyze calm_probe`);
  await pool.query(sql.unsafe`update calm_probe set n = n + 100000 where n <= 100`);
  await eventually(async () => ((await changed()) === 100 ? true : undefined), 'the update to be counted');
  t.notOk((await staleTables(pool)).some((s) => s.name === 'calm_probe'), '100 of 10,000 rows changed: below 50 + 10 %');
});
