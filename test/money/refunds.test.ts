// Refunds through the whole stack: the API, the vendor worker process sending refunds to the
// simulator over HTTP, webhooks to a real receiver. Every test ends with the ledger audit.
import t from 'tap';
import { createHash, randomUUID } from 'node:crypto';
import { adjustWallet } from '../../db/ledger.ts';
import { sql } from '../../db/pool.ts';
import { call, eventually } from '../helpers/http.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { balanceOf, ledgerAudit, paidOrder } from '../helpers/money.ts';
import { setFaults, simulatePay, startCallbackReceiver } from '../helpers/simulator.ts';
import { startStack, type Stack } from '../helpers/stack.ts';

type M = Awaited<ReturnType<typeof makeMerchant>>;

function refund(stack: Stack, merchant: M, ref: string, body?: Record<string, unknown>) {
  return call(stack.api.url, { method: 'POST', path: `/v1/orders/${ref}/refund`, headers: { 'x-api-key': merchant.api_key }, body });
}

async function fund(stack: Stack, merchant: M, amount: number) {
  await stack.api.ctx.pool.transaction((tx) =>
    adjustWallet(tx, { merchantId: merchant.merchant_id, adjustmentId: randomUUID(), amount, reason: 'float for refunds' }));
}

function refundReaches(stack: Stack, id: string, status: string, deadlineMs = 15_000) {
  return eventually(async () => {
    const row = await stack.api.ctx.pool.maybeOneFirst(sql.unsafe`select status from refunds where id = ${id}`);
    return row === status ? true : undefined;
  }, `refund ${id} to become ${status}`, deadlineMs);
}

async function orderOf(stack: Stack, merchant: M, ref: string) {
  return (await call(stack.api.url, { path: `/v1/orders/${ref}`, headers: { 'x-api-key': merchant.api_key } })).json.data;
}

t.test('partial refunds up to the full amount, then REFUNDED; each shows in events and webhooks', async (t) => {
  const stack = await startStack(t, { groups: ['vendor', 'webhook'] });
  const receiver = await startCallbackReceiver();
  t.teardown(() => receiver.close());
  const merchant = await makeMerchant(stack.api.ctx, { notifyUrl: receiver.url });
  const order = await paidOrder(stack, merchant, 150_000); // wallet 148,950
  await fund(stack, merchant, 1_050); // the MDR is not returned: the wallet covers the whole amount

  const first = await refund(stack, merchant, order.ref_code, { amount: 50_000, reason: 'one item out of stock' });
  t.equal(first.status, 201, first.text);
  t.same(Object.keys(first.json.data).sort(), ['amount', 'completed_at', 'created_at', 'failure_reason', 'id', 'order_ref_code', 'reason', 'ref_code', 'status']);
  t.match(first.json.data, { ref_code: /^RFD-\d+-[0-9A-Z]+$/, order_ref_code: order.ref_code, amount: 50_000, reason: 'one item out of stock', status: 'PENDING' });
  t.equal(await balanceOf(stack, merchant), 100_000, 'debited when accepted');
  await refundReaches(stack, first.json.data.id, 'SUCCEEDED');
  t.equal((await orderOf(stack, merchant, order.ref_code)).status, 'PAID', 'partially refunded orders stay PAID');

  const over = await refund(stack, merchant, order.ref_code, { amount: 100_001 });
  t.equal(over.status, 422);
  t.equal(over.json.error.code, 'AMOUNT_EXCEEDS_ORDER');
  for (const amount of [0, -1, 1.5, '100']) {
    const bad = await refund(stack, merchant, order.ref_code, { amount });
    t.equal(bad.json.error.code, 'INVALID_BODY', `amount ${JSON.stringify(amount)} is INVALID_BODY`);
  }
  const rest = await refund(stack, merchant, order.ref_code, {});
  t.equal(rest.status, 201);
  t.equal(rest.json.data.amount, 100_000, 'no amount: the remaining refundable amount');
  t.equal((await orderOf(stack, merchant, order.ref_code)).status, 'REFUNDED', 'fully refunded');
  await refundReaches(stack, rest.json.data.id, 'SUCCEEDED');
  const again = await refund(stack, merchant, order.ref_code, { amount: 1 });
  t.equal(again.status, 422);
  t.equal(again.json.error.code, 'INVALID_STATUS', 'a fully refunded order cannot be refunded');
  t.equal(await balanceOf(stack, merchant), 0);

  const events = (await call(stack.api.url, { path: `/v1/orders/${order.ref_code}/events`, headers: { 'x-api-key': merchant.api_key } })).json.data;
  t.same(events.map((e: any) => e.event).filter((e: string) => e.startsWith('refund')), ['refund.requested', 'refund.succeeded', 'refund.requested', 'refund.succeeded']);
  const hooks = await receiver.waitFor(3, 10_000);
  const refundHooks = hooks.filter((h) => h.json.event !== 'order.paid');
  t.same(refundHooks.map((h) => h.json.event), ['order.partially_refunded', 'order.refunded']);
  t.match(refundHooks[1].json, { ref_code: order.ref_code, status: 'REFUNDED', refund: { ref_code: rest.json.data.ref_code, amount: 100_000, status: 'SUCCEEDED' } });
  t.same(Object.keys(refundHooks[1].json).sort(), [
    'amount', 'event', 'event_created_at', 'event_id', 'merchant_order_id', 'paid_at', 'ref_code', 'refund', 'refundable_amount', 'refunded_amount', 'status',
  ], 'the order webhook, the refund and the amounts, and the event\'s id and time');
  for (const hook of refundHooks) t.equal(hook.json.event_id, hook.headers['webhook-id'], `${hook.json.event}: event_id is the webhook-id`);
  await ledgerAudit(t, stack.env);
});

