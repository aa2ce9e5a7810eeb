// Retention of operational records (db/retention.ts): a month of webhook attempts past
// WEBHOOK_RETENTION_DAYS goes as a dropped partition, ended deliveries past it are deleted,
// vendor callback payloads are dropped and their keys deleted later; by `ops retention:run`
// and by the scheduler's sweep. Orders and the ledger are untouched.
import t from 'tap';
import { sql } from '../../db/pool.ts';
import { z } from 'zod';
import { call, eventually } from '../helpers/http.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { ledgerAudit, paidOrder } from '../helpers/money.ts';
import { ops, startWorkerGroup } from '../helpers/processes.ts';
import { startCallbackReceiver } from '../helpers/simulator.ts';
import { startStack } from '../helpers/stack.ts';

t.test('retention: a retired month of attempts is a dropped partition, and nothing financial is touched', async (t) => {
  const receiver = await startCallbackReceiver();
  t.teardown(() => receiver.close());
  const stack = await startStack(t, { groups: ['vendor', 'webhook'] });
  const pool = stack.api.ctx.pool;
  const merchant = await makeMerchant(stack.api.ctx, { notifyUrl: receiver.url });
  const orders = [await paidOrder(stack, merchant, 10_000), await paidOrder(stack, merchant, 20_000), await paidOrder(stack, merchant, 30_000)];
  const [old, older, recent] = orders;
  const count = (statement: ReturnType<typeof sql.unsafe>) => pool.oneFirst(sql.type(z.object({ n: z.number() }))`select (${statement})::int as n`);
  const deliveriesOf = (order: { id: string }) => count(sql.unsafe`select count(*) from webhook_deliveries where order_id = ${order.id}`);
  const attemptsOf = (order: { id: string }) =>
    count(sql.unsafe`select count(*) from webhook_attempts where delivery_id in (select id from webhook_deliveries where order_id = ${order.id})`);
  await eventually(async () => (await count(sql.unsafe`select count(*) from webhook_deliveries where merchant_id = ${merchant.merchant_id} and status = 'DELIVERED'`)) === 3 || undefined, 'three deliveries DELIVERED');

  // Two of them as if made 200 and 150 days ago: their attempts move into those months' partitions.
  const age = async (order: { id: string }, days: number) => {
    await pool.query(sql.unsafe`select webhook_attempts_month(now() - make_interval(days => ${days}))`);
    await pool.query(sql.unsafe`update webhook_deliveries set created_at = now() - make_interval(days => ${days}), updated_at = now() - make_interval(days => ${days})
      where order_id = ${order.id}`);
    await pool.query(sql.unsafe`update webhook_attempts set created_at = now() - make_interval(days => ${days})
      where delivery_id in (select id from webhook_deliveries where order_id = ${order.id})`);
  };
  await age(old, 200);
  await age(older, 150);
  const monthOf = (days: number) => pool.oneFirst(sql.type(z.object({ name: z.string() }))`
    select 'webhook_attempts_' || to_char((now() - make_interval(days => ${days})) at time zone 'UTC', '"y"YYYY"m"MM') as name`);
  const oldMonth = await monthOf(200);
  const olderMonth = await monthOf(150);
  const exists = async (name: string) => (await count(sql.unsafe`select count(*) from pg_class where relname = ${name}`)) === 1;
  t.ok(await exists(oldMonth), `${oldMonth} holds the old attempts`);
  t.equal(await count(sql.unsafe`select count(*) from only webhook_attempts_default`), 0, 'no attempt in the default partition');

  // Callbacks: every one 40 days old (past the payload's 30), the first one 200 (past the key's 90).
  const callbacks = await count(sql.unsafe`select count(*) from vendor_callbacks`);
  t.ok(callbacks >= 3, `the payments' callbacks are recorded (${callbacks})`);
  await pool.query(sql.unsafe`update vendor_callbacks set received_at = now() - interval '40 days'`);
  await pool.query(sql.unsafe`update vendor_callbacks set received_at = now() - interval '200 days'
    where (vendor_code, event_id) = (select vendor_code, event_id from vendor_callbacks order by event_id limit 1)`);

  const financial = sql.unsafe`select count(*) + sum(amount) from orders where merchant_id = ${merchant.merchant_id} and status = 'PAID'`;
  const before = { orders: await count(financial), postings: await count(sql.unsafe`select count(*) from ledger_postings`) };

  const dry = await ops(stack.env, 'retention:run', '--dry-run', '--json');
  t.equal(dry.code, 0, dry.stderr);
  const planned = JSON.parse(dry.stdout);
  t.match(planned, {
    dry_run: true,
    attempt_partitions_dropped: [{ name: oldMonth, rows: 1 }, { name: olderMonth, rows: 1 }],
    webhook_deliveries_deleted: 2,
    callback_payloads_dropped: callbacks,
    callback_keys_deleted: 1,
  }, 'a dry run counts what would go');
  t.ok(await exists(oldMonth), 'and drops nothing');
  t.equal(await deliveriesOf(old), 1, 'nor deletes anything');

  const run = await ops(stack.env, 'retention:run', '--json');
  t.equal(run.code, 0, run.stderr);
  t.match(JSON.parse(run.stdout), { dry_run: false, attempt_partitions_dropped: [{ name: oldMonth }, { name: olderMonth }], webhook_deliveries_deleted: 2 });
  t.notOk(await exists(oldMonth), `${oldMonth} is dropped`);
  t.notOk(await exists(olderMonth), `${olderMonth} is dropped`);
  t.equal(await deliveriesOf(old), 0, 'the old deliveries are gone');
  t.equal(await deliveriesOf(older), 0);
  t.equal(await deliveriesOf(recent), 1, 'the recent delivery stays');
  t.equal(await attemptsOf(recent), 1, 'with its attempt');
  t.equal(await count(sql.unsafe`select count(*) from vendor_callbacks`), callbacks - 1, 'one callback key deleted');
  t.equal(await count(sql.unsafe`select count(*) from vendor_callbacks where payload is not null`), 0, 'the others keep their key, not their payload');

  t.same({ orders: await count(financial), postings: await count(sql.unsafe`select count(*) from ledger_postings`) }, before, 'orders and postings untouched');
  for (const order of orders) {
    const res = await call(stack.api.url, { path: `/v1/orders/${order.ref_code}`, headers: { 'x-api-key': merchant.api_key } });
    t.equal(res.json.data.status, 'PAID', `${order.ref_code} still PAID`);
  }
  const list = await call(stack.api.url, { path: '/v1/webhook-deliveries', headers: { 'x-api-key': merchant.api_key } });
  t.equal(list.json.meta.total, 1, 'the delivery log lists what is kept');
  const since = Date.parse(list.json.meta.retained_since);
  t.ok(Math.abs(since - (Date.now() - 90 * 86_400_000)) < 60_000, `and says how far back it reaches: ${list.json.meta.retained_since}`);
  await ledgerAudit(t, stack.env);
});

