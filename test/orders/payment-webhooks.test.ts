// Payment through the simulator gateway and the V1 order webhooks it causes: the vendor's
// signed callback, the webhook body and signatures, the merchant default URL, retries, the
// exhausted schedule and the operator's resend, callback security and idempotency, late
// payment on an expired order, and notify_url SSRF checks at create and at delivery.
import t from 'tap';
import { sql } from '../../db/pool.ts';
import { z } from 'zod';
import { randomBytes, randomUUID } from 'node:crypto';
import { call, eventually } from '../helpers/http.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { startStack, type Stack } from '../helpers/stack.ts';
import { opsWithStdin } from '../helpers/processes.ts';
import { simulatePay, startCallbackReceiver } from '../helpers/simulator.ts';
import {
  ISO_Z,
  createOrder,
  getEvents,
  getOrder,
  listDeliveries,
  makeOverdue,
  ops,
  orderReaches,
  simulatorSignature,
  tapCallbacks,
  webhookSignatureProblems,
  type Merchant,
} from '../helpers/order-lifecycle.ts';

const stack = await startStack(t);
const callbacks = tapCallbacks(stack);
t.teardown(() => callbacks.stop());

let seq = 0;
const orderId = (prefix: string) => `${prefix}-${Date.now()}-${++seq}`;

async function receiver(t: { teardown(fn: () => unknown): void }, status: (n: number) => number = () => 200) {
  const r = await startCallbackReceiver(status);
  t.teardown(() => r.close());
  return r;
}

async function newOrder(s: Stack, merchant: Merchant, body: Record<string, unknown>) {
  const res = await createOrder(s, merchant, { merchant_order_id: orderId('INV'), amount: 150_000, ...body });
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${res.text}`);
  return res.json.data as { ref_code: string; merchant_order_id: string; amount: number; status: string; expires_at: string | null };
}

async function pay(s: Stack, ref: string, extra: object = {}, headers: Record<string, string> = {}) {
  const res = await simulatePay(s.sim.url, { reference: ref, ...extra }, headers);
  if (res.status !== 200) throw new Error(`simulate/pay ${ref}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as { rrn: string; paid_at: string; amount: number };
}

/** Waits until the order's deliveries are all settled (DELIVERED or FAILED). */
function settledDeliveries(s: Stack, ref: string, count = 1, deadlineMs = 15_000) {
  return eventually(
    async () => {
      const list = await listDeliveries(s.env, ref);
      return list.length >= count && list.every((d) => d.status !== 'PENDING') ? list : undefined;
    },
    `${count} settled webhook deliveries of ${ref}`,
    deadlineMs,
  );
}

const whsec = () => `whsec_${randomBytes(24).toString('base64')}`;

