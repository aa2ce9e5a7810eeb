// Kasir's Midtrans adapter against the simulator's Midtrans and Iris dialects, both real, over
// HTTP: every outcome of every operation (ok, 4xx, 429, 5xx, timeout, garbled), the unknown-
// outcome rules, and the dialects' own signed notifications fed to parseCallback.
import t from 'tap';
import type { CreateQrisInput, DisburseInput, Outcome } from '../../gateways/gateway.ts';
import { createMidtransGateway } from '../../gateways/midtrans/connector.ts';
import { approverOtp } from '../../gateways/midtrans/client.ts';
import { validateVendorQris } from '../../gateways/qris.ts';
import { accountHolder } from '../../gateways/simulator/magic.ts';
import { midtransAdmin, midtransVendor, startMidtransSimulatorInProcess } from '../helpers/midtrans.ts';
import { clearFaults, setFaults, simulatePay, startCallbackReceiver, type CallbackReceiver } from '../helpers/simulator.ts';

const sim = await startMidtransSimulatorInProcess();
t.teardown(() => sim.stop());
const admin = midtransAdmin(sim.url);
const vendor = midtransVendor(sim.url);
const gateway = createMidtransGateway(vendor, { timeoutMs: 1500 });
const receiver: CallbackReceiver = await startCallbackReceiver();
t.teardown(() => receiver.close());
await admin.setIrisNotifyUrl(receiver.url);

t.beforeEach(() => clearFaults(sim.url));

let seq = 0;
const newRef = (prefix = 'ORD') => `${prefix}-${Date.now() % 1e9}-${++seq}`;

const qrisInput = (overrides: Partial<CreateQrisInput> = {}): CreateQrisInput => ({
  reference: newRef(),
  amount: 10_000 + seq,
  expiresAt: new Date(Date.now() + 15 * 60_000),
  merchantName: 'Toko Kopi Nusantara',
  merchantCity: 'Bandung',
  callbackUrl: receiver.url,
  ...overrides,
});

/** A payout to the holder the bank names for the number (the simulator's), unless overridden. */
const payout = (overrides: Partial<DisburseInput> = {}): DisburseInput => ({
  reference: newRef('DSB'),
  channel: 'BANK',
  bankCode: 'BCA',
  ewalletCode: null,
  accountNumber: '1234567890',
  accountName: accountHolder(overrides.accountNumber ?? '1234567890'),
  amount: 50_000,
  callbackUrl: 'http://127.0.0.1:9/unused',
  ...overrides,
});

function value<T>(outcome: Outcome<T>): T {
  if (outcome.kind !== 'ok') throw new Error(`expected ok, got ${outcome.kind}: ${outcome.reason}`);
  return outcome.value;
}

