// A merchant sees its own webhook deliveries and asks for one again: GET /v1/webhook-deliveries
// (filters), GET /v1/webhook-deliveries/{id} (with its attempts) and POST .../resend, through
// the real webhook worker and a real receiver; and the operator's signed samples of every
// catalogued event (ops webhooks:trigger), and the merchant's own (POST
// /v1/webhook-deliveries/samples), marked in the body and with ids no real resource has.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { sentSampleBody, webhookEvents } from '../../api/openapi/webhook-events.ts';
import { SAMPLES_PER_MINUTE } from '../../api/v1/webhook-deliveries.ts';
import { sql } from '../../db/pool.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { call, eventually } from '../helpers/http.ts';
import { paidOrder } from '../helpers/money.ts';
import { ops } from '../helpers/processes.ts';
import { startCallbackReceiver } from '../helpers/simulator.ts';
import { startStack } from '../helpers/stack.ts';
import { standardWebhook, xSignature } from '../helpers/order-lifecycle.ts';

const stack = await startStack(t, { groups: ['vendor', 'webhook'] });
const receiver = await startCallbackReceiver();
t.teardown(() => receiver.close());
type M = Awaited<ReturnType<typeof makeMerchant>>;
const get = (m: M, path: string) => call(stack.api.url, { method: 'GET', path, headers: { 'x-api-key': m.api_key } });

t.test('list, read with attempts, resend: the same body and webhook-id again', async (t) => {
  const merchant = await makeMerchant(stack.api.ctx, { notifyUrl: receiver.url });
  const other = await makeMerchant(stack.api.ctx, { notifyUrl: receiver.url });
  const order = await paidOrder(stack, merchant, 50_000);
  await paidOrder(stack, other, 40_000);
  const delivered = await eventually(async () => {
    const res = await get(merchant, '/v1/webhook-deliveries?status=DELIVERED');
    return res.json?.data?.length === 1 ? res.json : undefined;
  }, 'the order.paid webhook delivered');
  const d = delivered.data[0];
  t.match(d, { event: 'order.paid', url: receiver.url, status: 'DELIVERED', resource: { type: 'ORDER', ref_code: order.ref_code }, attempts: 1, last_status_code: 200 });
  const { retained_since: retainedSince, ...meta } = delivered.meta;
  t.same(meta, { page: 1, limit: 20, total: 1, total_pages: 1 }, 'only this merchant\'s');
  t.ok(Date.parse(retainedSince) < Date.now(), 'and how far back the log reaches');
  t.match(JSON.parse(d.body), { ref_code: order.ref_code, status: 'PAID' }, 'the body as sent');
  t.same((await get(merchant, '/v1/webhook-deliveries?status=FAILED')).json.data, [], 'filtered by status');
  t.same((await get(merchant, '/v1/webhook-deliveries?event=order.expired')).json.data, [], 'filtered by event');

  const one = await get(merchant, `/v1/webhook-deliveries/${d.id}`);
  t.equal(one.status, 200);
  t.match(one.json.data.attempt_log, [{ attempt: 1, status_code: 200 }]);
  t.equal((await get(other, `/v1/webhook-deliveries/${d.id}`)).status, 404, "another merchant's is unknown");
  t.equal((await get(merchant, '/v1/webhook-deliveries/nope')).json?.error?.code, 'INVALID_ID');
  t.equal((await get(merchant, '/v1/webhook-deliveries?status=LOST')).json?.error?.code, 'INVALID_BODY');

  const sent = () => receiver.received.filter((r) => r.body.toString() === d.body);
  const before = sent().length;
  const resent = await call(stack.api.url, { path: `/v1/webhook-deliveries/${d.id}/resend`, headers: { 'x-api-key': merchant.api_key }, body: {} });
  t.equal(resent.status, 202, resent.text);
  t.equal(resent.json.data.status, 'PENDING');
  await eventually(async () => {
    const res = await get(merchant, `/v1/webhook-deliveries/${d.id}`);
    return res.json?.data?.attempts === 2 && res.json.data.status === 'DELIVERED' ? true : undefined;
  }, 'the second attempt delivered');
  const copies = sent();
  t.equal(copies.length, before + 1, 'sent once more');
  t.equal(new Set(copies.map((c) => c.headers['webhook-id'])).size, 1, 'under the same webhook-id');
  // The resend's job waits in its destination's line like any attempt's (the worker's per-destination limit can skip it).
  const groups = await stack.api.ctx.pool.anyFirst(sql.unsafe`select group_id from pgboss.job where name = 'webhook-deliver' and data->>'delivery_id' = ${d.id}`);
  t.same([...new Set(groups)], [new URL(receiver.url).origin], "every job of the delivery, the resend's too, carries its destination");
  const notMine = await call(stack.api.url, { path: `/v1/webhook-deliveries/${d.id}/resend`, headers: { 'x-api-key': other.api_key }, body: {} });
  t.equal(notMine.status, 404);
});