for (const [kind, makeSecret] of [
  ['a whsec_ secret', whsec],
  ['an operator-supplied plain secret', () => `op-secret-${randomBytes(8).toString('hex')}`],
] as const) {
  t.test(`a simulator payment makes the order PAID and sends a signed order.paid webhook: ${kind}`, async (t) => {
    const hook = await receiver(t);
    const secret = makeSecret();
    const merchant = await makeMerchant(stack.api.ctx, { webhookSecret: secret });
    const created = await newOrder(stack, merchant, { amount: 150_000, notify_url: hook.url });
    t.equal(created.status, 'PENDING');

    const paid = await pay(stack, created.ref_code);
    const order = await orderReaches(stack, merchant, created.ref_code, 'PAID');
    t.match(order.paid_at, ISO_Z, 'paid_at is ISO 8601 UTC with Z');
    t.equal(order.paid_at, new Date(paid.paid_at).toISOString(), 'paid_at is when the payer paid');
    t.equal(order.vendor_rrn, paid.rrn, 'vendor_rrn is the RRN of the payment');
    t.equal(order.amount, 150_000);

    const events = await getEvents(stack, merchant, created.ref_code);
    t.strictSame(events.map((e) => e.status), ['PENDING', 'PAID'], 'timeline PENDING → PAID');

    const [webhook] = await hook.waitFor(1, 10_000);
    t.strictSame(
      webhook.json,
      {
        ref_code: created.ref_code, merchant_order_id: created.merchant_order_id, amount: 150_000, status: 'PAID', event: 'order.paid', paid_at: order.paid_at,
        event_id: webhook.headers['webhook-id'], event_created_at: webhook.json.event_created_at,
      },
      'body carries exactly the contract fields, then the event\'s id (the webhook-id) and time',
    );
    t.match(webhook.json.event_created_at, ISO_Z, 'event_created_at is ISO 8601 UTC with Z');
    t.ok(webhook.json.event_created_at >= order.paid_at, 'the event is recorded once the payer has paid');
    t.match(String(webhook.headers['content-type']), /^application\/json/);
    t.strictSame(webhookSignatureProblems(webhook, secret), [], 'X-Signature and the Standard Webhooks signature verify with the secret');
    t.equal(webhookSignatureProblems(webhook, makeSecret()).length, 2, 'neither signature verifies with another secret');
  });
}

t.test('a merchant without a webhook secret gets the webhook unsigned', async (t) => {
  const hook = await receiver(t);
  const merchant = await makeMerchant(stack.api.ctx);
  const created = await newOrder(stack, merchant, { amount: 20_000, notify_url: hook.url });
  await pay(stack, created.ref_code);
  const [webhook] = await hook.waitFor(1, 10_000);
  t.equal(webhook.json.ref_code, created.ref_code);
  t.equal(webhook.json.status, 'PAID');
  t.equal(webhook.headers['x-signature'], undefined, 'no X-Signature');
  t.equal(webhook.headers['webhook-signature'], undefined, 'no webhook-signature');
});

t.test("the merchant default notify URL is used when the order has none, and an order's own URL overrides it", async (t) => {
  const fallback = await receiver(t);
  const own = await receiver(t);
  const merchant = await makeMerchant(stack.api.ctx, { notifyUrl: fallback.url });

  const plain = await newOrder(stack, merchant, { amount: 30_000 });
  await pay(stack, plain.ref_code);
  const [first] = await fallback.waitFor(1, 10_000);
  t.equal(first.json.ref_code, plain.ref_code, 'the default URL got the order without notify_url');

  const routed = await newOrder(stack, merchant, { amount: 31_000, notify_url: own.url });
  await pay(stack, routed.ref_code);
  const [second] = await own.waitFor(1, 10_000);
  t.equal(second.json.ref_code, routed.ref_code, "the order's notify_url got its webhook");
  const deliveries = await settledDeliveries(stack, routed.ref_code);
  t.strictSame(deliveries.map((d) => d.url), [own.url], 'one delivery, to the order URL only');
  t.equal(fallback.received.length, 1, 'the default URL got nothing for the routed order');
});

t.test('no notify URL at all: the order is paid and nothing is delivered', async (t) => {
  const merchant = await makeMerchant(stack.api.ctx);
  const created = await newOrder(stack, merchant, { amount: 40_000 });
  await pay(stack, created.ref_code);
  const order = await orderReaches(stack, merchant, created.ref_code, 'PAID');
  t.match(order.paid_at, ISO_Z);
  // The outbox row would be written in the payment's own transaction: none exists now, none later.
  t.strictSame(await listDeliveries(stack.env, created.ref_code), [], 'no delivery recorded');
  const health = await call(stack.api.url, { path: '/healthz' });
  t.equal(health.status, 200, 'the API is still serving');
});