async function until<T>(check: () => Promise<T | undefined> | T | undefined, what: string, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const result = await check();
    if (result !== undefined) return result;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** The notification the dialect sent for `key` with `status` (payments by order_id, Iris by reference_no). */
const notification = (key: string, status: string) =>
  until(() => receiver.received.find((r) => (r.json?.order_id === key || r.json?.reference_no === key) && r.json?.[r.json?.order_id ? 'transaction_status' : 'status'] === status), `${key} ${status} notification`);

t.test('QRIS: charge, status, payment notification, refunds', async (t) => {
  const input = qrisInput();
  const created = value(await gateway.createQris(input));
  t.equal(validateVendorQris(created.qrisString, input.amount), null, 'a QR payers can pay, for the amount');
  t.match(created.vendorOrderId, /^[0-9a-f-]{36}$/, "Midtrans's transaction_id");
  t.match(value(await gateway.queryQris(input.reference)), { status: 'PENDING', vendorOrderId: created.vendorOrderId });

  const pending = await notification(input.reference, 'pending');
  t.match(await gateway.parseCallback(pending.headers, pending.body, ''), { type: 'noted', reference: input.reference, eventId: `midtrans:${created.vendorOrderId}:pending` }, 'pending: noted, nothing to act on');

  t.equal((await simulatePay(sim.url, { reference: input.reference })).status, 200);
  const settled = await notification(input.reference, 'settlement');
  const event = await gateway.parseCallback(settled.headers, settled.body, '');
  t.match(event, { type: 'qris.paid', reference: input.reference, vendorOrderId: created.vendorOrderId, amount: input.amount, eventId: `midtrans:${created.vendorOrderId}:settlement` });
  t.match(value(await gateway.queryQris(input.reference)), { status: 'PAID' });

  const refundReference = newRef('RFD');
  const refunded = value(await gateway.refund({ reference: input.reference, vendorOrderId: created.vendorOrderId, refundReference, amount: 4_000 }));
  t.equal(refunded.status, 'SUCCEEDED');
  const inFlight = await gateway.refund({ reference: input.reference, vendorOrderId: created.vendorOrderId, refundReference, amount: 4_000 });
  t.match(inFlight, { kind: 'unknown', unresolvable: true, reason: /406/ }, 'a re-send while the refund is in flight: Midtrans answers 406, never failed');
  const refundNote = await notification(input.reference, 'partial_refund');
  const again = value(await gateway.refund({ reference: input.reference, vendorOrderId: created.vendorOrderId, refundReference, amount: 4_000 }));
  t.same(again, refunded, 'once done (notified, listed), the same refund_key is the same refund');
  t.match(await gateway.parseCallback(refundNote.headers, refundNote.body, ''), { type: 'refund.updated', reference: refundReference, status: 'SUCCEEDED', vendorRefundId: refunded.vendorRefundId });
  const tooMuch = await gateway.refund({ reference: input.reference, vendorOrderId: created.vendorOrderId, refundReference: newRef('RFD'), amount: input.amount });
  t.match(tooMuch, { kind: 'failed', reason: /412/ }, 'more than is left: a definite refusal');
  t.match(value(await gateway.queryQris(input.reference)), { status: 'PAID' }, 'partially refunded is still paid');
});

t.test('QRIS outcomes', async (t) => {
  t.test('a repeated order_id (406): the status has no QR to show, so the attempt fails', async (t) => {
    const input = qrisInput();
    value(await gateway.createQris(input));
    t.match(await gateway.createQris(input), { kind: 'failed', reason: /406/ });
  });
  t.test('4xx and 429 are failed; 5xx, timeout and a garbled body are unknown', async (t) => {
    await setFaults(sim.url, { op: 'createQris', mode: 'reject', status: 400, count: 1 });
    t.match(await gateway.createQris(qrisInput()), { kind: 'failed' });
    await setFaults(sim.url, { op: 'createQris', mode: 'reject', status: 429, count: 1 });
    t.match(await gateway.createQris(qrisInput()), { kind: 'failed', reason: /rate limited/ });
    await setFaults(sim.url, { op: 'createQris', mode: 'error', status: 503, count: 1 });
    const five = qrisInput();
    t.match(await gateway.createQris(five), { kind: 'unknown' });
    t.match(value(await gateway.queryQris(five.reference)), { status: 'NOT_FOUND' }, 'the status says it was never made');
    await setFaults(sim.url, { op: 'createQris', mode: 'timeout', count: 1 });
    const held = qrisInput();
    t.match(await gateway.createQris(held), { kind: 'unknown' });
    t.match(value(await gateway.queryQris(held.reference)), { status: 'PENDING', qrisString: null }, 'made, but its QR was never shown');
    await admin.garble(1);
    t.match(await gateway.createQris(qrisInput()), { kind: 'unknown', reason: /unreadable/ });
    await setFaults(sim.url, { op: 'createQris', mode: 'bad_qris', count: 1 });
    t.match(await gateway.createQris(qrisInput()), { kind: 'failed', reason: /unusable QRIS/ });
  });
  t.test('status: 5xx and garbled are unknown', async (t) => {
    const input = qrisInput();
    value(await gateway.createQris(input));
    await setFaults(sim.url, { op: 'queryQris', mode: 'error', count: 1 });
    t.match(await gateway.queryQris(input.reference), { kind: 'unknown' });
    await admin.garble(1);
    t.match(await gateway.queryQris(input.reference), { kind: 'unknown' });
  });
  t.test('refund: 5xx and timeout are unknown, and the re-send with the same refund_key refunds once', async (t) => {
    const input = qrisInput({ amount: 30_000 });
    const created = value(await gateway.createQris(input));
    await simulatePay(sim.url, { reference: input.reference }, { 'x-sim-fault': 'drop_callback' });
    const refundReference = newRef('RFD');
    const refund = { reference: input.reference, vendorOrderId: created.vendorOrderId, refundReference, amount: 10_000 };
    const asked = { ...refund, vendorRefundId: null, firstSentAt: new Date() };
    t.match(value(await gateway.queryRefund(asked)), { status: 'NOT_FOUND' }, 'not in the status: may be sent');
    await setFaults(sim.url, { op: 'refund', mode: 'timeout', count: 1 });
    t.match(await gateway.refund(refund), { kind: 'unknown' });
    t.match(value(await gateway.queryRefund(asked)), { status: 'SUCCEEDED', vendorRefundId: /^\d+$/ }, 'the status lists it by refund_key');
    t.match(value(await gateway.refund(refund)), { status: 'SUCCEEDED' }, 'the re-send finds the same refund');
    await setFaults(sim.url, { op: 'refund', mode: 'error', count: 1 });
    t.match(await gateway.refund({ ...refund, refundReference: newRef('RFD') }), { kind: 'unknown' });
    const status: any = await (await fetch(`${sim.url}/midtrans/v2/${input.reference}/status`, { headers: { authorization: `Basic ${Buffer.from(`${vendor.credentials.serverKey}:`).toString('base64')}` } })).json();
    t.equal(status.refunds.length, 1, 'one refund at Midtrans');
    t.equal(status.refund_amount, '10000.00');
  });
  t.test('a wrong server key is refused: failed, and check says so', async (t) => {
    const wrong = createMidtransGateway(midtransVendor(sim.url, { overrides: { serverKey: 'SB-Mid-server-wrong' } }), { timeoutMs: 1500 });
    t.match(await wrong.createQris(qrisInput()), { kind: 'failed', reason: /401/ });
    t.match(await wrong.check(), { kind: 'failed', reason: /server key refused/ });
    t.match(await gateway.check(), { kind: 'ok', value: /server key accepted.*Iris creator and approver keys accepted.*every mapped bank is listed/ });
  });
});

t.test('Iris payouts', async (t) => {
  t.test('created, approved, completed; the notification is traced back to Kasir by notes', async (t) => {
    const input = payout();
    const { vendorDisbursementId } = value(await gateway.disburse(input));
    t.match(value(await gateway.queryDisbursement(input.reference, vendorDisbursementId)), { status: /PROCESSING|SUCCESS/, vendorDisbursementId });
    const completed = await notification(vendorDisbursementId, 'completed');
    t.match(await gateway.parseCallback(completed.headers, completed.body, ''), {
      type: 'disbursement.updated',
      reference: input.reference,
      vendorDisbursementId,
      status: 'SUCCESS',
      eventId: `iris:${vendorDisbursementId}:completed`,
    });
    const approved = await notification(vendorDisbursementId, 'approved');
    t.match(await gateway.parseCallback(approved.headers, approved.body, ''), { type: 'noted', eventId: `iris:${vendorDisbursementId}:approved` }, 'approved: noted');
    t.match(value(await gateway.queryDisbursement(input.reference, vendorDisbursementId)), { status: 'SUCCESS' });
    t.match(await gateway.queryDisbursement(input.reference), { kind: 'unknown', unresolvable: true }, 'without the reference_no: never NOT_FOUND, an operator settles it');
  });
  // CONFORMANCE M-W5: midtrans-go's ApprovePayoutReq always sends otp; Iris approvers use
  // two-factor codes, and the dialect approves nothing without the approver's current one.
  t.test('approval carries the approver\'s TOTP code; a wrong secret approves nothing, the payout is rejected and failed', async (t) => {
    const wrong = createMidtransGateway(midtransVendor(sim.url, { overrides: { irisApproverTotpSecret: 'NOTTHEAPPROVERSSECRETATALL234567' } }, 'midtrans-wrong-otp'), { timeoutMs: 2000 });
    const input = payout();
    t.match(await wrong.disburse(input), { kind: 'failed', reason: /approval refused.*Invalid OTP.*rejected/ });
    const made = (await admin.irisStats()).payouts!.filter((p) => p.notes === input.reference);
    t.same(made.map((p) => p.status), ['rejected'], 'never approved');
    const none = createMidtransGateway(midtransVendor(sim.url, { overrides: { irisApproverTotpSecret: '' } }, 'midtrans-no-otp'), { timeoutMs: 2000 });
    t.match(await none.disburse(payout()), { kind: 'failed', reason: /approval refused/ }, 'no secret: an empty otp, refused');
    t.match(value(await none.check()), /no approver TOTP secret/);
    t.match(value(await gateway.disburse(payout())), { vendorDisbursementId: /./ }, 'the right secret: approved');
  });
  t.test('a payout to an account whose bank names another holder is refused for every vendor, unless accepted', async (t) => {
    const other = payout({ accountName: 'Budi Santoso' }); // Iris says NUR HIDAYAH
    t.match(await gateway.disburse(other), { kind: 'failed', payoutRefusal: 'ACCOUNT_NAME_MISMATCH', reason: /Iris names the holder NUR HIDAYAH, not Budi Santoso/ });
    t.same((await admin.irisStats()).payouts!.filter((p) => p.notes === other.reference), [], 'nothing created at Iris');
    t.match(value(await gateway.disburse({ ...other, acceptNameMismatch: true })), { vendorDisbursementId: /./ }, 'accepted: paid');
  });
  t.test('the TOTP is RFC 6238 (SHA-1, 6 digits, 30 s): its published SHA-1 vectors', async (t) => {
    // RFC 6238 Appendix B, the SHA-1 seed "12345678901234567890" (base32 below); 6-digit codes are
    // the last six digits of the RFC's 8-digit values.
    const otp = approverOtp('GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ');
    t.same([59, 1111111109, 1111111111, 1234567890, 2000000000, 20000000000].map((s) => otp(s * 1000)), ['287082', '081804', '050471', '005924', '279037', '353130']);
  });
  t.test('the bank fails it: FAILED with Iris error code', async (t) => {
    const input = payout({ accountNumber: '1234560000' });
    const { vendorDisbursementId } = value(await gateway.disburse(input));
    const failedNote = await notification(vendorDisbursementId, 'failed');
    t.match(await gateway.parseCallback(failedNote.headers, failedNote.body, ''), { type: 'disbursement.updated', reference: input.reference, status: 'FAILED', failureReason: /^002 / });
  });
  t.test('create refused (4xx, 429): failed; create 5xx, timeout or garbled: re-sent with the same X-Idempotency-Key, made once', async (t) => {
    await setFaults(sim.url, { op: 'disburse', mode: 'reject', status: 400, count: 1 });
    t.match(await gateway.disburse(payout()), { kind: 'failed' });
    await setFaults(sim.url, { op: 'disburse', mode: 'reject', status: 429, count: 1 });
    t.match(await gateway.disburse(payout()), { kind: 'failed', reason: /rate limited/ });
    const errored = payout();
    await setFaults(sim.url, { op: 'disburse', mode: 'error', count: 1 });
    t.match(await gateway.disburse(errored), { kind: 'ok' }, '5xx (nothing made): the re-send makes it');
    const held = payout();
    await setFaults(sim.url, { op: 'disburse', mode: 'timeout', count: 1 });
    t.match(await gateway.disburse(held), { kind: 'ok' }, 'made, answer lost: the same key answers the first result');
    const garbled = payout();
    // The account validation first (unreadable: the given name stands), then the create.
    await admin.irisGarble(2);
    t.match(await gateway.disburse(garbled), { kind: 'ok' });
    await setFaults(sim.url, { op: 'disburse', mode: 'error', count: 2 });
    t.match(await gateway.disburse(payout()), { kind: 'unknown', unresolvable: true }, 'no readable answer twice: an operator, never the next vendor');
    const payouts = (await admin.irisStats()).payouts!;
    for (const input of [errored, held, garbled]) t.equal(payouts.filter((p) => p.notes === input.reference).length, 1, `${input.reference} made once`);
  });
  t.test('approval 5xx (not approved): the payout is read, rejected, failed', async (t) => {
    const input = payout();
    await admin.approveFault('error');
    t.match(await gateway.disburse(input), { kind: 'failed', reason: /rejected/ });
    t.match((await admin.irisStats()).payouts!.find((p) => p.notes === input.reference), { status: 'rejected' });
  });
  t.test('approval refused (4xx): rejected, failed', async (t) => {
    const input = payout();
    await admin.approveFault('reject');
    t.match(await gateway.disburse(input), { kind: 'failed', reason: /refused.*rejected/ });
  });
  t.test('approval times out (approved): the read says so, ok', async (t) => {
    const input = payout();
    await admin.approveFault('timeout');
    const { vendorDisbursementId } = value(await gateway.disburse(input));
    t.match((await admin.irisStats()).payouts!.find((p) => p.reference_no === vendorDisbursementId), { notes: input.reference, status: /approved|completed/ });
  });
  t.test('unmapped bank, e-wallet, no Iris keys: failed before anything is sent', async (t) => {
    const before = (await admin.irisStats()).calls['POST /api/v1/payouts'] ?? 0;
    t.match(await gateway.disburse(payout({ bankCode: 'JAGO' })), { kind: 'failed', reason: /no Iris code/ });
    t.match(await gateway.disburse(payout({ channel: 'EWALLET', bankCode: null, ewalletCode: 'DANA' })), { kind: 'failed', reason: /e-wallet/ });
    const bare = createMidtransGateway(midtransVendor(sim.url, { iris: false }));
    t.match(await bare.disburse(payout()), { kind: 'failed', reason: /no Iris keys/ });
    t.match(await bare.inquireAccount({ channel: 'BANK', bankCode: 'BCA', ewalletCode: null, accountNumber: '1234567890' }), { kind: 'failed', reason: /no Iris keys/ });
    t.match(await bare.check(), { kind: 'ok', value: /no Iris keys/ });
    t.equal((await admin.irisStats()).calls['POST /api/v1/payouts'] ?? 0, before, 'nothing sent');
  });
  t.test('account validation: found, no such account, 5xx, garbled', async (t) => {
    t.match(value(await gateway.inquireAccount({ channel: 'BANK', bankCode: 'MANDIRI', ewalletCode: null, accountNumber: '1380011819286' })), { status: 'FOUND', accountName: /\w+ \w+/ });
    t.match(value(await gateway.inquireAccount({ channel: 'BANK', bankCode: 'BCA', ewalletCode: null, accountNumber: '1234569999' })), { status: 'NOT_FOUND', reason: /INVALID_ACCOUNT/ });
    await setFaults(sim.url, { op: 'inquireAccount', mode: 'error', count: 1 });
    t.match(await gateway.inquireAccount({ channel: 'BANK', bankCode: 'BCA', ewalletCode: null, accountNumber: '1234567890' }), { kind: 'unknown' });
    await admin.irisGarble(1);
    t.match(await gateway.inquireAccount({ channel: 'BANK', bankCode: 'BCA', ewalletCode: null, accountNumber: '1234567890' }), { kind: 'unknown' });
  });
  t.test('a payout without a name is validated first, and refused when Iris knows no such account', async (t) => {
    const { vendorDisbursementId } = value(await gateway.disburse(payout({ accountName: null })));
    t.ok(vendorDisbursementId);
    t.match(await gateway.disburse(payout({ accountName: null, accountNumber: '1234569999' })), { kind: 'failed', reason: /INVALID_ACCOUNT/ });
  });
});