t.test('refusals: not paid, unknown, another merchant, the wallet cannot cover it', async (t) => {
  const stack = await startStack(t, { groups: ['vendor'] });
  const merchant = await makeMerchant(stack.api.ctx);
  const other = await makeMerchant(stack.api.ctx);
  const pending = await call(stack.api.url, {
    path: '/v1/orders', headers: { 'x-api-key': merchant.api_key },
    body: { merchant_order_id: `P-${randomUUID()}`, amount: 10_000, payment_method: 'QRIS' },
  });
  const notPaid = await refund(stack, merchant, pending.json.data.ref_code, {});
  t.equal(notPaid.json.error.code, 'INVALID_STATUS', 'a PENDING order cannot be refunded');
  t.equal((await refund(stack, merchant, 'ORD-1-NOPE', {})).json.error.code, 'ORDER_NOT_FOUND');
  const paid = await paidOrder(stack, merchant, 100_000); // wallet 99,300
  t.equal((await refund(stack, other, paid.ref_code, {})).json.error.code, 'ORDER_NOT_FOUND', "another merchant's order");
  const short = await refund(stack, merchant, paid.ref_code, {});
  t.equal(short.status, 422);
  t.equal(short.json.error.code, 'INSUFFICIENT_BALANCE', 'the wallet holds amount − MDR only');
  t.equal(short.json.error.message, 'The balance cannot cover this refund: 99300 available, 100000 needed', 'says what is available and what is needed');
  const count = await stack.api.ctx.pool.oneFirst(sql.unsafe`select count(*)::int from refunds`);
  t.equal(count, 0, 'refused refunds write nothing');
  t.equal((await refund(stack, merchant, paid.ref_code, { amount: 99_300 })).status, 201, 'what the wallet holds can be refunded');
  await ledgerAudit(t, stack.env);
});

t.test('concurrent refunds never exceed the order', async (t) => {
  const stack = await startStack(t, { groups: ['vendor'] });
  const merchant = await makeMerchant(stack.api.ctx);
  const order = await paidOrder(stack, merchant, 100_000);
  await fund(stack, merchant, 700);
  const results = await Promise.all(Array.from({ length: 25 }, () => refund(stack, merchant, order.ref_code, { amount: 10_000 })));
  const accepted = results.filter((r) => r.status === 201);
  t.equal(accepted.length, 10, 'exactly ten refunds of 10,000 fit in 100,000');
  t.ok(results.filter((r) => r.status !== 201).every((r) => ['AMOUNT_EXCEEDS_ORDER', 'INVALID_STATUS'].includes(r.json.error.code)), 'the rest are refused');
  for (const r of accepted) await refundReaches(stack, r.json.data.id, 'SUCCEEDED');
  t.equal((await orderOf(stack, merchant, order.ref_code)).status, 'REFUNDED');
  t.equal(await balanceOf(stack, merchant), 0);
  await ledgerAudit(t, stack.env);
});