t.test('a 500 answer is retried: same webhook-id and body bytes, attempts recorded [500, 200]', async (t) => {
  const hook = await receiver(t, (n) => (n === 1 ? 500 : 200));
  const secret = whsec();
  const merchant = await makeMerchant(stack.api.ctx, { webhookSecret: secret });
  const created = await newOrder(stack, merchant, { amount: 50_000, notify_url: hook.url });
  await pay(stack, created.ref_code);

  const [first, second] = await hook.waitFor(2, 20_000);
  t.ok(first.headers['webhook-id'], 'webhook-id present');
  t.equal(second.headers['webhook-id'], first.headers['webhook-id'], 'the same webhook-id on the retry');
  t.ok(second.body.equals(first.body), 'the same body bytes on the retry');
  t.equal(second.json.event_id, first.headers['webhook-id'], 'so the same event_id, the webhook-id, and event_created_at');
  t.strictSame(webhookSignatureProblems(second, secret), [], 'the retry is signed afresh and verifies');

  const [delivery] = await settledDeliveries(stack, created.ref_code);
  t.equal(delivery.status, 'DELIVERED');
  t.equal(delivery.event, 'order.paid');
  t.strictSame(delivery.attempts.map((a) => a.status_code), [500, 200], 'both attempts recorded with their status codes');
  t.equal(delivery.id, first.headers['webhook-id'], 'webhook-id is the delivery id shown to operators');
  // WEBHOOK_RETRY_SCHEDULE is '1,...': the retry is due 1 s after the failed attempt; allow a
  // worker poll of slack, not a multiple of the schedule.
  const gapMs = Date.parse(delivery.attempts[1].created_at) - Date.parse(delivery.attempts[0].created_at) - delivery.attempts[1].latency_ms;
  t.comment(`retry sent ${gapMs} ms after the failed attempt`);
  t.ok(gapMs >= 900 && gapMs < 5000, `the retry follows the 1 s schedule (sent ${gapMs} ms after the failure)`);
  t.equal(hook.received.length, 2, 'no third attempt after success');
});

t.test('an exhausted schedule ends FAILED after 1 + 3 attempts; webhooks:resend delivers it once more', async (t) => {
  let answer = 500;
  const hook = await receiver(t, () => answer);
  const merchant = await makeMerchant(stack.api.ctx);
  const created = await newOrder(stack, merchant, { amount: 60_000, notify_url: hook.url });
  await pay(stack, created.ref_code);

  // Deadline: 1 + 1 + 2 s of schedule, plus up to pg-boss's 10 s NOTIFY backstop poll per retry
  // (a delayed job is not announced when it becomes due).
  const [failed] = await settledDeliveries(stack, created.ref_code, 1, 45_000);
  t.equal(failed.status, 'FAILED');
  t.strictSame(failed.attempts.map((a) => a.status_code), [500, 500, 500, 500], 'first attempt and the three retries of WEBHOOK_RETRY_SCHEDULE 1,1,2');
  t.equal(hook.received.length, 4, 'the receiver saw four attempts');
  const ids = new Set(hook.received.map((r) => r.headers['webhook-id']));
  t.equal(ids.size, 1, 'all with one webhook-id');

  answer = 200;
  const resend = await ops(stack.env, 'webhooks:resend', '--id', failed.id, '--json');
  t.equal(resend.code, 0, resend.stderr);
  const all = await hook.waitFor(5, 10_000);
  t.equal(all[4].headers['webhook-id'], failed.id, 'the resend keeps the webhook-id');
  t.ok(all[4].body.equals(all[0].body), 'and the body bytes');
  const [delivered] = await settledDeliveries(stack, created.ref_code);
  t.equal(delivered.status, 'DELIVERED');
  t.strictSame(delivered.attempts.map((a) => a.status_code), [500, 500, 500, 500, 200]);
  t.equal(hook.received.length, 5, 'sent exactly once more');

  // Many ids in one call (a column piped from webhooks:list): each known one queued, an unknown
  // one skipped with its reason, and the exit code says something was skipped.
  const unknown = randomUUID();
  const many = await opsWithStdin(stack.env, `${failed.id}\n${unknown}\n`, 'webhooks:resend', '--stdin', '--json');
  t.equal(many.code, 1, 'exit 1: one id was skipped');
  t.strictSame(JSON.parse(many.stdout), { queued: [failed.id], skipped: [{ id: unknown, reason: `no webhook delivery ${unknown}` }] });
  const six = await hook.waitFor(6, 10_000);
  t.equal(six[5].headers['webhook-id'], failed.id, 'the known one was sent again');
});

