import { createHmac } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type AddressInfo } from 'node:net';
import t from 'tap';
import type { CreateQrisInput, Gateway, Outcome } from '../../gateways/gateway.ts';
import { parseQris, validateVendorQris } from '../../gateways/qris.ts';
import { gatewayFor } from '../../gateways/registry.ts';
import {
  classifyTransportError,
  createSimulatorGateway,
  fromQrisStatus,
  toCallbackEvent,
  toDisbursementStatus,
  toQrisStatus,
  toRefundStatus,
} from '../../gateways/simulator/connector.ts';
import {
  clearFaults,
  setFaults,
  simulatePay,
  simulatorRequest,
  simulatorVendor,
  startCallbackReceiver,
  startSimulatorInProcess,
  startSimulatorProcess,
  type CallbackReceiver,
} from '../helpers/simulator.ts';

const sim = await startSimulatorInProcess({ SIMULATOR_CODE: 'sim-a', SIMULATOR_DISBURSE_DELAY_MS: '20' });
t.teardown(() => sim.stop());
const gateway = createSimulatorGateway(sim.vendor(), { timeoutMs: 2000 });

let seq = 0;
const newRef = (prefix = 'ORD') => `${prefix}-${Date.now()}-${++seq}`;

function qrisInput(callbackUrl = 'http://127.0.0.1:9/unused', overrides: Partial<CreateQrisInput> = {}): CreateQrisInput {
  return {
    reference: newRef(),
    amount: 10_000 + seq,
    expiresAt: new Date(Date.now() + 15 * 60_000),
    merchantName: 'Toko Kopi Nusantara',
    merchantCity: 'Bandung',
    callbackUrl,
    ...overrides,
  };
}

function value<T>(outcome: Outcome<T>): T {
  if (outcome.kind !== 'ok') throw new Error(`expected ok, got ${outcome.kind}: ${outcome.reason}`);
  return outcome.value;
}

async function receiver(t: { teardown(fn: () => unknown): void }, status?: (n: number) => number): Promise<CallbackReceiver> {
  const r = await startCallbackReceiver(status);
  t.teardown(() => r.close());
  return r;
}

async function closedPortUrl(): Promise<string> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return `http://127.0.0.1:${port}`;
}

