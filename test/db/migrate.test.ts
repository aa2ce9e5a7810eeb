import t from 'tap';
import pg from 'pg';
import { pathToFileURL } from 'node:url';
import { migrate, readMigrations } from '../../db/migrate.ts';
import { emptyDatabase } from '../helpers/db.ts';

async function query(url: string, text: string) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(text)).rows;
  } finally {
    await client.end();
  }
}

t.test('migrations apply once, in order, and a second run is a no-op', async (t) => {
  const url = await emptyDatabase(t);
  const all = await readMigrations();
  const first = await migrate(url);
  t.same(first, all.map((m) => `${String(m.id).padStart(3, '0')}_${m.name}`));
  t.same(await migrate(url), [], 'nothing left to apply');
  const recorded = await query(url, 'select id from kasir_migrations order by id');
  t.same(recorded.map((r) => r.id), all.map((m) => m.id));
});

t.test('two concurrent runners apply each migration exactly once', async (t) => {
  const url = await emptyDatabase(t);
  const [a, b] = await Promise.all([migrate(url), migrate(url)]);
  const all = await readMigrations();
  t.equal(a.length + b.length, all.length, 'the migrations were split, not doubled');
  t.ok(a.length === 0 || b.length === 0, 'one runner did all the work while the other waited on the lock');
  const brands = await query(url, 'select count(*)::int as n from brands where is_default');
  t.equal(brands[0].n, 1, 'seed rows inserted once');
});

t.test('an applied migration edited afterwards is refused', async (t) => {
  const url = await emptyDatabase(t);
  await migrate(url);
  await query(url, "update kasir_migrations set checksum = 'edited' where id = 1");
  await t.rejects(migrate(url), /edited after it was applied/);
});

t.test('a failing migration rolls back whole and is not recorded', async (t) => {
  const url = await emptyDatabase(t);
  const dir = t.testdir({
    '001_good.sql': 'create table good (id int);',
    '002_bad.sql': 'create table half (id int);\ninsert into nowhere values (1);',
  });
  await t.rejects(migrate(url, pathToFileURL(`${dir}/`)), /002_bad failed/);
  const tables = await query(url, "select tablename from pg_tables where tablename in ('good', 'half') order by 1");
  t.same(tables.map((r) => r.tablename), ['good'], 'the failed file left no table behind');
  const recorded = await query(url, 'select id from kasir_migrations');
  t.same(recorded.map((r) => r.id), [1]);
});