t.test('ops webhooks:list: by any resource reference (order, refund), or a merchant\'s by status', async (t) => {
  const merchant = await makeMerchant(stack.api.ctx, { notifyUrl: receiver.url });
  const order = await paidOrder(stack, merchant, 80_000);
  const refund = await call(stack.api.url, { path: `/v1/orders/${order.ref_code}/refund`, headers: { 'x-api-key': merchant.api_key }, body: { amount: 10_000 } });
  t.equal(refund.status, 201, refund.text);
  const list = async (...args: string[]) => {
    const res = await ops(stack.env, 'webhooks:list', ...args, '--json');
    if (res.code !== 0) throw new Error(res.stderr + res.stdout);
    return JSON.parse(res.stdout).deliveries as Array<{ event: string; resource: string; status: string }>;
  };
  const ofRefund = await eventually(async () => {
    const found = await list('--ref', refund.json.data.ref_code);
    return found.length > 0 ? found : undefined;
  }, 'the refund webhook');
  t.ok(ofRefund.every((d) => d.resource === order.ref_code && d.event !== 'order.paid'), 'only the deliveries naming the refund');
  const ofOrder = await list('--ref', order.ref_code);
  t.ok(ofOrder.length > ofRefund.length, "the order's include its payment");
  const delivered = await eventually(async () => {
    const found = await list('--merchant', merchant.merchant_id, '--status', 'DELIVERED');
    return found.length === ofOrder.length ? found : undefined;
  }, 'every delivery delivered');
  t.ok(delivered.every((d) => d.status === 'DELIVERED'));
  t.same(await list('--merchant', merchant.merchant_id, '--status', 'FAILED'), []);
  const unknown = await ops(stack.env, 'webhooks:list', '--ref', 'DSB-1-NOPE');
  t.equal(unknown.code === 0, false);
  t.match(unknown.stderr + unknown.stdout, /no order, disbursement, settlement or refund DSB-1-NOPE/);
  const both = await ops(stack.env, 'webhooks:list', '--ref', order.ref_code, '--merchant', merchant.merchant_id);
  t.match(both.stderr + both.stdout, /either --ref or --merchant/);
});

t.test('ops webhooks:trigger: a signed sample of any catalogued event, through the webhook worker, listed as a sample', async (t) => {
  const secret = `whsec_${randomBytes(24).toString('base64')}`;
  const merchant = await makeMerchant(stack.api.ctx, { notifyUrl: receiver.url, webhookSecret: secret });
  const elsewhere = await startCallbackReceiver();
  t.teardown(() => elsewhere.close());
  const trigger = async (...args: string[]) => {
    const res = await ops(stack.env, 'webhooks:trigger', '--merchant', merchant.merchant_id, ...args, '--json');
    if (res.code !== 0) throw new Error(res.stderr + res.stdout);
    return JSON.parse(res.stdout) as { id: string; url: string };
  };
  const arrived = (r: typeof receiver, id: string) =>
    eventually(async () => r.received.find((h) => h.headers['webhook-id'] === id), `the sample ${id} to arrive`);

  // Every event of the catalogue, to the merchant's default notify URL.
  for (const event of webhookEvents) {
    const { id, url } = await trigger('--event', event.name);
    t.equal(url, receiver.url, `${event.name}: to the merchant's default notify URL`);
    const hook = await arrived(receiver, id);
    t.equal(hook.headers['x-kasir-event'], event.name);
    t.equal(hook.headers['x-signature'], xSignature(secret, hook.body), `${event.name}: X-Signature verifies with the merchant's secret`);
    t.doesNotThrow(() => standardWebhook(secret).verify(hook.body.toString(), hook.headers as Record<string, string>), `${event.name}: so does the Standard Webhooks signature`);
    const parsed = event.schema.safeParse(hook.json);
    t.ok(parsed.success, `${event.name}: the body is the catalogued schema`);
    t.strictSame(hook.json, { ...sentSampleBody(event), event_id: id, event_created_at: hook.json.event_created_at }, `${event.name}: the catalogue's sample, marked, stamped with its delivery id`);
    t.equal(hook.json.sample, true, `${event.name}: marked as a sample in the body`);
    t.notMatch(hook.body.toString(), /INV-1001|ORD-1763713800|DSB-1763713800|3f0c2a8e/, `${event.name}: none of the catalogue's (or the README's) ids`);
    for (const ref of hook.body.toString().match(/\b(ORD|DSB|RFD|STL)-[0-9A-Z-]+/g) ?? []) t.match(ref, /^(ORD|DSB|RFD)-0-SAMPLE$|^STL-00000000-0$/, `${event.name}: ${ref} is a sample reference`);
  }

  // Another URL, and what the merchant and operators see of it.
  const { id, url } = await trigger('--event', 'order.paid', '--url', elsewhere.url);
  t.equal(url, elsewhere.url);
  await arrived(elsewhere, id);
  const seen = await eventually(async () => {
    const res = await get(merchant, `/v1/webhook-deliveries/${id}`);
    return res.json?.data?.status === 'DELIVERED' ? res.json.data : undefined;
  }, 'the sample delivery recorded as delivered');
  t.match(seen, { id, event: 'order.paid', sample: true, resource: null, url: elsewhere.url, attempts: 1 });
  const listed = await ops(stack.env, 'webhooks:list', '--merchant', merchant.merchant_id, '--json');
  const deliveries = JSON.parse(listed.stdout).deliveries as Array<{ id: string; sample: boolean }>;
  t.equal(deliveries.length, webhookEvents.length + 1, 'webhooks:list shows every sample');
  t.ok(deliveries.every((d) => d.sample), 'each marked as a sample');
  const text = await ops(stack.env, 'webhooks:list', '--merchant', merchant.merchant_id);
  t.match(text.stdout, new RegExp(`${id}\\s+order\\.paid\\s+DELIVERED\\s+SAMPLE`), 'the text listing says SAMPLE');

  // Real deliveries are not samples.
  const order = await paidOrder(stack, merchant, 30_000);
  const real = await eventually(async () => {
    const res = await get(merchant, '/v1/webhook-deliveries?event=order.paid');
    return res.json.data.find((d: { resource: { ref_code: string } | null }) => d.resource?.ref_code === order.ref_code);
  }, 'the real order.paid');
  t.equal(real.sample, false);
  t.notOk('sample' in JSON.parse(real.body), 'a real body carries no sample marker');

  const refused = await ops(stack.env, 'webhooks:trigger', '--merchant', merchant.merchant_id, '--event', 'order.nope');
  t.not(refused.code, 0);
  t.match(refused.stderr + refused.stdout, /--event must be one of order\.paid/);
  const bare = await makeMerchant(stack.api.ctx);
  const noUrl = await ops(stack.env, 'webhooks:trigger', '--merchant', bare.merchant_id, '--event', 'order.paid');
  t.match(noUrl.stderr + noUrl.stdout, /no default notify URL: give --url/);
});