/** Polls `check` every 10 ms until it holds, failing after `timeoutMs`. */
async function until(check: () => Promise<boolean>, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const hmac = (secret: string, text: string) => createHmac('sha256', secret).update(text).digest('hex');

t.beforeEach(() => clearFaults(sim.url));

t.test('health and request signing', async (t) => {
  t.same(await (await fetch(`${sim.url}/healthz`)).json(), { status: 'ok', code: 'sim-a' });

  const unsigned = await fetch(`${sim.url}/v1/qris/ORD-1`);
  t.equal(unsigned.status, 401);
  t.match(await unsigned.json(), { error: { code: 'INVALID_SIGNATURE' } });

  // The documented scheme, computed here independently of both implementations.
  const get = (timestamp: number, secret: string) =>
    fetch(`${sim.url}/v1/qris/ORD-1`, { headers: { 'x-sim-timestamp': String(timestamp), 'x-sim-signature': hmac(secret, `${timestamp}.`) } });
  const now = Math.floor(Date.now() / 1000);
  const fresh = await get(now, sim.secret);
  t.equal(fresh.status, 404, 'a correct signature passes');
  t.match(await fresh.json(), { error: { code: 'QR_NOT_FOUND' } });
  t.equal((await get(now - 301, sim.secret)).status, 401, 'older than 5 minutes');
  t.equal((await get(now, 'another-secret')).status, 401, 'wrong secret');

  const wrongSecret = createSimulatorGateway(simulatorVendor(sim.url, 'another-secret'));
  t.match(await wrongSecret.createQris(qrisInput()), { kind: 'failed', reason: /HTTP 401 INVALID_SIGNATURE/ });
});

t.test('createQris returns a valid dynamic QRIS and is idempotent on reference', async (t) => {
  const input = qrisInput();
  const created = value(await gateway.createQris(input));
  t.equal(validateVendorQris(created.qrisString, input.amount), null);
  const parsed = parseQris(created.qrisString);
  t.match(parsed, { ok: true, billNumber: input.reference, merchantName: 'Toko Kopi Nusantara', merchantCity: 'Bandung' });

  t.same(value(await gateway.createQris(input)), created, 'same reference, same QR');
  t.match(value(await gateway.queryQris(input.reference)), { status: 'PENDING', vendorOrderId: created.vendorOrderId, qrisString: created.qrisString, paidAt: null });
  t.match(await gateway.createQris({ ...input, amount: input.amount + 1 }), { kind: 'failed', reason: /409 REFERENCE_CONFLICT/ });
});

t.test('invalid input is a definite failure', async (t) => {
  for (const amount of [0, 1.5, 10_000_000_000_000]) {
    const input = qrisInput(undefined, { amount });
    t.match(await gateway.createQris(input), { kind: 'failed', reason: /400 VALIDATION_ERROR: amount/ }, `amount ${amount}`);
    t.match(value(await gateway.queryQris(input.reference)), { status: 'NOT_FOUND' });
  }
  t.match(await gateway.createQris(qrisInput(undefined, { reference: 'R'.repeat(26) })), { kind: 'failed', reason: /reference/ });
});

t.test('connection refused is a definite failure', async (t) => {
  const down = createSimulatorGateway(simulatorVendor(await closedPortUrl(), sim.secret), { timeoutMs: 2000 });
  t.match(await down.createQris(qrisInput()), { kind: 'failed', reason: /ECONNREFUSED/ });
  t.match(await down.queryQris('ORD-1'), { kind: 'failed', reason: /ECONNREFUSED/ });
});

t.test('reject fault: failed, and nothing was created', async (t) => {
  await setFaults(sim.url, { op: 'createQris', mode: 'reject', count: 1 });
  const input = qrisInput();
  t.match(await gateway.createQris(input), { kind: 'failed', reason: /422 SIMULATED_REJECTION/ });
  t.match(value(await gateway.queryQris(input.reference)), { status: 'NOT_FOUND' });
  t.equal(value(await gateway.createQris(input)).qrisString.length > 0, true, 'the rule applied once');
});

t.test('error fault: unknown, and no work was done', async (t) => {
  await setFaults(sim.url, { op: 'createQris', mode: 'error', status: 503, count: 1 });
  const input = qrisInput();
  t.match(await gateway.createQris(input), { kind: 'unknown', reason: /503 SIMULATED_ERROR/ });
  t.match(value(await gateway.queryQris(input.reference)), { status: 'NOT_FOUND' });
});

t.test('timeout fault: unknown, but the QR exists', async (t) => {
  await setFaults(sim.url, { op: 'createQris', mode: 'timeout', count: 1 });
  const impatient = createSimulatorGateway(sim.vendor(), { timeoutMs: 300 });
  const input = qrisInput();
  const started = Date.now();
  t.match(await impatient.createQris(input), { kind: 'unknown', reason: /ETIMEDOUT/ });
  t.ok(Date.now() - started < 2000, 'gave up at the adapter timeout');
  t.match(value(await gateway.queryQris(input.reference)), { status: 'PENDING', vendorOrderId: /^qr_/ });
});

t.test('bad_qris fault: a corrupt QRIS is a definite failure on create, garbled on query', async (t) => {
  await setFaults(sim.url, [
    { op: 'createQris', mode: 'bad_qris', count: 1 },
    { op: 'queryQris', mode: 'bad_qris', count: 1 },
  ]);
  const input = qrisInput();
  t.match(await gateway.createQris(input), { kind: 'failed', reason: /unusable QRIS: QRIS CRC mismatch/ });
  t.match(await gateway.queryQris(input.reference), { kind: 'unknown', reason: /unreadable/ });
  t.match(value(await gateway.queryQris(input.reference)), { status: 'PENDING' }, 'the stored QR itself is fine');
});

t.test('latency, count and rate', async (t) => {
  const input = qrisInput();
  value(await gateway.createQris(input));
  await setFaults(sim.url, [
    { op: 'queryQris', mode: 'latency', latency_ms: 150, count: 1 },
    { op: 'createQris', mode: 'error', rate: 0 },
  ]);
  const started = Date.now();
  t.match(value(await gateway.queryQris(input.reference)), { status: 'PENDING' });
  t.ok(Date.now() - started >= 140, 'the query was delayed');
  value(await gateway.createQris(qrisInput()));
  const listed = (await (await fetch(`${sim.url}/admin/faults`)).json()) as { rules: unknown[] };
  t.match(listed, { rules: [{ op: 'createQris', mode: 'error', rate: 0 }] }, 'the counted rule is used up, rate 0 never fired');
  t.equal(listed.rules.length, 1);

  const bad = await fetch(`${sim.url}/admin/faults`, { method: 'POST', body: JSON.stringify({ op: 'callback', mode: 'error' }) });
  t.equal(bad.status, 400, 'a mode that does not fit the op is refused');
});

t.test('X-Sim-Fault header', async (t) => {
  const inquiry = { channel: 'BANK', bank_code: 'BCA', account_number: '1234567890' };
  const rejected = await simulatorRequest(sim.url, sim.secret, 'POST', '/v1/account-inquiry', inquiry, { 'x-sim-fault': 'reject;status=409' });
  t.match(rejected, { status: 409, body: { error: { code: 'SIMULATED_REJECTION' } } });
  const invalid = await simulatorRequest(sim.url, sim.secret, 'POST', '/v1/account-inquiry', inquiry, { 'x-sim-fault': 'explode' });
  t.match(invalid, { status: 400, body: { error: { code: 'INVALID_FAULT' } } });
  const normal = await simulatorRequest(sim.url, sim.secret, 'POST', '/v1/account-inquiry', inquiry);
  t.equal(normal.status, 200, 'the header applies to its own request only');
});

t.test('a payment sends a signed callback that parseCallback accepts', async (t) => {
  const r = await receiver(t);
  const input = qrisInput(r.url);
  const created = value(await gateway.createQris(input));
  const paid = await simulatePay(sim.url, { reference: input.reference });
  t.match(paid, { status: 200, body: { reference: input.reference, status: 'PAID', rrn: /^\d{12}$/ } });

  const [callback] = await r.waitFor(1);
  t.match(callback.json, { event_id: /^evt_/, type: 'qris.paid', reference: input.reference });
  const event = await gateway.parseCallback(callback.headers, callback.body);
  t.same(event, {
    type: 'qris.paid',
    eventId: callback.json.event_id,
    reference: input.reference,
    vendorOrderId: created.vendorOrderId,
    amount: input.amount,
    paidAt: new Date(paid.body.paid_at),
    rrn: paid.body.rrn,
  });

  const tampered = Buffer.from(callback.body.toString().replace(`"amount":${input.amount}`, `"amount":${input.amount * 10}`));
  t.not(tampered.toString(), callback.body.toString());
  t.equal(await gateway.parseCallback(callback.headers, tampered), null, 'tampered body');
  t.equal(await createSimulatorGateway(simulatorVendor(sim.url, 'another-secret')).parseCallback(callback.headers, callback.body), null, 'wrong secret');
  t.equal(await gateway.parseCallback({ ...callback.headers, 'x-sim-signature': undefined }, callback.body), null, 'no signature');
  const stale = Math.floor(Date.now() / 1000) - 301;
  const staleHeaders = { 'X-Sim-Timestamp': String(stale), 'X-Sim-Signature': hmac(sim.secret, `${stale}.${callback.body}`) };
  t.equal(await gateway.parseCallback(staleHeaders, callback.body), null, 'stale timestamp');
  const now = Math.floor(Date.now() / 1000);
  const freshHeaders = { 'X-Sim-Timestamp': String(now), 'X-Sim-Signature': hmac(sim.secret, `${now}.${callback.body}`) };
  t.ok(await gateway.parseCallback(freshHeaders, callback.body), 'the same body re-signed now is accepted (header case does not matter)');

  t.match(value(await gateway.queryQris(input.reference)), { status: 'PAID', rrn: paid.body.rrn, paidAt: new Date(paid.body.paid_at) });
  t.match(await simulatePay(sim.url, { reference: input.reference }), { status: 409, body: { error: { code: 'ALREADY_PAID' } } });
});

t.test('paying by QRIS string, unknown QRs and expired QRs', async (t) => {
  const r = await receiver(t);
  const input = qrisInput(r.url);
  const created = value(await gateway.createQris(input));
  t.match(await simulatePay(sim.url, { qris_string: created.qrisString }), { status: 200, body: { reference: input.reference } });
  t.match(await simulatePay(sim.url, { reference: 'ORD-NOPE' }), { status: 404 });
  t.match(await simulatePay(sim.url, { qris_string: created.qrisString.slice(0, -1) + 'X' }), { status: 400, body: { error: { code: 'INVALID_QRIS' } } });

  const late = qrisInput(r.url, { expiresAt: new Date(Date.now() - 1000) });
  value(await gateway.createQris(late));
  t.match(value(await gateway.queryQris(late.reference)), { status: 'EXPIRED' });
  t.match(await simulatePay(sim.url, { reference: late.reference }), { status: 409, body: { error: { code: 'QR_EXPIRED' } } });
  t.match(await simulatePay(sim.url, { reference: late.reference, force: true }), { status: 200, body: { status: 'PAID' } });
  const callbacks = await r.waitFor(2);
  t.same(callbacks.map((c) => c.json.reference).sort(), [input.reference, late.reference].sort());
  t.match(value(await gateway.queryQris(late.reference)), { status: 'PAID' });
});

t.test('duplicate_callback delivers the same event twice', async (t) => {
  const r = await receiver(t);
  await setFaults(sim.url, { op: 'callback', mode: 'duplicate_callback', count: 1 });
  const input = qrisInput(r.url);
  value(await gateway.createQris(input));
  t.equal((await simulatePay(sim.url, { reference: input.reference })).status, 200);
  const [first, second] = await r.waitFor(2);
  t.equal(first.json.event_id, second.json.event_id);
  t.equal((await gateway.parseCallback(first.headers, first.body))?.eventId, (await gateway.parseCallback(second.headers, second.body))?.eventId);
});

t.test('drop_callback and out_of_order_callback', async (t) => {
  const r = await receiver(t);
  const [a, b, c, d] = [qrisInput(r.url), qrisInput(r.url), qrisInput(r.url), qrisInput(r.url)];
  for (const input of [a, b, c, d]) value(await gateway.createQris(input));

  await setFaults(sim.url, { op: 'callback', mode: 'drop_callback', count: 1 });
  await simulatePay(sim.url, { reference: a.reference });
  await simulatePay(sim.url, { reference: b.reference });
  const [onlyB] = await r.waitFor(1);
  t.equal(onlyB.json.reference, b.reference, 'the first callback was dropped');

  await setFaults(sim.url, { op: 'callback', mode: 'out_of_order_callback', latency_ms: 30_000, count: 1 });
  await simulatePay(sim.url, { reference: c.reference });
  await simulatePay(sim.url, { reference: d.reference });
  const all = await r.waitFor(3);
  t.same(
    all.map((x) => x.json.reference),
    [b.reference, d.reference, c.reference],
    'c was held until the later d had been delivered; a never came',
  );
});

t.test('latency on callbacks delays them', async (t) => {
  const r = await receiver(t);
  const input = qrisInput(r.url);
  value(await gateway.createQris(input));
  await setFaults(sim.url, { op: 'callback', mode: 'latency', latency_ms: 200, count: 1 });
  const started = Date.now();
  await simulatePay(sim.url, { reference: input.reference });
  await r.waitFor(1);
  t.ok(Date.now() - started >= 190, 'delivered after the injected latency');
});

t.test('SIMULATOR_AUTO_PAY_SECONDS pays created QRs by itself', async (t) => {
  const auto = await startSimulatorInProcess({ SIMULATOR_AUTO_PAY_SECONDS: '0.05' });
  t.teardown(() => auto.stop());
  const r = await receiver(t);
  const autoGateway = createSimulatorGateway(auto.vendor());
  const input = qrisInput(r.url);
  value(await autoGateway.createQris(input));
  const [callback] = await r.waitFor(1);
  t.match(await autoGateway.parseCallback(callback.headers, callback.body), { type: 'qris.paid', reference: input.reference, amount: input.amount });
  t.match(value(await autoGateway.queryQris(input.reference)), { status: 'PAID' });
});

t.test('X-Sim-Fault on a payment applies to its callback', async (t) => {
  const r = await receiver(t);
  const [a, b] = [qrisInput(r.url), qrisInput(r.url)];
  for (const input of [a, b]) value(await gateway.createQris(input));
  await simulatePay(sim.url, { reference: a.reference }, { 'x-sim-fault': 'drop_callback' });
  await simulatePay(sim.url, { reference: b.reference });
  const [first] = await r.waitFor(1);
  t.equal(first.json.reference, b.reference);
  t.match(await simulatePay(sim.url, { reference: b.reference }, { 'x-sim-fault': 'error' }), { status: 400 });
});

t.test('a callback answered with non-2xx is retried, freshly signed', async (t) => {
  const r = await receiver(t, (n) => (n === 1 ? 500 : 200));
  const input = qrisInput(r.url);
  value(await gateway.createQris(input));
  await simulatePay(sim.url, { reference: input.reference });
  const [first, retry] = await r.waitFor(2);
  t.equal(retry.json.event_id, first.json.event_id);
  t.match(await gateway.parseCallback(retry.headers, retry.body), { type: 'qris.paid', reference: input.reference });
});

t.test('refunds', async (t) => {
  const input = qrisInput(undefined, { amount: 10_000 });
  value(await gateway.createQris(input));
  const refund = (refundReference: string, amount: number) =>
    gateway.refund({ reference: input.reference, vendorOrderId: 'unused', refundReference, amount });

  t.match(await refund(newRef('RFD'), 1000), { kind: 'failed', reason: /QR_NOT_PAID/ });
  await simulatePay(sim.url, { reference: input.reference });
  const first = newRef('RFD');
  const done = value(await refund(first, 4000));
  t.match(done, { vendorRefundId: /^rfd_/, status: 'SUCCEEDED' });
  t.same(value(await refund(first, 4000)), done, 'idempotent on refund_reference');
  const query = (refundReference: string) => gateway.queryRefund({ reference: input.reference, vendorOrderId: 'unused', refundReference, amount: 4000, vendorRefundId: null, firstSentAt: new Date() });
  t.same(value(await query(first)), { status: 'SUCCEEDED', vendorRefundId: done.vendorRefundId, failureReason: null }, 'read by its refund_reference');
  t.match(value(await query(newRef('RFD'))), { status: 'NOT_FOUND' }, 'a named 404 proves it absent');
  t.match(await refund(newRef('RFD'), 6001), { kind: 'failed', reason: /AMOUNT_EXCEEDS_REFUNDABLE/ });
  t.match(value(await refund(newRef('RFD'), 6000)), { status: 'SUCCEEDED' });
  t.match(await gateway.refund({ reference: 'ORD-NOPE', vendorOrderId: 'x', refundReference: newRef('RFD'), amount: 1 }), { kind: 'failed', reason: /404/ });
});

t.test('disbursements settle through signed callbacks; magic numbers fail', async (t) => {
  const r = await receiver(t);
  const disburse = (accountNumber: string) => {
    const input = {
      reference: newRef('DSB'),
      channel: 'BANK' as const,
      bankCode: 'BCA',
      ewalletCode: null,
      accountNumber,
      accountName: 'BUDI SANTOSO',
      amount: 50_000,
      callbackUrl: r.url,
    };
    return { input, result: gateway.disburse(input) };
  };
  const ok = disburse('1234567890');
  const id = value(await ok.result).vendorDisbursementId;
  t.match(id, /^dsb_/);
  t.same(value(await gateway.disburse(ok.input)), { vendorDisbursementId: id }, 'idempotent on reference');
  const closed = disburse('1234560000');
  const invalid = disburse('1234569999');
  value(await closed.result);
  value(await invalid.result);

  const events = await Promise.all((await r.waitFor(3)).map((c) => gateway.parseCallback(c.headers, c.body)));
  const byRef = new Map(events.map((e) => [e?.reference, e]));
  t.same(byRef.get(ok.input.reference), { type: 'disbursement.updated', eventId: events.find((e) => e?.reference === ok.input.reference)!.eventId, reference: ok.input.reference, vendorDisbursementId: id, status: 'SUCCESS', failureReason: null });
  t.match(byRef.get(closed.input.reference), { status: 'FAILED', failureReason: 'ACCOUNT_CLOSED' });
  t.match(byRef.get(invalid.input.reference), { status: 'FAILED', failureReason: 'INVALID_ACCOUNT' });

  t.same(value(await gateway.queryDisbursement(ok.input.reference)), { status: 'SUCCESS', vendorDisbursementId: id, failureReason: null });
  t.match(value(await gateway.queryDisbursement(closed.input.reference)), { status: 'FAILED', failureReason: 'ACCOUNT_CLOSED' });
  t.match(value(await gateway.queryDisbursement('DSB-NOPE')), { status: 'NOT_FOUND', vendorDisbursementId: null });
  t.match(await gateway.disburse({ ...ok.input, reference: newRef('DSB'), bankCode: null }), { kind: 'failed', reason: /bank_code/ });
});

t.test('account inquiry is deterministic; magic numbers are not found', async (t) => {
  const inquire = (accountNumber: string) => gateway.inquireAccount({ channel: 'EWALLET', bankCode: null, ewalletCode: 'OVO', accountNumber });
  const found = value(await inquire('081234567890'));
  t.match(found, { status: 'FOUND', accountName: /^[A-Z ]+$/ });
  t.same(value(await inquire('081234567890')), found);
  t.same(value(await inquire('081234569999')), { status: 'NOT_FOUND', reason: 'ACCOUNT_NOT_FOUND' }, 'a named 404 is an answer');
});

// Issue 37: a sandbox like the vendors' test modes. The inquiry confirms the name entered,
// except on magic numbers: …8888 is held by the bank's own holder, …9999 by nobody.
t.test('account inquiry confirms the name entered; …8888 names the bank\'s own holder; …9999 none', async (t) => {
  const inquire = (accountNumber: string, accountName?: string | null) =>
    gateway.inquireAccount({ channel: 'BANK', bankCode: 'BCA', ewalletCode: null, accountNumber, accountName });
  t.same(value(await inquire('3141592653', 'Rizky  Pratama')), { status: 'FOUND', accountName: 'RIZKY PRATAMA' }, 'any made-up name, as a bank prints it');
  t.same(value(await inquire('3141590000', 'Rizky Pratama')), { status: 'FOUND', accountName: 'RIZKY PRATAMA' }, 'the outcome suffixes (0000: closes later) still confirm it');
  const own = value(await inquire('3141598888', 'Rizky Pratama'));
  t.match(own, { status: 'FOUND', accountName: /^[A-Z ]+$/ });
  t.not(own.status === 'FOUND' && own.accountName, 'RIZKY PRATAMA', '…8888 names another holder');
  t.same(value(await inquire('3141598888')), own, 'the same holder asked without a name');
  t.same(value(await inquire('3141598888', own.status === 'FOUND' ? own.accountName.toLowerCase() : '')), own, 'and when the bank\'s name is entered');
  t.same(value(await inquire('3141599999', 'Rizky Pratama')), { status: 'NOT_FOUND', reason: 'ACCOUNT_NOT_FOUND' });
});

t.test('the name rule: a payout whose holder the bank names otherwise is refused for every vendor, unless accepted', async (t) => {
  const payout = (accountNumber: string, extra: { accountName?: string | null; acceptNameMismatch?: boolean } = {}) => ({
    reference: newRef('DSB'), channel: 'BANK' as const, bankCode: 'BCA', ewalletCode: null, accountNumber,
    accountName: 'Rizky Pratama', amount: 50_000, callbackUrl: 'http://127.0.0.1:9/unused', ...extra,
  });
  const holder = value(await gateway.inquireAccount({ channel: 'BANK', bankCode: 'BCA', ewalletCode: null, accountNumber: '2718288888' }));
  const banks = holder.status === 'FOUND' ? holder.accountName : '';
  const refused = payout('2718288888');
  t.same(await gateway.disburse(refused), {
    kind: 'failed', payoutRefusal: 'ACCOUNT_NAME_MISMATCH', reason: `ACCOUNT_NAME_MISMATCH: the bank names the holder ${banks}, not Rizky Pratama`,
  });
  t.match(value(await gateway.queryDisbursement(refused.reference)), { status: 'NOT_FOUND' }, 'nothing was sent');
  t.match(value(await gateway.disburse(payout('2718288888', { acceptNameMismatch: true }))), { vendorDisbursementId: /^dsb_/ }, 'accept_name_mismatch pays it');
  t.match(value(await gateway.disburse(payout('2718288888', { accountName: `Bpk. ${banks.toLowerCase()}` }))), { vendorDisbursementId: /^dsb_/ }, 'the bank\'s name, titles and case aside');
  t.match(value(await gateway.disburse(payout('2718281828'))), { vendorDisbursementId: /^dsb_/ }, 'a made-up name on any other number is confirmed');
  t.match(value(await gateway.disburse(payout('2718289999'))), { vendorDisbursementId: /^dsb_/ }, 'no holder to compare: the transfer decides (it fails INVALID_ACCOUNT)');
});

t.test('pure transforms and classification', async (t) => {
  t.match(classifyTransportError({ code: 'ECONNREFUSED' }), { kind: 'failed' });
  t.match(classifyTransportError({ code: 'ENOTFOUND' }), { kind: 'failed' });
  t.match(classifyTransportError({ code: 'ETIMEDOUT', timings: {} }), { kind: 'failed' }, 'timed out before connecting');
  t.match(classifyTransportError({ code: 'ETIMEDOUT', timings: { connect: 1 } }), { kind: 'unknown' });
  t.match(classifyTransportError({ code: 'ECONNRESET' }), { kind: 'unknown' });
  t.match(classifyTransportError({}), { kind: 'unknown' });

  for (const theirs of ['REFUND_PENDING', '__proto__', 'constructor', '']) {
    t.equal(toQrisStatus(theirs), 'PENDING', `QR ${theirs}`);
    t.equal(toDisbursementStatus(theirs), 'PROCESSING', `disbursement ${theirs}`);
    t.equal(toRefundStatus(theirs), 'PENDING', `refund ${theirs}`);
  }
  const qr = { id: 'qr_1', reference: 'ORD-1', status: 'PAID', qris_string: '000201', paid_at: '2026-11-22T00:00:00Z', rrn: '1' };
  t.equal(fromQrisStatus(qr, 'ORD-2'), null, "another order's answer");
  t.equal(fromQrisStatus({ ...qr, paid_at: null }, 'ORD-1'), null, 'PAID without paid_at');
  t.equal(fromQrisStatus(qr, 'ORD-1'), null, 'a corrupt QRIS');
  t.equal(toCallbackEvent({ event_id: 'e', type: 'disbursement.updated', reference: 'D', id: 'd', status: 'PROCESSING' }), null);
  t.equal(toCallbackEvent({ event_id: 'e', type: 'qris.refunded', reference: 'D' }), null);
});

t.test('registry', async (t) => {
  const g: Gateway = gatewayFor(sim.vendor());
  t.match(value(await g.queryQris('ORD-NOPE')), { status: 'NOT_FOUND' });
  t.throws(() => gatewayFor({ ...sim.vendor(), kind: 'paypal' }), /no adapter for kind paypal/);
  t.throws(() => gatewayFor({ ...sim.vendor(), credentials: {} }), /secret is required/);
  // Built once per configuration (the vendor worker asks per job); a changed one is built anew.
  t.equal(gatewayFor({ ...sim.vendor() }), g, 'the same configuration: the adapter built before');
  t.not(gatewayFor(sim.vendor(), { timeoutMs: 1234 }), g, 'another timeout: another adapter');
  const rotated = gatewayFor({ ...sim.vendor(), credentials: { ...sim.vendor().credentials, secret: 'not-the-secret' } });
  t.not(rotated, g, 'another secret: another adapter');
  t.match(await rotated.queryQris('ORD-NOPE'), { kind: 'failed', reason: /401/ }, 'which signs with the new secret');
  t.match(value(await gatewayFor(sim.vendor()).queryQris('ORD-NOPE')), { status: 'NOT_FOUND' }, 'and the first still with its own');
});

t.test('the simulator as its own process', async (t) => {
  const proc = await startSimulatorProcess({ SIMULATOR_CODE: 'sim-b', SIMULATOR_SECRET: 'child-process-secret', SIMULATOR_DISBURSE_DELAY_MS: '60000' });
  t.teardown(() => proc.stop());
  t.same(await (await fetch(`${proc.url}/healthz`)).json(), { status: 'ok', code: 'sim-b' });

  const child = createSimulatorGateway(proc.vendor(), { timeoutMs: 2000 });
  const input = qrisInput();
  t.equal(validateVendorQris(value(await child.createQris(input)).qrisString, input.amount), null);
  t.match(value(await gateway.queryQris(input.reference)), { status: 'NOT_FOUND' }, 'instances keep separate state');
  t.match(await createSimulatorGateway(simulatorVendor(proc.url, sim.secret)).queryQris(input.reference), { kind: 'failed', reason: /401/ }, 'its own secret');

  const reference = newRef('DSB');
  value(await child.disburse({ reference, channel: 'EWALLET', bankCode: null, ewalletCode: 'DANA', accountNumber: '081234567890', accountName: null, amount: 10_000, callbackUrl: 'http://127.0.0.1:9/unused' }));
  t.match(value(await child.queryDisbursement(reference)), { status: 'PROCESSING', failureReason: null });

  const inquiry = { channel: 'BANK' as const, bankCode: 'BRI', ewalletCode: null, accountNumber: '0099887766' };
  t.same(value(await child.inquireAccount(inquiry)), value(await gateway.inquireAccount(inquiry)), 'names agree across instances');

  // A request held by a timeout fault must not block shutdown.
  await setFaults(proc.url, { op: 'queryQris', mode: 'timeout', count: 1 });
  const held = createSimulatorGateway(proc.vendor(), { timeoutMs: 30_000 }).queryQris(input.reference);
  await until(async () => ((await (await fetch(`${proc.url}/admin/faults`)).json()) as { rules: unknown[] }).rules.length === 0, 'the held request to arrive');
  const started = Date.now();
  const exit = await proc.stop();
  t.same(exit, { code: 0, signal: null }, 'clean exit on SIGTERM');
  t.ok(Date.now() - started < 2500, 'stopped promptly');
  t.match(await held, { kind: 'unknown' }, 'the held request ends without an answer');
  t.same(proc.stdoutLines, [`simulator listening on ${proc.url}`], 'stdout holds only the listening line');
});