t.test('callback security: bad signatures and unknown vendors change nothing', async (t) => {
  const merchant = await makeMerchant(stack.api.ctx);
  const created = await newOrder(stack, merchant, { amount: 70_000 });
  const body = JSON.stringify({
    event_id: `evt_test_${randomBytes(6).toString('hex')}`,
    type: 'qris.paid',
    reference: created.ref_code,
    id: `qr_test_${randomBytes(6).toString('hex')}`,
    amount: 70_000,
    paid_at: new Date().toISOString(),
    rrn: '990011223344',
  });
  const post = (path: string, headers: Record<string, string>, raw: string = body) =>
    call(stack.api.url, { path, headers: { 'content-type': 'application/json', ...headers }, body: raw });

  const wrongSecret = await post('/callbacks/sim', simulatorSignature('not-the-secret', body));
  t.equal(wrongSecret.status, 401);
  t.equal(wrongSecret.json?.error?.code, 'INVALID_SIGNATURE');

  const unsigned = await post('/callbacks/sim', {});
  t.equal(unsigned.status, 401, 'no signature headers');
  t.equal(unsigned.json?.error?.code, 'INVALID_SIGNATURE');

  const tampered = await post('/callbacks/sim', simulatorSignature(stack.sim.secret, body), body.replace('"amount":70000', '"amount":70001'));
  t.equal(tampered.status, 401, 'a body changed after signing');

  const stale = await post('/callbacks/sim', simulatorSignature(stack.sim.secret, body, Math.floor(Date.now() / 1000) - 600));
  t.equal(stale.status, 401, 'a correctly signed callback from 10 minutes ago (a captured replay)');

  // An unknown code is answered exactly as a bad signature (but for the request id), so codes cannot be enumerated.
  const refusal = (res: { status: number; json: any }) => [res.status, { ...res.json, error: { ...res.json?.error, request_id: undefined } }];
  const unknownVendor = await post('/callbacks/nosuchvendor', simulatorSignature(stack.sim.secret, body));
  t.same(refusal(unknownVendor), refusal(wrongSecret), 'an unknown vendor code: the bad signature answer');

  // A path under a code (only SNAP vendors have them) is refused as a SNAP provider refuses a
  // stranger, under any code: a vendor of another kind and a made-up code answer alike.
  const subPath = await post('/callbacks/sim/v1.0/qr/qr-mpm-notify', simulatorSignature(stack.sim.secret, body));
  const madeUpSubPath = await post('/callbacks/nosuchvendor/v1.0/qr/qr-mpm-notify', simulatorSignature(stack.sim.secret, body));
  t.same([subPath.status, subPath.json], [401, { responseCode: '4015200', responseMessage: 'Unauthorized. Invalid Signature' }], 'a path under the code of a vendor that has none: refused');
  t.same([madeUpSubPath.status, madeUpSubPath.json], [subPath.status, subPath.json], 'the same as under a made-up code');

  // Codes no vendor can have never reach Postgres (a NUL byte made it answer 500).
  for (const code of ['%00', 'sim%00', 'a'.repeat(5000), 'UPPER', '%E2%80%8Bsim']) {
    const res = await post(`/callbacks/${code}`, simulatorSignature(stack.sim.secret, body));
    t.same(refusal(res), refusal(wrongSecret), `code ${code.slice(0, 12)}: the bad signature answer`);
  }

  const order = await getOrder(stack, merchant, created.ref_code);
  t.equal(order.status, 'PENDING', 'the order stays PENDING');
  t.equal(order.paid_at, null);
  t.strictSame((await getEvents(stack, merchant, created.ref_code)).map((e) => e.status), ['PENDING']);

  // Control: the very same body, correctly signed, is accepted: the refusals above were the
  // signature's. A shared secret's word is only a hint (docs/callbacks.md): the simulator's own
  // record shows the order unpaid, so no money moves until the payer really pays there.
  const genuine = await post('/callbacks/sim', simulatorSignature(stack.sim.secret, body));
  t.equal(genuine.status, 200);
  t.equal((await getOrder(stack, merchant, created.ref_code)).status, 'PENDING', 'signed, but unconfirmed by the vendor\'s read');
  const paying = await simulatePay(stack.sim.url, { reference: created.ref_code });
  t.equal(paying.status, 200);
  const paid = await eventually(async () => {
    const o = await getOrder(stack, merchant, created.ref_code);
    return o.status === 'PAID' ? o : undefined;
  }, 'the payment the simulator holds to make it PAID');
  t.equal(paid.amount, created.amount);
});

