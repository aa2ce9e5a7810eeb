// The simulator keeps its state across a crash (SIMULATOR_STATE_FILE): a real process is
// SIGKILLed mid-work and started again on the same journal, and what Kasir would ask of a real
// gateway afterwards still works: queries, refund replays, a pay and its callback, a payout
// settlement that fell due while it was down, a callback still owed, the dialects' own records.
import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { simulatePay, simulatorRequest, startCallbackReceiver, startSimulatorProcess, type ReceivedCallback } from '../helpers/simulator.ts';

const dir = mkdtempSync(join(tmpdir(), 'kasir-sim-state-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

/** Settlement delay of the first run: long enough that nothing settles before the kill. */
const FIRST_DELAY_MS = 3000;
const XENDIT_AUTH = `Basic ${Buffer.from('xnd_development_kasir_simulator_key:').toString('base64')}`;
const MIDTRANS_AUTH = `Basic ${Buffer.from('SB-Mid-server-kasir-simulator:').toString('base64')}`;
const IRIS_CREATOR = `Basic ${Buffer.from('IRIS-creator-kasir-simulator:').toString('base64')}`;

let seq = 0;
const newRef = (prefix: string) => `${prefix}-${Date.now()}-${++seq}`;

async function call(base: string, method: string, path: string, body: unknown, headers: Record<string, string>) {
  const response = await fetch(base + path, { method, body: body === undefined ? undefined : JSON.stringify(body), headers: { 'content-type': 'application/json', ...headers } });
  return { status: response.status, body: (await response.json()) as any };
}

async function until<T>(what: string, probe: () => T | undefined, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = probe();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** References whose callbacks the receiver refuses (503), so they stay owed. */
const refused = new Set<string>();
const receiver = await startCallbackReceiver((n) => (refused.has(receiver.received[n - 1].json?.reference) ? 503 : 200));
t.teardown(() => receiver.close());
const callbackOf = (match: (c: ReceivedCallback) => boolean, from = 0) => receiver.received.slice(from).find(match);

const stateFile = join(dir, 'nested', 'simulator-state.jsonl');
const env = (delayMs: number) => ({
  SIMULATOR_STATE_FILE: stateFile,
  SIMULATOR_DISBURSE_DELAY_MS: String(delayMs),
  SIMULATOR_XENDIT_CALLBACK_URL: receiver.url,
  SIMULATOR_IRIS_NOTIFY_URL: receiver.url,
});

// ---------------------------------------------------------------- first run, then a crash

const first = await startSimulatorProcess(env(FIRST_DELAY_MS));
const sign = (method: string, path: string, body?: unknown) => simulatorRequest(first.url, first.secret, method, path, body);
const qr = (reference: string, amount: number) => ({ reference, amount, expires_at: new Date(Date.now() + 3600_000).toISOString(), callback_url: receiver.url });

const pending = await sign('POST', '/v1/qris', qr(newRef('ORD-A'), 15_000));
const paid = await sign('POST', '/v1/qris', qr(newRef('ORD-B'), 20_000));
await simulatePay(first.url, { reference: paid.body.reference });
await until('the first payment callback', () => callbackOf((c) => c.json.reference === paid.body.reference));
const refundBody = { refund_reference: newRef('RFD'), amount: 2000 };
const refund = await sign('POST', `/v1/qris/${paid.body.reference}/refunds`, refundBody);
const paidBefore = (await sign('GET', `/v1/qris/${paid.body.reference}`)).body;

// A payment whose callback Kasir has not taken yet: still owed at the crash.
const owed = await sign('POST', '/v1/qris', qr(newRef('ORD-C'), 30_000));
refused.add(owed.body.reference);
await simulatePay(first.url, { reference: owed.body.reference });
const refusedCallback = await until('the refused callback attempt', () => callbackOf((c) => c.json.reference === owed.body.reference));

// Dialect records: a Xendit QR and payout, a Midtrans charge paid and partly refunded, an Iris payout.
const xenditQr = await call(first.url, 'POST', '/xendit/qr_codes', { reference_id: newRef('XQR'), type: 'DYNAMIC', currency: 'IDR', amount: 12_000 }, { authorization: XENDIT_AUTH, 'api-version': '2022-07-31' });
const orderId = newRef('MT');
await call(first.url, 'POST', '/midtrans/v2/charge', { payment_type: 'qris', transaction_details: { order_id: orderId, gross_amount: 40_000 } }, { authorization: MIDTRANS_AUTH, 'x-override-notification': receiver.url });
await simulatePay(first.url, { reference: orderId });
const midtransRefund = await call(first.url, 'POST', `/midtrans/v2/${orderId}/refund`, { refund_key: newRef('MTR'), amount: 5000 }, { authorization: MIDTRANS_AUTH });
const iris = await call(first.url, 'POST', '/iris/api/v1/payouts', { payouts: [{ beneficiary_name: 'BUDI', beneficiary_account: '1234567890', beneficiary_bank: 'bca', amount: '25000.00', notes: newRef('IRIS') }] }, { authorization: IRIS_CREATOR });

// Payouts last, so they are still PROCESSING when the process dies.
const payout = await sign('POST', '/v1/disbursements', { reference: newRef('DSB'), channel: 'BANK', bank_code: 'BCA', account_number: '1234567890', amount: 50_000, callback_url: receiver.url });
const xenditKey = newRef('idem');
const xenditPayout = await call(
  first.url,
  'POST',
  '/xendit/v2/payouts',
  { reference_id: newRef('XPO'), channel_code: 'ID_BCA', channel_properties: { account_number: '1234567890', account_holder_name: 'BUDI' }, amount: 60_000, currency: 'IDR' },
  { authorization: XENDIT_AUTH, 'idempotency-key': xenditKey },
);
const killed = await first.kill();
const receivedBeforeRestart = receiver.received.length;
refused.clear();

// A crash can cut the last write short: a torn line at the end must be ignored.
appendFileSync(stateFile, '[{"k":"qr","id":"ORD-TORN","v":{"id":"qr_0123');
// The settlements fall due while the simulator is down (time must pass: nothing to poll).
await sleep(Math.max(0, Date.parse(payout.body.created_at) + FIRST_DELAY_MS + 100 - Date.now()));

// ---------------------------------------------------------------- second run, same file

// A delay no test waits out: only the stored due times can settle the payouts now.
const second = await startSimulatorProcess(env(600_000));
t.teardown(() => second.stop());
const again = (method: string, path: string, body?: unknown) => simulatorRequest(second.url, second.secret, method, path, body);

t.test('the first run was really cut short', async (t) => {
  t.same(killed, { code: null, signal: 'SIGKILL' });
  t.match(payout.body, { status: 'PROCESSING' });
  t.match(xenditPayout.body, { status: 'ACCEPTED' });
  t.notOk(callbackOf((c) => c.json.reference === payout.body.reference), 'no settlement callback before the crash');
});

t.test('QRs, refunds and payouts are still found', async (t) => {
  t.same((await again('GET', `/v1/qris/${pending.body.reference}`)).body, pending.body, 'the pending QR, unchanged');
  const after = await again('GET', `/v1/qris/${paid.body.reference}`);
  t.same(after.body, paidBefore, 'the paid QR with its rrn and refunded amount');
  t.equal(after.body.refunded_amount, 2000);
  const replay = await again('POST', `/v1/qris/${paid.body.reference}/refunds`, refundBody);
  t.equal(replay.status, 200, 'a refund retried after the restart is the same refund');
  t.same(replay.body, refund.body);
  t.equal((await again('POST', `/v1/qris/${paid.body.reference}/refunds`, { ...refundBody, amount: 18_000 })).status, 409, 'refund_reference still taken');
  t.equal((await again('GET', '/v1/qris/ORD-TORN')).status, 404, 'the torn line added nothing');
});

t.test('a payout that fell due while down completes at once and calls back', async (t) => {
  const callback = await until('the settlement callback', () => callbackOf((c) => c.json.reference === payout.body.reference, receivedBeforeRestart));
  t.match(callback.json, { type: 'disbursement.updated', id: payout.body.id, status: 'SUCCESS' });
  t.match((await again('GET', `/v1/disbursements/${payout.body.reference}`)).body, { status: 'SUCCESS', id: payout.body.id });
  const xendit = await until('the Xendit payout callback', () => callbackOf((c) => c.json.data?.reference_id === xenditPayout.body.reference_id, receivedBeforeRestart));
  t.match(xendit.json, { event: 'payout.succeeded', data: { id: xenditPayout.body.id, status: 'SUCCEEDED' } });
  t.equal(xendit.headers['x-callback-token'], 'kasir-simulator-xendit-callback-token', 'signed by its dialect after the restart');
});

t.test('a callback still owed at the crash is sent again, same event', async (t) => {
  const resent = await until('the owed callback', () => callbackOf((c) => c.json.reference === owed.body.reference, receivedBeforeRestart));
  t.same(resent.json, refusedCallback.json, 'same body and event_id: Kasir dedupes');
  t.ok(resent.headers['x-sim-signature'], 'freshly signed');
});

t.test('a pay after the restart triggers its callback', async (t) => {
  const pay = await simulatePay(second.url, { reference: pending.body.reference });
  t.equal(pay.status, 200);
  const callback = await until('the payment callback', () => callbackOf((c) => c.json.reference === pending.body.reference));
  t.match(callback.json, { type: 'qris.paid', id: pending.body.id, amount: 15_000, rrn: pay.body.rrn });
  t.equal((await simulatePay(second.url, { reference: paid.body.reference })).status, 409, 'a QR paid before the crash stays paid');

  const xenditPay = await simulatePay(second.url, { reference: xenditQr.body.reference_id });
  t.equal(xenditPay.status, 200);
  const xendit = await until('the Xendit payment callback', () => callbackOf((c) => c.json.event === 'qr.payment' && c.json.data?.qr_id === xenditQr.body.id));
  t.equal(xendit.headers['x-callback-token'], 'kasir-simulator-xendit-callback-token');
});

t.test("the dialects' own records survive", async (t) => {
  const xenditQuery = await call(second.url, 'GET', `/xendit/qr_codes/${xenditQr.body.id}`, undefined, { authorization: XENDIT_AUTH, 'api-version': '2022-07-31' });
  t.match(xenditQuery, { status: 200, body: { id: xenditQr.body.id, qr_string: xenditQr.body.qr_string } });
  const reused = await call(
    second.url,
    'POST',
    '/xendit/v2/payouts',
    { reference_id: newRef('XPO'), channel_code: 'ID_BCA', channel_properties: { account_number: '1234567890', account_holder_name: 'BUDI' }, amount: 1000, currency: 'IDR' },
    { authorization: XENDIT_AUTH, 'idempotency-key': xenditKey },
  );
  t.match(reused, { status: 409, body: { error_code: 'DUPLICATE_ERROR' } }, 'a payout idempotency key stays used');

  const status = await call(second.url, 'GET', `/midtrans/v2/${orderId}/status`, undefined, { authorization: MIDTRANS_AUTH });
  t.match(status.body, { transaction_status: 'partial_refund', refund_amount: '5000.00', refunds: [{ refund_key: midtransRefund.body.refund_key, refund_chargeback_id: midtransRefund.body.refund_chargeback_id }] });

  const irisPayout = await call(second.url, 'GET', `/iris/api/v1/payouts/${iris.body.payouts[0].reference_no}`, undefined, { authorization: IRIS_CREATOR });
  t.match(irisPayout, { status: 200, body: { status: 'queued', amount: '25000.00' } });
});

t.test('the journal was compacted: every line whole', async (t) => {
  const lines = readFileSync(stateFile, 'utf8').split('\n');
  t.equal(lines.pop(), '', 'ends with a newline');
  for (const line of lines) t.doesNotThrow(() => JSON.parse(line), line.slice(0, 60));
});

t.test('a damaged line that is not the last stops start-up', async (t) => {
  const damaged = join(dir, 'damaged.jsonl');
  writeFileSync(damaged, 'not json\n[{"k":"qr","id":"X","v":null}]\n');
  await t.rejects(startSimulatorProcess({ SIMULATOR_STATE_FILE: damaged }), /line 1 is damaged/);
});
