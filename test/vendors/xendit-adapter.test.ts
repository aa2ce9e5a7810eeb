// The Xendit adapter against the simulator's Xendit dialect in this process, and against a
// bare HTTP server for answers the dialect never gives (garbled bodies): each answer maps to
// the outcome that decides failover, 429 is counted, and the pure transforms hold.
import { createServer } from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { registry } from '../../db/metrics.ts';
import type { DisburseInput } from '../../gateways/gateway.ts';
import { createXenditGateway } from '../../gateways/xendit/connector.ts';
import { channelCodeOf, toCallbackEvent } from '../../gateways/xendit/transforms.ts';
import { setFaults, startSimulatorInProcess } from '../helpers/simulator.ts';
import { XENDIT_ACCOUNT, xenditSimulatorEnv, xenditVendor } from '../helpers/xendit.ts';

const sim = await startSimulatorInProcess({ SIMULATOR_DISBURSE_DELAY_MS: '50', ...xenditSimulatorEnv(null) });
t.teardown(() => sim.stop());
const gateway = createXenditGateway(xenditVendor(sim.url, 'xnd-adapter'), { timeoutMs: 2000 });

const qr = (reference: string, amount = 25_000) => ({ reference, amount, expiresAt: new Date(Date.now() + 600_000), merchantName: 'TOKO', merchantCity: 'JAKARTA', callbackUrl: 'http://127.0.0.1:9/unused' });
const payout = (reference: string, extra: Partial<DisburseInput> = {}): DisburseInput => ({
  reference, channel: 'BANK', bankCode: 'BCA', ewalletCode: null, accountNumber: '1234567890', accountName: 'Budi Santoso', amount: 10_000, callbackUrl: 'http://127.0.0.1:9/unused', ...extra,
});

t.test('answers and their outcomes', async (t) => {
  const created = await gateway.createQris(qr('ORD-XA-1'));
  t.match(created, { kind: 'ok', value: { vendorOrderId: /^qr_/, qrisString: /^000201/ } });
  t.match(await gateway.queryQris('ORD-XA-1', created.kind === 'ok' ? created.value.vendorOrderId : null), { kind: 'ok', value: { status: 'PENDING' } });
  t.match(await gateway.queryQris('ORD-XA-1', null), { kind: 'ok', value: { status: 'NOT_FOUND' } }, 'no lookup by reference: without the id, not made');
  t.match(await gateway.queryQris('ORD-XA-1', 'qr_nosuch'), { kind: 'ok', value: { status: 'NOT_FOUND' } }, 'DATA_NOT_FOUND is a real answer');
  t.match(await gateway.createQris(qr('ORD-XA-2', 10_100)), { kind: 'failed', reason: /403 CHANNEL_NOT_ACTIVATED/ }, '4xx: Xendit did nothing');
  t.match(await gateway.createQris(qr('ORD-XA-3', 10_101)), { kind: 'unknown', reason: /503 CHANNEL_UNAVAILABLE/ }, '5xx: may have acted');
  await setFaults(sim.url, { op: 'createQris', mode: 'timeout', count: 1 });
  t.match(await createXenditGateway(xenditVendor(sim.url, 'xnd-quick'), { timeoutMs: 300 }).createQris(qr('ORD-XA-4')), { kind: 'unknown', reason: /ETIMEDOUT/ });
  t.match(await gateway.disburse(payout('DSB-XA-1', { bankCode: 'KASPRO_BANK' })), { kind: 'failed', reason: /no payout channel/ }, 'an unmapped bank is refused before sending');
  t.match(await gateway.disburse(payout('DSB-XA-2', { accountName: null })), { kind: 'failed', reason: /holder name/ });
  t.match(await gateway.inquireAccount({ channel: 'BANK', bankCode: 'BCA', ewalletCode: null, accountNumber: '1234567890' }), { kind: 'failed' }, 'no inquiry at Xendit');
});

// Issue 29 finding 5: Xendit's SDK answers a reused key with 409 DUPLICATE_ERROR; it means
// "already received", never "failed" (which would send the payout to another vendor).
t.test('a payout sent twice under one reference is read back, never made twice nor failed over', async (t) => {
  const first = await gateway.disburse(payout('DSB-XA-10'));
  t.match(first, { kind: 'ok', value: { vendorDisbursementId: /^disb-/ } });
  const again = await gateway.disburse(payout('DSB-XA-10'));
  t.same(again, first, '409 DUPLICATE_ERROR resolved by reference_id to the same payout');
  t.match(await gateway.queryDisbursement('DSB-XA-NONE'), { kind: 'ok', value: { status: 'NOT_FOUND' } });
});

