// libpq multi-host connection URLs (db/database-hosts.ts): every connection Kasir opens takes
// `postgres://…@host1:port1,host2:port2/db?target_session_attrs=…`, skips a node that is down,
// and lands on a node whose state fits. Proves it with a node that refuses connections, and
// with a real primary and streaming standby named standby first.
import t from 'tap';
import { parseConfig } from '../../db/config.ts';
import { newClient, parseDatabaseUrl } from '../../db/database-hosts.ts';
import { prepareDatabase } from '../../db/migrate.ts';
import { createPool, sql } from '../../db/pool.ts';
import { startBoss } from '../../db/queue.ts';
import { freePort } from '../../scripts/lib/cluster.ts';
import { testDatabase } from '../helpers/db.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { ledgerAudit, paidOrder } from '../helpers/money.ts';
import { replicatedDatabase, startReplicaPair } from '../helpers/replica.ts';
import { startStack } from '../helpers/stack.ts';

/** `url` with `extra` (host:port) put before its own host, and the query given. */
function withHostsBefore(url: string, extra: string[], query: string): string {
  const u = new URL(url);
  return `postgres://${u.username}:${u.password}@${[...extra, u.host].join(',')}${u.pathname}?${query}`;
}

t.test('the host list is read as libpq writes it', async (t) => {
  const parsed = parseDatabaseUrl('postgres://k:p%40ss@db1:5433,db2,[::1]:6000/kasir?target_session_attrs=read-write&sslmode=disable');
  t.same(parsed.hosts, [{ host: 'db1', port: 5433 }, { host: 'db2', port: 5432 }, { host: '::1', port: 6000 }]);
  t.equal(parsed.targetSessionAttrs, 'read-write');
  t.equal(parsed.forHost(parsed.hosts[2]!), 'postgres://k:p%40ss@[::1]:6000/kasir?sslmode=disable', 'one node, the rest of the URL kept');
  t.equal(parseDatabaseUrl('postgres://k@db1/kasir').targetSessionAttrs, 'any');
  t.throws(() => parseDatabaseUrl('postgres://k@db1,db2/kasir?target_session_attrs=writable'), /target_session_attrs must be one of/);
  t.throws(() => parseDatabaseUrl('postgres://k@db1:x,db2/kasir'), /port of db1:x/);
});

t.test('a URL that writes must say it wants the primary', async (t) => {
  const key = { KASIR_MASTER_KEY: 'ab'.repeat(32) };
  t.throws(() => parseConfig({ ...key, DATABASE_URL: 'postgres://k@db1,db2/kasir' }), /target_session_attrs=read-write/);
  t.throws(() => parseConfig({ ...key, DATABASE_URL: 'postgres://k@db1,db2/kasir?target_session_attrs=standby' }), /DATABASE_URL/);
  t.equal(parseConfig({ ...key, DATABASE_URL: 'postgres://k@db1,db2/kasir?target_session_attrs=read-write' }).DATABASE_URL, 'postgres://k@db1,db2/kasir?target_session_attrs=read-write');
  t.ok(parseConfig({ ...key, DATABASE_URL: 'postgres://k@db1/kasir', DATABASE_REPLICA_URL: 'postgres://k@db2,db3/kasir?target_session_attrs=prefer-standby' }));
});

t.test('with its first node down, Kasir starts and serves orders on the second', async (t) => {
  const databaseUrl = await testDatabase(t);
  const down = `127.0.0.1:${await freePort()}`; // nothing listens there
  const multi = withHostsBefore(databaseUrl, [down], 'target_session_attrs=read-write');
  const stack = await startStack(t, { databaseUrl, databaseEnv: () => ({ DATABASE_URL: multi }) });
  t.equal(stack.api.ctx.config.DATABASE_URL, multi, 'the API itself runs on the multi-host URL');
  const merchant = await makeMerchant(stack.api.ctx);
  const order = await paidOrder(stack, merchant, 150_000);
  t.match(order.ref_code, /^ORD-/, 'created at the vendor by the vendor worker, paid through the API, on the second node');
  await ledgerAudit(t, stack.env);
});

t.test('a standby named first is passed over for the primary, and chosen when asked for', async (t) => {
  const pair = await startReplicaPair(t);
  await replicatedDatabase(pair, 'kasir_multi');
  await prepareDatabase(pair.primaryUrl('kasir_multi'));
  const standbyHost = new URL(pair.replicaUrl('kasir_multi')).host;
  const writable = withHostsBefore(pair.primaryUrl('kasir_multi'), [standbyHost], 'target_session_attrs=read-write');

  const pool = await createPool(writable, { size: 2 });
  t.teardown(() => pool.end());
  t.equal(await pool.oneFirst(sql.unsafe`select pg_is_in_recovery()`), false, "slonik's pool is on the primary");

  const client = newClient(writable);
  await client.connect();
  t.teardown(() => client.end());
  t.equal((await client.query('select pg_is_in_recovery() as r')).rows[0].r, false, 'a plain client (LISTEN, COPY, migrations) too');

  const boss = await startBoss(writable, { role: 'sender' });
  t.teardown(() => boss.stop({ graceful: false }));
  t.ok(await boss.send('webhook-deliver', { deliveryId: '00000000-0000-0000-0000-000000000000' }), "pg-boss's pool writes a job on the primary");

  const standbyOnly = withHostsBefore(pair.primaryUrl('kasir_multi'), [standbyHost], 'target_session_attrs=standby');
  const reader = await createPool(standbyOnly, { size: 1 });
  t.teardown(() => reader.end());
  t.equal(await reader.oneFirst(sql.unsafe`select pg_is_in_recovery()`), true, 'target_session_attrs=standby lands on the standby');
});
