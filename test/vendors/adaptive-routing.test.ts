// Adaptive routing through the real processes: two simulator vendors on one route, a first and b
// behind it, the route set to adaptive with the ops CLI. A vendor that answers 5xx is demoted
// within seconds and new orders go to b; the orders a already had stay with a (reconciled there,
// never sent to b); once a's bad counts leave the window it takes orders again. A payout whose
// send at a was unclear is finished at a even with a demoted; a disabled vendor is never chosen,
// however well it scores. Exploration is off here (ROUTING_EXPLORE_PERCENT=0, so every choice is
// determined); test/vendors/routing-choice.test.ts rolls it with its own random source.
import t from 'tap';
import { sql } from '../../db/pool.ts';
import { flushVendorOutcomes, recordVendorOutcome } from '../../db/vendor-outcomes.ts';
import { setVendorEnabled } from '../../db/vendors.ts';
import { gatewayFor } from '../../gateways/registry.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { eventually } from '../helpers/http.ts';
import { bankPayout, merchantApi } from '../helpers/merchant-api.ts';
import { ledgerAudit } from '../helpers/money.ts';
import { ops } from '../helpers/processes.ts';
import { clearFaults, setFaults } from '../helpers/simulator.ts';
import { startStack } from '../helpers/stack.ts';

const stack = await startStack(t, {
  vendors: ['a', 'b'],
  groups: ['vendor', 'disbursement', 'webhook', 'scheduler'],
  env: { ROUTING_WINDOW_SECONDS: '10', ROUTING_MIN_CALLS: '3', ROUTING_EXPLORE_PERCENT: '0' },
});
const pool = stack.api.ctx.pool;
const m = merchantApi(stack, 'AR');
const [simA, simB] = stack.sims;

for (const method of ['QRIS', 'BANK']) {
  const set = await ops(stack.env, 'route:set', '--method', method, '--mode', 'adaptive', '--json');
  if (set.code !== 0) throw new Error(`route:set --mode: ${set.stderr}`);
}

const orderRow = (merchantOrderId: string) =>
  pool.one(sql.unsafe`select ref_code, status, vendor_code, pending_vendor, vendors_tried from orders where merchant_order_id = ${merchantOrderId}`) as Promise<{
    ref_code: string;
    status: string;
    vendor_code: string | null;
    pending_vendor: string | null;
    vendors_tried: string[];
  }>;

/** Makes the window show `calls` unknown outcomes of `vendor` for `method` (as the workers count them). */
async function brownout(vendor: string, method: string, calls: number, destination: string | null = null) {
  for (let i = 0; i < calls; i++) recordVendorOutcome({ vendor, method, destination, outcome: 'unknown', ms: 1_500 });
  await flushVendorOutcomes(pool);
}

t.test('route:set --mode and route:list', async (t) => {
  const list = await ops(stack.env, 'route:list');
  t.match(list.stdout, /default\s+QRIS\s+a\s+priority=10 adaptive/);
  t.match(list.stdout, /default\s+EWALLET\s+a\s+priority=10 priority/, 'a route never set stays in priority mode');
  const bad = await ops(stack.env, 'route:set', '--method', 'QRIS', '--mode', 'fastest');
  t.equal(bad.code, 64);
  t.match(bad.stderr, /--mode: priority or adaptive/);
});