t.test('a refused refund returns the money and the order to PAID; an unknown outcome is re-sent to the same vendor', async (t) => {
  const stack = await startStack(t, { groups: ['vendor', 'webhook'] });
  const receiver = await startCallbackReceiver();
  t.teardown(() => receiver.close());
  const merchant = await makeMerchant(stack.api.ctx, { notifyUrl: receiver.url });
  const order = await paidOrder(stack, merchant, 50_000);
  await fund(stack, merchant, 350);
  await setFaults(stack.sim.url, [{ op: 'refund', mode: 'reject', count: 1 }]);
  const refused = (await refund(stack, merchant, order.ref_code, {})).json.data;
  t.equal((await orderOf(stack, merchant, order.ref_code)).status, 'REFUNDED');
  await refundReaches(stack, refused.id, 'FAILED');
  t.equal((await orderOf(stack, merchant, order.ref_code)).status, 'PAID', 'back to PAID');
  t.equal(await balanceOf(stack, merchant), 50_000, 'the money came back');
  await eventually(async () => (receiver.received.some((h) => h.json.event === 'order.refund_failed') ? true : undefined), 'refund_failed webhook');

  // The vendor does the refund but its answer is lost: the retry re-sends the same reference.
  await setFaults(stack.sim.url, [{ op: 'refund', mode: 'timeout', count: 1 }]);
  const retried = (await refund(stack, merchant, order.ref_code, { amount: 20_000 })).json.data;
  await refundReaches(stack, retried.id, 'SUCCEEDED', 30_000);
  t.equal(await balanceOf(stack, merchant), 30_000);
  await ledgerAudit(t, stack.env);
});

t.test('MANUAL merchants refund from what their next settlement owes; legacy orders refund too', async (t) => {
  const stack = await startStack(t, { groups: ['vendor', 'webhook'] });
  const receiver = await startCallbackReceiver();
  t.teardown(() => receiver.close());
  const manual = await makeMerchant(stack.api.ctx, { settlement: 'MANUAL', notifyUrl: receiver.url });
  const order = await paidOrder(stack, manual, 200_000); // accrual 198,600
  const r = await refund(stack, manual, order.ref_code, { amount: 150_000 });
  t.equal(r.status, 201, r.text);
  const accrual = () => stack.api.ctx.pool.oneFirst(sql.unsafe`
    select balance from ledger_accounts where merchant_id = ${manual.merchant_id} and kind = 'SETTLEMENT_ACCRUAL'`);
  t.equal(await accrual(), 48_600);
  await refundReaches(stack, r.json.data.id, 'SUCCEEDED');
  t.equal((await refund(stack, manual, order.ref_code, { amount: 50_000 })).json.error.code, 'INSUFFICIENT_BALANCE', 'the accrual cannot cover it');

  // A legacy-created order (same namespace) refunded through V1: the webhook keeps the legacy shape.
  const orderId = `LGC-${randomUUID()}`;
  const signature = createHash('sha512').update(`${manual.legacy_client_id}|${orderId}|30000|${manual.legacy_client_secret}`).digest('hex');
  const created = await call(stack.api.url, {
    path: '/api/order/create',
    body: { clientId: manual.legacy_client_id, orderId, totalAmount: 30_000, paymentType: 'QRIS', customerName: 'Budi', signature },
  });
  t.equal(created.json.code, 200, created.text);
  const ref = created.json.data.refCode;
  await simulatePay(stack.sim.url, { reference: ref });
  await eventually(async () => ((await orderOf(stack, manual, ref)).status === 'PAID' ? true : undefined), 'legacy order paid');
  const legacyRefund = await refund(stack, manual, ref, {});
  t.equal(legacyRefund.status, 201);
  await refundReaches(stack, legacyRefund.json.data.id, 'SUCCEEDED');
  await eventually(async () => (receiver.received.some((h) => h.json.refCode === ref && h.json.status === 'REFUNDED') ? true : undefined), 'legacy-shaped refund webhook');
  await ledgerAudit(t, stack.env);
});