t.test('POST /v1/webhook-deliveries/samples: a merchant sends itself a marked sample through the real outbox, limited per merchant', async (t) => {
  const secret = `whsec_${randomBytes(24).toString('base64')}`;
  const merchant = await makeMerchant(stack.api.ctx, { notifyUrl: receiver.url, webhookSecret: secret });
  const other = await makeMerchant(stack.api.ctx, { notifyUrl: receiver.url });
  const send = (m: M, body: unknown) => call(stack.api.url, { path: '/v1/webhook-deliveries/samples', headers: { 'x-api-key': m.api_key }, body });

  const queued = await send(merchant, { event: 'disbursement.success' });
  t.equal(queued.status, 202, queued.text);
  t.match(queued.json.data, { event: 'disbursement.success', sample: true, resource: null, url: receiver.url, status: 'PENDING' });
  const hook = await eventually(async () => receiver.received.find((h) => h.headers['webhook-id'] === queued.json.data.id), 'the sample to arrive');
  t.equal(hook.headers['x-signature'], xSignature(secret, hook.body), 'signed with the merchant\'s secret');
  t.doesNotThrow(() => standardWebhook(secret).verify(hook.body.toString(), hook.headers as Record<string, string>));
  t.match(hook.json, { event: 'disbursement.success', sample: true, ref_code: 'DSB-0-SAMPLE', event_id: queued.json.data.id });

  const elsewhere = await startCallbackReceiver();
  t.teardown(() => elsewhere.close());
  const there = await send(merchant, { event: 'order.paid', notify_url: elsewhere.url });
  t.equal(there.status, 202);
  await eventually(async () => elsewhere.received.find((h) => h.headers['webhook-id'] === there.json.data.id), 'the sample at the given URL');

  const unknown = await send(merchant, { event: 'order.payed' });
  t.equal(unknown.status, 400);
  t.match(unknown.json.error.message, /^event: must be one of order\.paid, /);
  const bare = await makeMerchant(stack.api.ctx);
  t.match((await send(bare, { event: 'order.paid' })).json.error.message, /^notify_url: is required: this merchant has no default notify URL/);

  // The limit: SAMPLES_PER_MINUTE a minute per merchant, the two sent above included.
  for (let i = 2; i < SAMPLES_PER_MINUTE; i++) t.equal((await send(merchant, { event: 'order.expired' })).status, 202, `sample ${i + 1}`);
  const limited = await send(merchant, { event: 'order.expired' });
  t.equal(limited.status, 429);
  t.equal(limited.json.error.code, 'TOO_MANY_REQUESTS');
  t.match(limited.headers['retry-after'], /^\d+$/);
  t.ok(Number(limited.headers['retry-after']) <= 60, `Retry-After ${limited.headers['retry-after']}`);
  t.match(limited.json.error.message, new RegExp(`^At most ${SAMPLES_PER_MINUTE} samples a minute per merchant`));
  t.equal((await send(other, { event: 'order.expired' })).status, 202, 'another merchant has its own limit');
  const listed = await get(merchant, '/v1/webhook-deliveries?limit=100');
  t.equal(listed.json.data.filter((d: { sample: boolean }) => d.sample).length, SAMPLES_PER_MINUTE, 'the refused one was not written');
});