t.test('a vendor-signed event id of any length is recorded (as its digest past 200 characters) and still deduplicates', async (t) => {
  const merchant = await makeMerchant(stack.api.ctx);
  const created = await newOrder(stack, merchant, { amount: 25_000 });
  // The payer pays at the simulator, whose own callback is dropped: the long-id word below is the
  // one that tells Kasir, and the simulator's record confirms it (a shared secret's word is a hint).
  t.equal((await simulatePay(stack.sim.url, { reference: created.ref_code }, { 'X-Sim-Fault': 'drop_callback' })).status, 200);
  const qrId = await stack.api.ctx.pool.oneFirst(sql.type(z.object({ v: z.string() }))`select vendor_order_id as v from orders where ref_code = ${created.ref_code}`);
  const body = JSON.stringify({ event_id: `evt_${'x'.repeat(5000)}`, type: 'qris.paid', reference: created.ref_code, id: qrId, amount: 25_000, paid_at: new Date().toISOString(), rrn: '990011220000' });
  const send = () => call(stack.api.url, { path: '/callbacks/sim', headers: { 'content-type': 'application/json', ...simulatorSignature(stack.sim.secret, body) }, body });
  const first = await send();
  t.same([first.status, first.json?.data?.result], [200, 'paid'], 'applied, not a 500 from the index row limit');
  const again = await send();
  t.same([again.status, again.json?.data?.result], [200, 'duplicate'], 'the same long id is the same event');
  t.equal((await getOrder(stack, merchant, created.ref_code)).status, 'PAID');
});