t.test('a duplicate Xendit cannot show, and a refund without an answer, are unresolvable; a refund is read by its id', async (t) => {
  const server = createServer((req, res) => {
    res.setHeader('content-type', 'application/json');
    if (req.method === 'POST' && req.url === '/xendit/v2/payouts') return void res.writeHead(409).end(JSON.stringify({ error_code: 'DUPLICATE_ERROR', message: 'used' }));
    if (req.url?.startsWith('/xendit/v2/payouts?')) return void res.writeHead(200).end(JSON.stringify({ data: [], has_more: false }));
    res.writeHead(404).end(JSON.stringify({ error_code: 'DATA_NOT_FOUND', message: 'no' }));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.teardown(() => server.close());
  const odd = createXenditGateway(xenditVendor(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, 'xnd-odd'));
  t.match(await odd.disburse(payout('DSB-XA-40')), { kind: 'unknown', unresolvable: true, reason: /duplicate \(HTTP 409\) yet lists no payout/ });
  const asked = { reference: 'ORD-XA-50', vendorOrderId: 'qr_x', refundReference: 'RFD-XA-50', amount: 1000, firstSentAt: new Date() };
  t.match(await gateway.queryRefund({ ...asked, vendorRefundId: null }), { kind: 'unknown', unresolvable: true }, 'no id from a first answer: nothing can prove it absent');
  // A refund Xendit made, read by the id it answered with.
  const created = await gateway.createQris(qr('ORD-XA-50'));
  if (created.kind !== 'ok') throw new Error('create');
  await fetch(`${sim.url}/simulate/pay`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ reference: 'ORD-XA-50' }) });
  const input = { reference: 'ORD-XA-50', vendorOrderId: created.value.vendorOrderId, refundReference: 'RFD-XA-50', amount: 1000 };
  const sent = await gateway.refund(input);
  t.match(sent, { kind: 'ok', value: { vendorRefundId: /^qrrf_/, status: 'PENDING' } });
  if (sent.kind !== 'ok') return;
  t.match(await gateway.queryRefund({ ...input, vendorRefundId: sent.value.vendorRefundId, firstSentAt: new Date() }), { kind: 'ok', value: { status: /PENDING|SUCCEEDED/, vendorRefundId: sent.value.vendorRefundId } });
  t.match(await gateway.queryRefund({ ...input, vendorRefundId: 'qrrf_unknown', firstSentAt: new Date() }), { kind: 'unknown' }, 'an id Xendit gave is never "not found"');
});

t.test('429 RATE_LIMIT_EXCEEDED is failed and counted', async (t) => {
  const count = async () => (await registry.getSingleMetric('kasir_vendor_rate_limited_total')!.get()).values.find((v) => v.labels.vendor === 'xnd-adapter')?.value ?? 0;
  const before = await count();
  await setFaults(sim.url, { op: 'createQris', mode: 'reject', status: 429, count: 1 });
  t.match(await gateway.createQris(qr('ORD-XA-20')), { kind: 'failed', reason: /429 RATE_LIMIT_EXCEEDED/ });
  t.equal((await count()) - before, 1);
});

t.test('garbled answers are unknown; a wrong key is failed', async (t) => {
  const server = createServer((req, res) => {
    res.writeHead(req.url?.includes('/v2/') ? 200 : 502, { 'content-type': 'text/html' });
    res.end('<html>gateway</html>');
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.teardown(() => server.close());
  const garbled = createXenditGateway(xenditVendor(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, 'xnd-garbled'));
  t.match(await garbled.disburse(payout('DSB-XA-30')), { kind: 'unknown', reason: /unreadable HTTP 200/ }, 'a 200 that is not a payout');
  t.match(await garbled.createQris(qr('ORD-XA-30')), { kind: 'unknown', reason: /HTTP 502/ });
  const wrongKey = createXenditGateway(xenditVendor(sim.url, 'xnd-wrong', { secretKey: 'xnd_development_wrong' }));
  t.match(await wrongKey.check(), { kind: 'failed', reason: /401 INVALID_API_KEY/ });
});

t.test('callbacks: the token in constant time; events mapped; unknown ones noted', async (t) => {
  const body = Buffer.from(JSON.stringify({ event: 'payout.failed', data: { id: 'disb-1', reference_id: 'DSB-1', amount: 1000, status: 'FAILED', failure_code: 'INSUFFICIENT_BALANCE' } }));
  t.match(await gateway.parseCallback({ 'x-callback-token': XENDIT_ACCOUNT.callbackToken }, body), { type: 'disbursement.updated', reference: 'DSB-1', status: 'FAILED', failureReason: 'INSUFFICIENT_BALANCE' });
  t.equal(await gateway.parseCallback({ 'x-callback-token': 'nope' }, body), null);
  t.equal(await gateway.parseCallback({}, body), null);
  t.match(toCallbackEvent({ event: 'qr.refund', data: { id: 'qrrf_1', status: 'PENDING' } }), { type: 'noted' }, 'a pending refund is noted, not acted on');
  t.match(toCallbackEvent({ event: 'qr.refund', data: { id: 'qrrf_1', status: 'SUCCEEDED' } }), { type: 'refund.updated', reference: '', vendorRefundId: 'qrrf_1', status: 'SUCCEEDED' }, "no Kasir reference: matched by Xendit's id");
  t.equal(toCallbackEvent({ event: 'qr.payment', data: { id: 'qrpy_1', qr_id: 'qr_1', reference_id: 'ORD-1', amount: 1000.5, status: 'SUCCEEDED', created: new Date().toISOString() } })?.type, 'noted', 'a fractional amount is never a payment');
});

t.test('channel codes', async (t) => {
  t.equal(channelCodeOf({ channel: 'BANK', bankCode: 'bca', ewalletCode: null }), 'ID_BCA');
  t.equal(channelCodeOf({ channel: 'BANK', bankCode: 'MANDIRI', ewalletCode: null }), 'ID_MANDIRI');
  t.equal(channelCodeOf({ channel: 'EWALLET', bankCode: null, ewalletCode: 'DANA' }), 'ID_DANA');
  t.equal(channelCodeOf({ channel: 'EWALLET', bankCode: null, ewalletCode: 'KASPRO' }), null, 'no Xendit channel');
  t.equal(channelCodeOf({ channel: 'EWALLET', bankCode: null, ewalletCode: 'toString' }), null, 'never a prototype key');
});