t.test('a vendor answering 5xx is demoted: new orders go to b; what a already had stays with a; back once its bad counts leave the window', async (t) => {
  const merchant = await makeMerchant(stack.api.ctx);
  await setFaults(simA.url, { op: 'createQris', mode: 'error', status: 503 });
  const atA: string[] = [];
  const atB = await eventually(async () => {
    const body = m.orderBody(25_000);
    const res = await m.createOrder(merchant, 25_000, body);
    if (res.status === 409) {
      atA.push(body.merchant_order_id);
      return undefined;
    }
    if (res.status !== 201) throw new Error(`create: ${res.status} ${res.text}`);
    return (await orderRow(body.merchant_order_id)).vendor_code === 'b' ? res.json.data.ref_code : undefined;
  }, 'an order routed to b', 20_000);
  t.ok(atA.length >= 3, `${atA.length} orders went to a before it was demoted (ROUTING_MIN_CALLS 3)`);
  t.comment(`demoted after ${atA.length} unclear answers`);
  t.ok(atB);

  const explain = await ops(stack.env, 'routes:explain', '--merchant', merchant.merchant_id, '--method', 'QRIS', '--json');
  t.equal(explain.code, 0, explain.stderr);
  const why = JSON.parse(explain.stdout);
  t.match(why, { mode: 'adaptive', would_get: 'b', order: ['b', 'a'], window_seconds: 10, exploration: { percent: 0, active: true, candidates: ['a'] } });
  t.match(why.vendors[1], { code: 'a', demoted: true, reason: /failed or unknown/ });
  const demoted = await eventually(
    async () => (await pool.maybeOne(sql.unsafe`select detail from vendor_health_events where vendor_code = 'a' and method = 'QRIS' and event = 'demoted'`)) ?? undefined,
    'the demotion event',
  );
  t.match(demoted, { detail: { reason: /failed or unknown/, window_seconds: 10 } });

  // Sent to a with an unclear answer: reconciled at a (which has no record: FAILED), never sent to b.
  for (const id of atA) {
    const order = await eventually(async () => {
      const row = await orderRow(id);
      return row.status === 'CREATING' ? undefined : row;
    }, `order ${id} reconciled`);
    t.match(order, { status: 'FAILED', vendor_code: null, vendors_tried: ['a'] }, `${order.ref_code} stayed with a`);
    const atVendorB = await gatewayFor(simB.vendor()).queryQris(order.ref_code, null);
    t.match(atVendorB, { kind: 'ok', value: { status: 'NOT_FOUND' } }, 'b never saw it');
  }

  await clearFaults(simA.url);
  const back = await eventually(async () => {
    const body = m.orderBody(25_000);
    const res = await m.createOrder(merchant, 25_000, body);
    if (res.status !== 201) throw new Error(`create: ${res.status} ${res.text}`);
    return (await orderRow(body.merchant_order_id)).vendor_code === 'a' ? true : undefined;
  }, 'a taking orders again', 30_000);
  t.ok(back, 'a first again once its 5xx left the 10 s window');
  t.ok(await pool.maybeOne(sql.unsafe`select 1 from vendor_health_events where vendor_code = 'a' and method = 'QRIS' and event = 'restored'`), 'restored event');
  await ledgerAudit(t, stack.env);
});

t.test('a payout whose send at a was unclear is finished at a, even with a demoted; the next payout goes to b', async (t) => {
  const merchant = await makeMerchant(stack.api.ctx);
  await m.fund(merchant, 1_000_000);
  await setFaults(simA.url, { op: 'disburse', mode: 'error', status: 503, count: 1 });
  const first = await m.disburse(merchant, bankPayout(100_000, '1234567890', 'BCA'));
  t.equal(first.status, 201, first.text);
  const id = first.json.data.id;
  await eventually(async () => ((await pool.oneFirst(sql.unsafe`select vendor_code from disbursements where id = ${id}`)) === 'a' ? true : undefined), 'the payout sent to a');
  await brownout('a', 'BANK', 20, 'BCA');
  await m.disbursementReaches(merchant, id, 'SUCCESS', 30_000);
  const row = (await pool.one(sql.unsafe`select vendor_code, vendors_tried, ref_code from disbursements where id = ${id}`)) as { ref_code: string };
  t.match(row, { vendor_code: 'a', vendors_tried: ['a'] }, 'read at a, found absent, sent again to a only');
  t.match(await gatewayFor(simB.vendor()).queryDisbursement(row.ref_code, null), { kind: 'ok', value: { status: 'NOT_FOUND' } }, 'b never saw it');

  await brownout('a', 'BANK', 20, 'BCA');
  // The workers see the counts within SCORE_CACHE_MS: payouts until one goes to b.
  const toB = await eventually(async () => {
    const next = await m.disburse(merchant, bankPayout(10_000, '1234567890', 'BCA'));
    if (next.status !== 201) throw new Error(`disburse: ${next.status} ${next.text}`);
    await m.disbursementReaches(merchant, next.json.data.id, 'SUCCESS', 30_000);
    return (await pool.oneFirst(sql.unsafe`select vendor_code from disbursements where id = ${next.json.data.id}`)) === 'b' ? true : undefined;
  }, 'a payout to BCA routed to b', 20_000);
  t.ok(toB, 'a demoted for BCA: new payouts go to b');
  await ledgerAudit(t, stack.env);
});

t.test('a disabled vendor is never chosen, however it scores', async (t) => {
  const merchant = await makeMerchant(stack.api.ctx);
  await brownout('a', 'QRIS', 20);
  await setVendorEnabled(pool, 'b', false);
  t.teardown(() => setVendorEnabled(pool, 'b', true));
  const body = m.orderBody(30_000);
  const res = await m.createOrder(merchant, 30_000, body);
  t.equal(res.status, 201, res.text);
  t.equal((await orderRow(body.merchant_order_id)).vendor_code, 'a', 'the demoted a, the only enabled vendor of the route');
  await brownout('a', 'QRIS', 20); // fresh in the window however slowly the ops process starts
  const explain = await ops(stack.env, 'routes:explain', '--merchant', merchant.merchant_id, '--method', 'QRIS');
  t.match(explain.stdout, /a now \(adaptive mode; order a\)/);
  t.match(explain.stdout, /a\s+priority=10\s+DEMOTED/, 'demoted, and still the only one');
  await ledgerAudit(t, stack.env);
});
