// Kasir behind a real PgBouncer 1.18 in transaction pooling mode (Debian 12's; test/helpers/
// pgbouncer.ts): DATABASE_URL is PgBouncer, DATABASE_DIRECT_URL the server. Proves: pooled
// connections work without named prepared statements or startup parameters (PgBouncer refuses
// those); the order create → pay → webhook flow and a disbursement flow run through it, the
// ledger audit clean; the LISTEN connections (the API's outcome waiter, pg-boss's wake-ups)
// are direct, so a create answers as soon as the worker notifies, not at the waiter's deadline.
import t from 'tap';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { adjustWallet } from '../../db/ledger.ts';
import { createPool, sql } from '../../db/pool.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { call, eventually } from '../helpers/http.ts';
import { ledgerAudit, paidOrder } from '../helpers/money.ts';
import { startPgBouncer } from '../helpers/pgbouncer.ts';
import { simulatePay, startCallbackReceiver } from '../helpers/simulator.ts';
import { startStack } from '../helpers/stack.ts';

const admin = process.env.KASIR_TEST_ADMIN_URL!;
const bouncer = await startPgBouncer(t, admin);
t.comment(bouncer.version);

const stack = await startStack(t, {
  groups: ['vendor', 'disbursement', 'webhook'],
  databaseEnv: (url) => ({ DATABASE_URL: bouncer.through(url), DATABASE_DIRECT_URL: url }),
});
const direct = stack.env.DATABASE_DIRECT_URL;

t.test('PgBouncer refuses what a session-pinned pool would send; Kasir sends neither', async (t) => {
  const database = new URL(direct).pathname.slice(1);
  const timeouts = new pg.Client({ connectionString: bouncer.through(direct), statement_timeout: 30_000 });
  await t.rejects(timeouts.connect(), /unsupported startup parameter/, 'a statement_timeout startup parameter is refused');
  const pool = await createPool(bouncer.through(direct), { size: 2, preparedStatements: false, throughPooler: true });
  t.teardown(() => pool.end());
  t.equal(await pool.oneFirst(sql.unsafe`select current_database()`), database, 'a pooled Kasir connection goes through');
  t.equal(stack.api.ctx.config.DATABASE_PREPARED_STATEMENTS, undefined, 'unset: off behind a pooler');
  const clients = (await bouncer.clients()).filter((c) => c.database === database);
  t.ok(clients.length > 0, `the API's and the workers' pools are PgBouncer clients (${clients.length})`);
});

t.test('the LISTEN connections go to Postgres itself', async (t) => {
  const client = new pg.Client({ connectionString: direct });
  await client.connect();
  t.teardown(() => client.end());
  const names = await eventually(async () => {
    const { rows } = await client.query<{ application_name: string }>(
      `select application_name from pg_stat_activity where datname = current_database() and application_name in ('kasir-api-listener', 'pgboss-listen')`);
    const found = rows.map((r) => r.application_name).sort();
    return found.includes('kasir-api-listener') && found.includes('pgboss-listen') ? found : undefined;
  }, 'the listeners in pg_stat_activity');
  t.ok(names.length >= 2, 'the API listener and the workers\' pg-boss listeners are direct sessions');
  const database = new URL(direct).pathname.slice(1);
  const pooled = (await bouncer.clients()).filter((c) => c.database === database && /listen/.test(c.application_name ?? ''));
  t.same(pooled, [], 'no listener is a PgBouncer client');
});

t.test('order create → pay → webhook through PgBouncer', async (t) => {
  const receiver = await startCallbackReceiver();
  t.teardown(() => receiver.close());
  const merchant = await makeMerchant(stack.api.ctx);
  const started = Date.now();
  const created = await call(stack.api.url, {
    path: '/v1/orders', headers: { 'x-api-key': merchant.api_key },
    body: { merchant_order_id: `PGB-${randomUUID()}`, amount: 150_000, payment_method: 'QRIS', notify_url: receiver.url },
  });
  const elapsed = Date.now() - started;
  t.equal(created.status, 201, 'POST /v1/orders answers 201');
  // The waiter's deadline is ORDER_CREATE_DEADLINE_MS (5 s in tests): a LISTEN lost in the pooler would answer then.
  t.ok(elapsed < 2_500, `answered when the worker notified (${elapsed} ms), not at the waiter's deadline`);
  const ref = created.json.data.ref_code;
  t.equal((await simulatePay(stack.sim.url, { reference: ref })).status, 200, 'the payer pays at the gateway');
  const paid = await eventually(async () => {
    const res = await call(stack.api.url, { path: `/v1/orders/${ref}`, headers: { 'x-api-key': merchant.api_key } });
    return res.json?.data?.status === 'PAID' ? res.json.data : undefined;
  }, 'the order to be PAID');
  t.equal(paid.amount, 150_000, 'GET shows it PAID');
  const hook = await eventually(async () => receiver.received.find((r) => JSON.stringify(r.json).includes(ref)), 'the payment webhook');
  t.match(hook.json, { event: /paid/i }, 'the merchant got the payment webhook');
  await ledgerAudit(t, stack.env);
});

t.test('a disbursement through PgBouncer: debited, sent, SUCCESS, audit clean', async (t) => {
  const merchant = await makeMerchant(stack.api.ctx);
  await paidOrder(stack, merchant, 200_000);
  await stack.api.ctx.pool.transaction((tx) =>
    adjustWallet(tx, { merchantId: merchant.merchant_id, adjustmentId: randomUUID(), amount: 100_000, reason: 'test float' }));
  const res = await call(stack.api.url, {
    path: '/v1/disbursements', headers: { 'x-api-key': merchant.api_key },
    body: { idempotency_key: randomUUID(), channel: 'BANK', bank_short_code: 'BCA', account_number: '1234567890', account_name: 'Budi Santoso', amount: 150_000 },
  });
  t.equal(res.status, 201, 'POST /v1/disbursements answers 201');
  const done = await eventually(async () => {
    const got = await call(stack.api.url, { path: `/v1/disbursements/${res.json.data.id}`, headers: { 'x-api-key': merchant.api_key } });
    return got.json?.data?.status === 'SUCCESS' ? got.json.data : undefined;
  }, 'the disbursement to succeed', 15_000);
  t.match(done.vendor_disbursement_id, /.+/, 'the vendor took it');
  await ledgerAudit(t, stack.env);
});
