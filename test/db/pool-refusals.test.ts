// A refusal thrown inside pool.transaction rolls back and keeps its connection (db/pool.ts
// keepRefusalsPooled): a race of refusals opens no more backends than the pool holds, the
// refused writes are gone, after-commit work does not run, and database errors keep slonik's
// handling. Before the fix every refusal cost a new Postgres session.
import t from 'tap';
import { randomUUID } from 'node:crypto';
import { ApiError } from '../../db/errors.ts';
import { afterCommit } from '../../db/metrics.ts';
import { createPool, sql } from '../../db/pool.ts';
import { SlonikError } from 'slonik';
import { z } from 'zod';
import { testDatabase } from '../helpers/db.ts';

const databaseUrl = await testDatabase(t);
const SIZE = 3;
const pool = await createPool(databaseUrl, { size: SIZE, name: 'test' });
t.teardown(() => pool.end());
await pool.query(sql.unsafe`create table refusal_probe (id uuid primary key, backend int not null)`);

class LegacyStyleRefusal extends Error {}
class InsufficientStyleRefusal extends Error {
  code = 'INSUFFICIENT_BALANCE';
}

const refusals: Array<[string, () => Error]> = [
  ['ApiError', () => new ApiError('INSUFFICIENT_BALANCE')],
  ['another module’s refusal class', () => new LegacyStyleRefusal('Order ID already used')],
  ['an error with a business code', () => new InsufficientStyleRefusal('short of money')],
];

for (const [kind, refusal] of refusals) {
  t.test(`${kind}: 200 refusals in a race use at most the pool's ${SIZE} backends and write nothing`, async (t) => {
    const backends = new Set<number>();
    let ranAfterCommit = 0;
    const outcomes = await Promise.allSettled(
      Array.from({ length: 200 }, () =>
        pool.transaction(async (tx) => {
          const backend = await tx.oneFirst(sql.type(z.object({ pid: z.number() }))`select pg_backend_pid() as pid`);
          backends.add(backend);
          await tx.query(sql.unsafe`insert into refusal_probe (id, backend) values (${randomUUID()}, ${backend})`);
          afterCommit(tx, () => ranAfterCommit++);
          throw refusal();
        }),
      ),
    );
    t.ok(outcomes.every((o) => o.status === 'rejected' && (o.reason as Error).message === refusal().message), 'every caller gets its own refusal');
    t.ok(backends.size <= SIZE, `${backends.size} backends served 200 refusals`);
    t.equal(await pool.oneFirst(sql.type(z.object({ n: z.number() }))`select count(*)::int as n from refusal_probe`), 0, 'every refused write rolled back');
    t.equal(ranAfterCommit, 0, 'after-commit work of refused transactions never ran');
    // The same connections still commit normally afterwards.
    await pool.transaction((tx) => tx.query(sql.unsafe`insert into refusal_probe (id, backend) values (${randomUUID()}, pg_backend_pid())`));
    t.equal(await pool.oneFirst(sql.type(z.object({ n: z.number() }))`select count(*)::int as n from refusal_probe`), 1);
    await pool.query(sql.unsafe`delete from refusal_probe`);
  });
}

t.test('a committed transaction still runs its after-commit work and returns its value', async (t) => {
  let ran = 0;
  const value = await pool.transaction(async (tx) => {
    afterCommit(tx, () => ran++);
    return 42;
  });
  t.equal(value, 42);
  t.equal(ran, 1);
});

t.test('a database error keeps slonik’s handling: it reaches the caller as slonik’s error, nothing is written', async (t) => {
  const id = randomUUID();
  await pool.query(sql.unsafe`insert into refusal_probe (id, backend) values (${id}, 0)`);
  const error = await pool
    .transaction(async (tx) => {
      await tx.query(sql.unsafe`insert into refusal_probe (id, backend) values (${randomUUID()}, 1)`);
      await tx.query(sql.unsafe`insert into refusal_probe (id, backend) values (${id}, 2)`);
    })
    .then(() => null, (e: unknown) => e);
  t.ok(error instanceof SlonikError, 'slonik’s own error class');
  t.match((error as Error).message, /unique integrity constraint/);
  t.equal(await pool.oneFirst(sql.type(z.object({ n: z.number() }))`select count(*)::int as n from refusal_probe`), 1, 'only the row from before');
  await pool.query(sql.unsafe`delete from refusal_probe`);
});
