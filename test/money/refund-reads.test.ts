// Refunds a merchant can reconcile, through the whole stack: the order's refunded_amount and
// refundable_amount as each refund is held, refused and paid; the refunds listed and read
// (GET /v1/refunds, /v1/refunds/{id}, /v1/orders/{ref}/refunds) with their filters; the order's
// events and refund webhooks carrying the amounts. The vendor worker is a process of its own so
// the test can hold refunds PENDING. Every test ends with the ledger audit.
import t from 'tap';
import { randomUUID } from 'node:crypto';
import { adjustWallet } from '../../db/ledger.ts';
import { sql } from '../../db/pool.ts';
import { call, eventually } from '../helpers/http.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { ledgerAudit, paidOrder } from '../helpers/money.ts';
import { startWorkerGroup, type Proc } from '../helpers/processes.ts';
import { setFaults, startCallbackReceiver } from '../helpers/simulator.ts';
import { startStack } from '../helpers/stack.ts';
import { ISO_Z } from '../helpers/v1-orders.ts';

type M = Awaited<ReturnType<typeof makeMerchant>>;

const stack = await startStack(t, { groups: ['webhook'] });
let vendor: Proc = await startWorkerGroup(t, 'vendor', stack.env);
/** Started on the file's test, so the process outlives the subtest that restarts it. */
const restartVendor = async () => {
  vendor = await startWorkerGroup(t, 'vendor', stack.env);
};
const receiver = await startCallbackReceiver();
t.teardown(() => receiver.close());

const get = (m: M, path: string) => call(stack.api.url, { path, headers: { 'x-api-key': m.api_key } });
const refund = (m: M, ref: string, body: Record<string, unknown>) =>
  call(stack.api.url, { method: 'POST', path: `/v1/orders/${ref}/refund`, headers: { 'x-api-key': m.api_key }, body });

async function fund(m: M, amount: number) {
  await stack.api.ctx.pool.transaction((tx) =>
    adjustWallet(tx, { merchantId: m.merchant_id, adjustmentId: randomUUID(), amount, reason: 'float for refunds' }));
}

/** Polls GET /v1/refunds/{id} until the refund has `status`; returns it. */
function refundReaches(m: M, id: string, status: string) {
  return eventually(async () => {
    const res = await get(m, `/v1/refunds/${id}`);
    return res.json?.data?.status === status ? res.json.data : undefined;
  }, `refund ${id} to become ${status}`, 20_000);
}

const amountsOf = async (m: M, ref: string) => {
  const order = (await get(m, `/v1/orders/${ref}`)).json.data;
  return { status: order.status, refunded_amount: order.refunded_amount, refundable_amount: order.refundable_amount };
};