t.test('a duplicated callback and replays: one PAID event, one order.paid webhook', async (t) => {
  const hook = await receiver(t);
  const merchant = await makeMerchant(stack.api.ctx);
  const created = await newOrder(stack, merchant, { amount: 80_000, notify_url: hook.url });
  const paid = await pay(stack, created.ref_code, {}, { 'X-Sim-Fault': 'duplicate_callback' });

  const both = await eventually(
    async () => {
      const seen = callbacks.forReference(created.ref_code);
      return seen.length >= 2 ? seen : undefined;
    },
    'the simulator to deliver the callback twice',
  );
  t.equal(both.length, 2, 'Kasir answered two deliveries');
  t.ok(both.every((c) => c.status === 200), 'both acknowledged with 200 (so the vendor stops retrying)');
  t.ok(both[1].body.equals(both[0].body), 'the same callback (same event_id and bytes)');

  const order = await getOrder(stack, merchant, created.ref_code);
  t.equal(order.status, 'PAID');
  t.equal(order.vendor_rrn, paid.rrn);
  const events = await getEvents(stack, merchant, created.ref_code);
  t.equal(events.filter((e) => e.status === 'PAID').length, 1, 'exactly one PAID event');

  const deliveries = await settledDeliveries(stack, created.ref_code);
  t.strictSame(deliveries.map((d) => [d.event, d.status]), [['order.paid', 'DELIVERED']], 'exactly one order.paid delivery');
  t.equal(hook.received.length, 1, 'the merchant received one webhook');

  // A replay of the callback, re-signed now so it passes the signature check.
  const original = both[0].body;
  const replay = await call(stack.api.url, {
    path: '/callbacks/sim',
    headers: { 'content-type': 'application/json', ...simulatorSignature(stack.sim.secret, original) },
    body: original,
  });
  t.equal(replay.status, 200, 'a replay is acknowledged');
  // Same event_id, different payment details: still the same event, applied once.
  const altered = Buffer.from(JSON.stringify({ ...both[0].json, rrn: '123123123123', paid_at: new Date().toISOString() }));
  const alteredReplay = await call(stack.api.url, {
    path: '/callbacks/sim',
    headers: { 'content-type': 'application/json', ...simulatorSignature(stack.sim.secret, altered) },
    body: altered,
  });
  t.equal(alteredReplay.status, 200);

  const after = await getOrder(stack, merchant, created.ref_code);
  t.equal(after.status, 'PAID');
  t.equal(after.paid_at, order.paid_at, 'paid_at unchanged');
  t.equal(after.vendor_rrn, paid.rrn, 'vendor_rrn unchanged');
  t.strictSame(await getEvents(stack, merchant, created.ref_code), events, 'timeline unchanged');
  const afterDeliveries = await listDeliveries(stack.env, created.ref_code);
  t.equal(afterDeliveries.length, 1, 'no new delivery');
  t.equal(hook.received.length, 1, 'no second webhook');
});

t.test('a late payment on an EXPIRED order is recorded: PENDING, EXPIRED, PAID, and order.paid is sent marked late', async (t) => {
  const hook = await receiver(t);
  const merchant = await makeMerchant(stack.api.ctx);
  const created = await newOrder(stack, merchant, { amount: 90_000, expire_minutes: 1, notify_url: hook.url });
  await makeOverdue(stack, [created.ref_code]);
  const expired = await orderReaches(stack, merchant, created.ref_code, 'EXPIRED', 10_000);
  t.equal(expired.paid_at, null);
  const [expiredHook] = await hook.waitFor(1, 10_000);
  t.equal(expiredHook.json.event, 'order.expired');

  const paid = await pay(stack, created.ref_code, { force: true });
  const order = await orderReaches(stack, merchant, created.ref_code, 'PAID');
  t.match(order.paid_at, ISO_Z);
  t.equal(order.vendor_rrn, paid.rrn, 'the money received is recorded');
  const events = await getEvents(stack, merchant, created.ref_code);
  t.strictSame(events.map((e) => [e.status, e.late]), [['PENDING', false], ['EXPIRED', false], ['PAID', true]], 'the timeline marks the payment late');

  const all = await hook.waitFor(2, 10_000);
  t.strictSame(
    all[1].json,
    {
      ref_code: created.ref_code, merchant_order_id: created.merchant_order_id, amount: 90_000, status: 'PAID', event: 'order.paid', paid_at: order.paid_at,
      late: true, event_id: all[1].headers['webhook-id'], event_created_at: all[1].json.event_created_at,
    },
    'order.paid webhook for the late payment, marked late',
  );
  t.match(all[1].json.event_created_at, ISO_Z, 'with the time of the event');
});