t.test('retention: the scheduler retires a month on its own', async (t) => {
  const receiver = await startCallbackReceiver();
  t.teardown(() => receiver.close());
  const stack = await startStack(t, { groups: ['vendor', 'webhook'] });
  const pool = stack.api.ctx.pool;
  const merchant = await makeMerchant(stack.api.ctx, { notifyUrl: receiver.url });
  const order = await paidOrder(stack, merchant, 10_000);
  const count = (statement: ReturnType<typeof sql.unsafe>) => pool.oneFirst(sql.type(z.object({ n: z.number() }))`select (${statement})::int as n`);
  await eventually(async () => (await count(sql.unsafe`select count(*) from webhook_attempts`)) === 1 || undefined, 'the attempt recorded');
  // 150 days back, so the month has ended before the 90-day cut-off whatever today's date:
  // a month holding now() - 120 days can end as late as now() - 89 days.
  const month = await pool.oneFirst(sql.type(z.object({ name: z.string() }))`select webhook_attempts_month(now() - interval '150 days') as name`);
  await pool.query(sql.unsafe`update webhook_deliveries set created_at = now() - interval '150 days', updated_at = now() - interval '150 days' where order_id = ${order.id}`);
  await pool.query(sql.unsafe`update webhook_attempts set created_at = now() - interval '150 days'`);

  await startWorkerGroup(t, 'scheduler', stack.env);
  // One pass drops the month's partition first, then deletes the ended deliveries in batches:
  // wait for the second, or a check between the two sees the delivery still there.
  await eventually(async () => (await count(sql.unsafe`select count(*) from pg_class where relname = ${month}`)) === 0 || undefined, `${month} dropped by the scheduler`, 30_000);
  await eventually(async () => (await count(sql.unsafe`select count(*) from webhook_deliveries where order_id = ${order.id}`)) === 0 || undefined, 'its ended delivery deleted by the same pass', 30_000);
  t.equal(await count(sql.unsafe`select count(*) from webhook_deliveries where order_id = ${order.id}`), 0, 'its ended delivery deleted');
  t.equal(await count(sql.unsafe`select count(*) from orders where id = ${order.id} and status = 'PAID'`), 1, 'the order kept');
  t.ok(await count(sql.unsafe`select count(*) from pg_class where relname like 'webhook_attempts_y%'`) >= 4, "this month's partition and the next three exist");
  await ledgerAudit(t, stack.env);
});