t.test('the order\'s refunded and refundable amounts follow its refunds; events and webhooks carry them', async (t) => {
  const merchant = await makeMerchant(stack.api.ctx, { notifyUrl: receiver.url });
  const order = await paidOrder(stack, merchant, 100_000);
  await fund(merchant, 700); // the MDR is not returned: the wallet covers the whole amount
  t.same(await amountsOf(merchant, order.ref_code), { status: 'PAID', refunded_amount: 0, refundable_amount: 100_000 }, 'paid: all of it refundable');

  // With no vendor worker the refund stays PENDING: its money is held, so it is refunded already.
  await vendor.stop();
  const first = await refund(merchant, order.ref_code, { amount: 30_000, reason: 'wrong size' });
  t.equal(first.status, 201, first.text);
  t.match(first.json.data, { status: 'PENDING', failure_reason: null, completed_at: null });
  t.same(await amountsOf(merchant, order.ref_code), { status: 'PAID', refunded_amount: 30_000, refundable_amount: 70_000 }, 'a PENDING refund is not refundable again');
  const over = await refund(merchant, order.ref_code, { amount: 70_001 });
  t.equal(over.json.error.code, 'AMOUNT_EXCEEDS_ORDER', 'refundable_amount is what a refund may take');
  const read = await get(merchant, `/v1/refunds/${first.json.data.id}`);
  t.equal(read.status, 200, read.text);
  t.same(read.json.data, first.json.data, 'read by id: the record the refund was created with');
  t.same((await get(merchant, `/v1/refunds/${first.json.data.ref_code}`)).json.data, first.json.data, 'read by ref_code');

  // The vendor refuses it: the money comes back and is refundable again.
  await setFaults(stack.sim.url, [{ op: 'refund', mode: 'reject', count: 1 }]);
  await restartVendor();
  const failed = await refundReaches(merchant, first.json.data.id, 'FAILED');
  t.match(failed, { amount: 30_000, reason: 'wrong size', completed_at: ISO_Z });
  t.type(failed.failure_reason, 'string', 'a FAILED refund says why');
  t.same(await amountsOf(merchant, order.ref_code), { status: 'PAID', refunded_amount: 0, refundable_amount: 100_000 }, 'a FAILED refund gives it back');

  const second = (await refund(merchant, order.ref_code, { amount: 40_000 })).json.data;
  const succeeded = await refundReaches(merchant, second.id, 'SUCCEEDED');
  t.match(succeeded, { failure_reason: null, completed_at: ISO_Z });
  t.same(await amountsOf(merchant, order.ref_code), { status: 'PAID', refunded_amount: 40_000, refundable_amount: 60_000 });
  const third = (await refund(merchant, order.ref_code, {})).json.data;
  t.equal(third.amount, 60_000, 'no amount: the refundable_amount');
  t.same(await amountsOf(merchant, order.ref_code), { status: 'REFUNDED', refunded_amount: 100_000, refundable_amount: 0 });
  await refundReaches(merchant, third.id, 'SUCCEEDED');

  const list = await get(merchant, `/v1/orders/${order.ref_code}/refunds`);
  t.equal(list.status, 200, list.text);
  t.same(list.json.meta, { page: 1, limit: 20, total: 3, total_pages: 1 });
  t.same(list.json.data.map((r: any) => [r.ref_code, r.order_ref_code, r.status]),
    [[third.ref_code, order.ref_code, 'SUCCEEDED'], [second.ref_code, order.ref_code, 'SUCCEEDED'], [first.json.data.ref_code, order.ref_code, 'FAILED']], 'newest first');
  const held = list.json.data.filter((r: any) => r.status !== 'FAILED').reduce((sum: number, r: any) => sum + r.amount, 0);
  t.equal(held, 100_000, 'refunded_amount is the sum of the refunds not FAILED');
  const onlyFailed = await get(merchant, `/v1/orders/${order.ref_code}/refunds?status=FAILED`);
  t.same(onlyFailed.json.data.map((r: any) => r.id), [first.json.data.id], 'filtered by status');

  const events = (await get(merchant, `/v1/orders/${order.ref_code}/events`)).json.data;
  const carried = (e: any) => [e.event, e.refund_ref_code, e.refund_amount, e.refunded_amount, e.refundable_amount];
  t.same(events.filter((e: any) => !e.event.startsWith('refund.')).map(carried), [
    ['order.created', null, null, null, null],
    ['order.paid', null, null, null, null],
  ], 'other events carry no refund amounts');
  t.same(events.filter((e: any) => e.event.startsWith('refund.')).map(carried), [
    ['refund.requested', first.json.data.ref_code, 30_000, 30_000, 70_000],
    ['refund.failed', first.json.data.ref_code, 30_000, 0, 100_000],
    ['refund.requested', second.ref_code, 40_000, 40_000, 60_000],
    ['refund.succeeded', second.ref_code, 40_000, 40_000, 60_000],
    ['refund.requested', third.ref_code, 60_000, 100_000, 0],
    ['refund.succeeded', third.ref_code, 60_000, 100_000, 0],
  ], 'each refund event: the refund, and the order\'s amounts after it');

  const hooks = await receiver.waitFor(4, 15_000);
  const mine = hooks.filter((h) => h.json.ref_code === order.ref_code);
  const paidHook = mine.find((h) => h.json.event === 'order.paid')!;
  t.notOk('refunded_amount' in paidHook.json, 'order.paid keeps its contract fields');
  t.same(mine.filter((h) => h.json.event !== 'order.paid').map((h) => [h.json.event, h.json.status, h.json.refund.ref_code, h.json.refunded_amount, h.json.refundable_amount]), [
    ['order.refund_failed', 'PAID', first.json.data.ref_code, 0, 100_000],
    ['order.partially_refunded', 'PAID', second.ref_code, 40_000, 60_000],
    ['order.refunded', 'REFUNDED', third.ref_code, 100_000, 0],
  ], 'refund webhooks carry the order\'s amounts after the change');
  await ledgerAudit(t, stack.env);
});