t.test('SSRF: with an empty NOTIFY_URL_ALLOWLIST private destinations are refused', async (t) => {
  const guarded = await startStack(t, { env: { NOTIFY_URL_ALLOWLIST: '' }, groups: ['vendor', 'webhook'] });
  const hook = await receiver(t);
  const port = new URL(hook.url).port;

  t.test('at create: 400 INVALID_BODY naming notify_url', async (t) => {
    const merchant = await makeMerchant(guarded.api.ctx);
    for (const url of [
      `http://localhost:${port}/hook`,
      `http://127.0.0.1:${port}/hook`,
      'http://10.1.2.3/hook',
      'http://172.16.0.1/hook',
      'http://192.168.1.10/hook',
      'http://169.254.169.254/latest/meta-data/',
      'http://100.64.0.1/hook',
      'http://[::1]/hook',
      'http://[::ffff:127.0.0.1]/hook',
      'http://metadata.google.internal/computeMetadata/v1/',
      'http://intranet/hook',
      'file:///etc/passwd',
      // Every IPv6 spelling of a non-public address, and fully qualified local names.
      `http://[::127.0.0.1]:${port}/hook`,
      'http://[::10.0.0.1]/hook',
      'http://[0:0:0:0:0:ffff:7f00:1]/hook',
      'http://[::ffff:169.254.169.254]/latest/meta-data/',
      'http://[0000:0000:0000:0000:0000:0000:0000:0001]/hook',
      'http://[::]/hook',
      'http://[64:ff9b::127.0.0.1]/hook',
      'http://[2002:7f00:1::1]/hook',
      'http://[fc00::1]/hook',
      'http://[fe80::1]/hook',
      'http://[fe80::1%25eth0]/hook',
      'http://[fec0::1]/hook',
      'http://[ff02::1]/hook',
      `http://localhost.:${port}/hook`,
      'http://metadata.google.internal./computeMetadata/v1/',
      'http://intranet./hook',
    ]) {
      const res = await createOrder(guarded, merchant, { merchant_order_id: orderId('SSRF'), amount: 1000, notify_url: url });
      t.equal(res.status, 400, `${url} refused`);
      t.equal(res.json?.error?.code, 'INVALID_BODY', `${url} is INVALID_BODY`);
      t.match(res.json?.error?.message, /notify_url/, `${url}: the message names notify_url`);
    }
    const allowed = await createOrder(guarded, merchant, { merchant_order_id: orderId('SSRF'), amount: 1000, notify_url: 'https://hooks.merchant.example.com/kasir' });
    t.equal(allowed.status, 201, 'a public host name is accepted (resolved only at delivery)');
  });

  // A merchant default is set by an operator, not checked at order create: the delivery-time
  // check must still refuse a destination that is (or resolves to) a private address.
  for (const [label, host] of [
    ['a host name resolving to 127.0.0.1', 'localhost'],
    ['a literal private IP', '127.0.0.1'],
    ['an IPv4-compatible IPv6 loopback', '[::127.0.0.1]'],
    ['an IPv4-mapped IPv6 loopback in hex', '[::ffff:7f00:1]'],
    ['a local name with a trailing dot', 'localhost.'],
  ] as const) {
    t.test(`at delivery: ${label} is not contacted`, async (t) => {
      const merchant = await makeMerchant(guarded.api.ctx, { notifyUrl: `http://${host}:${port}/hook` });
      const created = await newOrder(guarded, merchant, { amount: 11_000 });
      await pay(guarded, created.ref_code);
      await orderReaches(guarded, merchant, created.ref_code, 'PAID');
      const [delivery] = await eventually(
        async () => {
          const list = await listDeliveries(guarded.env, created.ref_code);
          return list.length === 1 && list[0].attempts.length >= 1 ? list : undefined;
        },
        'a first delivery attempt',
      );
      t.equal(delivery.attempts[0].status_code, null, 'no HTTP status: the request was never sent');
      t.match(delivery.attempts[0].error, /blocked/i, 'recorded as a blocked destination');
      t.equal(delivery.status, 'FAILED', 'failed at once: a retry would be refused the same way');
      t.equal(delivery.attempts.length, 1, 'one attempt, no retry scheduled');
      t.equal(hook.received.length, 0, 'the private receiver got nothing');
    });
  }
});
