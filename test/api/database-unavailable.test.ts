// A database that cannot be reached is the client's to retry, not Kasir's bug: the error
// handler answers 503 SERVICE_UNAVAILABLE with Retry-After (V1), 503 in the legacy envelope,
// never a 500. The errors are real: a pool pointed at a port where no Postgres listens, and a
// connection the server terminates under a running statement.
import t from 'tap';
import express from 'express';
import { createPool, isDatabaseUnavailable, sql } from '../../db/pool.ts';
import { freePort } from '../../scripts/lib/cluster.ts';
import { errorHandler } from '../../api/http/error-handler.ts';
import { requestLog } from '../../api/http/request-log.ts';
import { testDatabase } from '../helpers/db.ts';
import { call } from '../helpers/http.ts';

const url = await testDatabase(t);
const deadUrl = `postgres://kasir:kasir@127.0.0.1:${await freePort()}/kasir`;
/** A statement on a database that is not there (slonik connects when the pool is made). */
async function queryDown(): Promise<void> {
  const pool = await createPool(deadUrl, { size: 1, name: 'down' });
  try {
    await pool.query(sql.unsafe`select 1`);
  } finally {
    await pool.end();
  }
}
const live = await createPool(url, { size: 2, name: 'live' });
t.teardown(() => live.end());
// Another pool: slonik refuses a statement of the same pool while inside its transaction.
const admin = await createPool(url, { size: 1, name: 'admin', insideOtherTransactions: true });
t.teardown(() => admin.end());

t.test('the errors of a database that is down or goes away are told apart from bugs', async (t) => {
  const refused = await queryDown().then(() => null, (err: unknown) => err);
  t.ok(refused, 'a query to a port with no Postgres fails');
  t.ok(isDatabaseUnavailable(refused), 'connection refused is unavailable');

  const terminated = await live.transaction(async (tx) => {
    const pid = await tx.oneFirst(sql.unsafe`select pg_backend_pid()`);
    await admin.query(sql.unsafe`select pg_terminate_backend(${pid as number})`);
    return tx.query(sql.unsafe`select 1`).then(() => null, (err: unknown) => err);
  }).catch((err: unknown) => err);
  t.ok(terminated, 'a statement on a terminated connection fails');
  t.ok(isDatabaseUnavailable(terminated), 'a terminated connection is unavailable');

  // A connection left on a node that came back as a standby after a failover refuses writes.
  const readOnly = await live.transaction(async (tx) => {
    await tx.query(sql.unsafe`set transaction read only`);
    return tx.query(sql.unsafe`create temporary table failover_probe (x int)`).then(() => null, (err: unknown) => err);
  }).catch((err: unknown) => err);
  t.ok(isDatabaseUnavailable(readOnly), 'a write refused as read-only (a demoted primary) is unavailable');

  const syntax = await live.query(sql.unsafe`select from nowhere_at_all`).then(() => null, (err: unknown) => err);
  t.notOk(isDatabaseUnavailable(syntax), 'a bad statement is not');
  t.notOk(isDatabaseUnavailable(new Error('boom')), 'nor is any other error');
});

t.test('the API answers 503 with Retry-After while the database cannot be reached', async (t) => {
  const app = express();
  app.use(requestLog);
  app.get(['/v1/probe', '/api/probe'], async () => {
    await queryDown();
  });
  app.use(errorHandler('100kb'));
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  t.teardown(() => new Promise((resolve) => server.close(resolve)));
  const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;

  const v1 = await call(base, { path: '/v1/probe' });
  t.equal(v1.status, 503);
  t.equal(v1.headers['retry-after'], '2', 'about a failover\'s time in a few tries');
  t.match(v1.json, { success: false, error: { code: 'SERVICE_UNAVAILABLE', request_id: v1.headers['x-request-id'] } });
  t.match(v1.json.error.message, /same Idempotency-Key/, 'the message says a retry under the same key is safe');
  const legacy = await call(base, { path: '/api/probe' });
  t.equal(legacy.status, 503);
  t.same(legacy.json, { code: 503, message: 'Service Unavailable', data: null });
});