t.test('GET /v1/refunds: newest first, paginated, by status and WIB days; refusals', async (t) => {
  const merchant = await makeMerchant(stack.api.ctx);
  const other = await makeMerchant(stack.api.ctx);
  const a = await paidOrder(stack, merchant, 50_000);
  const b = await paidOrder(stack, merchant, 80_000);
  await fund(merchant, 1_000);
  const made = [];
  for (const [ref, amount] of [[a.ref_code, 10_000], [b.ref_code, 20_000], [a.ref_code, 5_000]] as const) {
    const res = await refund(merchant, ref, { amount });
    t.equal(res.status, 201, res.text);
    made.push(await refundReaches(merchant, res.json.data.id, 'SUCCEEDED'));
  }
  await setFaults(stack.sim.url, [{ op: 'refund', mode: 'reject', count: 1 }]);
  const refused = await refundReaches(merchant, (await refund(merchant, b.ref_code, { amount: 1_000 })).json.data.id, 'FAILED');
  const otherOrder = await paidOrder(stack, other, 30_000);
  const othersRefund = (await refund(other, otherOrder.ref_code, { amount: 1_000 })).json.data;

  const all = await get(merchant, '/v1/refunds');
  t.equal(all.status, 200, all.text);
  t.same(all.json.data.map((r: any) => r.id), [refused.id, ...made.map((r) => r.id).reverse()], 'the merchant\'s refunds, newest first, no other merchant\'s');
  t.same(all.json.meta, { page: 1, limit: 20, total: 4, total_pages: 1 });
  const page2 = await get(merchant, '/v1/refunds?limit=3&page=2');
  t.same(page2.json.data.map((r: any) => r.id), [made[0].id]);
  t.same(page2.json.meta, { page: 2, limit: 3, total: 4, total_pages: 2 });
  t.same((await get(merchant, '/v1/refunds?status=FAILED')).json.data.map((r: any) => r.id), [refused.id]);
  t.same((await get(merchant, '/v1/refunds?status=SUCCEEDED')).json.meta.total, 3);
  t.same((await get(merchant, '/v1/refunds?status=PENDING')).json.data, []);

  // Two refunds either side of midnight WIB (17:00 UTC): each falls on its own WIB day.
  const setCreated = (id: string, at: string) => stack.api.ctx.pool.query(sql.unsafe`update refunds set created_at = ${at} where id = ${id}`);
  await setCreated(made[0].id, '2026-01-15T16:59:59.999Z');
  await setCreated(made[1].id, '2026-01-15T17:00:00.000Z');
  const ids = async (query: string) => (await get(merchant, `/v1/refunds?${query}`)).json.data.map((r: any) => r.id);
  t.same(await ids('date_from=2026-01-15&date_to=2026-01-15'), [made[0].id], '23:59:59.999 WIB is on the 15th');
  t.same(await ids('date_from=2026-01-16&date_to=2026-01-16'), [made[1].id], '00:00 WIB is on the 16th');
  t.same(await ids('date_to=2026-01-16'), [made[1].id, made[0].id], 'open-ended start');
  t.same(await ids('date_from=2026-01-17'), [refused.id, made[2].id], 'open-ended end');
  t.same(await ids('date_to=2026-01-16&status=FAILED'), [], 'filters combine');
  t.same((await get(merchant, `/v1/orders/${a.ref_code}/refunds?date_from=2026-01-16`)).json.data.map((r: any) => r.id), [made[2].id],
    'an order\'s refunds take the same filters');

  for (const query of ['status=DONE', 'status=failed', 'status=FAILED&status=PENDING', 'date_from=2026-02-30', 'date_from=yesterday',
    'date_to=2026-1-5', 'date_from=2026-01-17&date_to=2026-01-16', 'date_from=2026-01-15&date_from=2026-01-16', 'page=0', 'limit=101']) {
    const res = await get(merchant, `/v1/refunds?${query}`);
    t.equal(res.status, 400, `${query}: 400`);
    t.equal(res.json.error.code, 'INVALID_BODY', `${query}: INVALID_BODY (${res.json.error.message})`);
  }
  t.match((await get(merchant, '/v1/refunds?status=DONE')).json.error.message, /status/, 'the message names the parameter');

  for (const id of [othersRefund.id, othersRefund.ref_code, randomUUID(), 'RFD-1-NOPE']) {
    const res = await get(merchant, `/v1/refunds/${id}`);
    t.equal(res.status, 404, `${id}: 404`);
    t.equal(res.json.error.code, 'REFUND_NOT_FOUND');
  }
  for (const id of ['not-a-uuid', '12345', `${randomUUID()}x`]) {
    const res = await get(merchant, `/v1/refunds/${id}`);
    t.equal(res.status, 400, `${id}: 400`);
    t.equal(res.json.error.code, 'INVALID_ID');
  }
  t.equal((await get(merchant, `/v1/refunds/${made[0].id.toUpperCase()}`)).json.data?.id, made[0].id, 'a UUID in capitals');
  const othersOrder = await get(merchant, `/v1/orders/${otherOrder.ref_code}/refunds`);
  t.equal(othersOrder.status, 404);
  t.equal(othersOrder.json.error.code, 'ORDER_NOT_FOUND', 'another merchant\'s order');
  t.equal((await get(merchant, '/v1/orders/ORD-1-NOPE/refunds')).json.error.code, 'ORDER_NOT_FOUND');
  await ledgerAudit(t, stack.env);
});
