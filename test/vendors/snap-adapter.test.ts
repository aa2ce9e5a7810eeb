// Kasir's SNAP adapter against the simulator's SNAP dialect, both real, over HTTP: every outcome
// of every operation, the token under concurrency and after expiry, and what the dialect itself
// refuses (checked with requests signed here, independently of both implementations).
import { createHash, createHmac, sign } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type AddressInfo } from 'node:net';
import { createServer as createHttpServer, type IncomingHttpHeaders } from 'node:http';
import t from 'tap';
import type { CreateQrisInput, Gateway, Outcome } from '../../gateways/gateway.ts';
import { parseQris, validateVendorQris } from '../../gateways/qris.ts';
import { gatewayFor } from '../../gateways/registry.ts';
import { createSnapGateway } from '../../gateways/snap/connector.ts';
import { accountHolder } from '../../gateways/simulator/magic.ts';
import { clearFaults, setFaults, simulatePay, startCallbackReceiver } from '../helpers/simulator.ts';
import { SNAP_ACCOUNT, snapAdmin, snapKeys, snapVendor, startSnapSimulatorInProcess } from '../helpers/snap.ts';

const sim = await startSnapSimulatorInProcess();
t.teardown(() => sim.stop());
const admin = snapAdmin(sim.url);
const vendor = snapVendor(sim.url);
const gateway = createSnapGateway(vendor, { timeoutMs: 2000 });

let seq = 0;
const newRef = (prefix = 'ORD') => `${prefix}-${Date.now() % 1e9}-${++seq}`;

function qrisInput(overrides: Partial<CreateQrisInput> = {}): CreateQrisInput {
  return {
    reference: newRef(),
    amount: 10_000 + seq,
    expiresAt: new Date(Date.now() + 15 * 60_000),
    merchantName: 'Toko Kopi Nusantara',
    merchantCity: 'Bandung',
    callbackUrl: 'http://127.0.0.1:9/unused',
    ...overrides,
  };
}

function value<T>(outcome: Outcome<T>): T {
  if (outcome.kind !== 'ok') throw new Error(`expected ok, got ${outcome.kind}: ${outcome.reason}`);
  return outcome.value;
}

async function until<T>(check: () => Promise<T | undefined>, what: string, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const result = await check();
    if (result !== undefined) return result;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function closedPortUrl(): Promise<string> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return `http://127.0.0.1:${port}`;
}

const jakartaNow = () => `${new Date(Date.now() + 7 * 3600_000).toISOString().slice(0, 19)}+07:00`;

/** A token and a signed service request built here with node:crypto, as any SNAP client would. */
async function rawToken(): Promise<string> {
  const ts = jakartaNow();
  const res = await fetch(`${sim.url}/snap/v1.0/access-token/b2b`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-timestamp': ts, 'x-client-key': SNAP_ACCOUNT.clientKey, 'x-signature': sign('sha256', Buffer.from(`${SNAP_ACCOUNT.clientKey}|${ts}`), snapKeys().kasirPrivatePem).toString('base64') },
    body: '{"grantType":"client_credentials"}',
  });
  return ((await res.json()) as { accessToken: string }).accessToken;
}

async function rawCall(path: string, body: object, token: string, headers: Record<string, string | undefined> = {}) {
  const ts = jakartaNow();
  const raw = JSON.stringify(body);
  const full = `/snap${path}`;
  const signature = createHmac('sha512', SNAP_ACCOUNT.clientSecret).update(`POST:${full}:${token}:${createHash('sha256').update(raw).digest('hex')}:${ts}`).digest('base64');
  const all: Record<string, string | undefined> = {
    'content-type': 'application/json',
    authorization: `Bearer ${token}`,
    'x-timestamp': ts,
    'x-signature': signature,
    'x-partner-id': SNAP_ACCOUNT.partnerId,
    'x-external-id': String(Date.now()) + String(++seq).padStart(6, '0'),
    'channel-id': SNAP_ACCOUNT.channelId,
    ...headers,
  };
  const res = await fetch(sim.url + full, { method: 'POST', body: raw, headers: Object.fromEntries(Object.entries(all).filter(([, v]) => v !== undefined)) as Record<string, string> });
  return { status: res.status, body: (await res.json()) as { responseCode: string; responseMessage: string } };
}

t.beforeEach(() => clearFaults(sim.url));

t.test('check fetches a token: OK, a key the provider does not know, nobody listening', async (t) => {
  t.match(await gateway.check(), { kind: 'ok', value: /access token issued/ });
  const { privateKey } = await import('node:crypto').then((c) => c.generateKeyPairSync('rsa', { modulusLength: 2048 }));
  const stranger = createSnapGateway(snapVendor(sim.url, { privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() }, 'snap-stranger'));
  t.match(await stranger.check(), { kind: 'failed', reason: /access token refused: HTTP 401 4017300/ });
  t.match(await stranger.queryQris('ORD-1', 'A1NOPE'), { kind: 'failed', reason: /no access token/ }, 'no token: nothing was sent, a definite failure');
  const nowhere = createSnapGateway({ ...snapVendor(await closedPortUrl(), {}, 'snap-nowhere') });
  t.match(await nowhere.check(), { kind: 'failed', reason: /ECONNREFUSED/ });
  t.match(await gatewayFor(vendor).check(), { kind: 'ok' }, 'the registry builds the SNAP adapter');
});

t.test('QRIS MPM: generate, query PENDING, pay, query PAID; the same reference again is resolved by a query', async (t) => {
  const input = qrisInput();
  const created = value(await gateway.createQris(input));
  t.equal(validateVendorQris(created.qrisString, input.amount), null);
  t.match(parseQris(created.qrisString), { ok: true, billNumber: input.reference });
  t.match(created.vendorOrderId, /^A1\d{8}[0-9A-F]{16}$/);
  t.match(value(await gateway.queryQris(input.reference, created.vendorOrderId)), { status: 'PENDING', vendorOrderId: created.vendorOrderId, paidAt: null });

  // Same operation, same reference, same day: the same X-EXTERNAL-ID, which the provider refuses
  // as already received (409). Kasir has no QR to show for it: failed, another vendor may serve.
  const again = await gateway.createQris(input);
  t.match(again, { kind: 'failed', reason: /409\d{2}00 Conflict.*holds .*never received or showed/ });

  const paid = await simulatePay(sim.url, { reference: input.reference });
  t.equal(paid.status, 200);
  const status = value(await gateway.queryQris(input.reference, created.vendorOrderId));
  t.match(status, { status: 'PAID', vendorOrderId: created.vendorOrderId, rrn: paid.body.rrn });
  t.ok(Math.abs(status.paidAt!.getTime() - Date.parse(paid.body.paid_at)) < 1000, 'paidTime read back (second precision)');

  t.match(value(await gateway.queryQris('ORD-NEVER-MADE', 'A1NOSUCHQR')), { status: 'NOT_FOUND', vendorOrderId: null }, '404xx01 is a real answer');
  t.match(value(await gateway.queryQris('ORD-NEVER-MADE')), { status: 'NOT_FOUND' }, "without the provider's id Kasir never showed a QR: not found, without asking");
  const expired = qrisInput({ expiresAt: new Date(Date.now() - 1000) });
  const expiredQr = value(await gateway.createQris(expired));
  t.match(value(await gateway.queryQris(expired.reference, expiredQr.vendorOrderId)), { status: 'EXPIRED' });
});

t.test('generate: refusals fail, 5xx and timeouts are unknown, a corrupt QR fails', async (t) => {
  t.match(await gateway.createQris(qrisInput({ reference: 'R'.repeat(26) })), { kind: 'failed', reason: /HTTP 400 4004701 Invalid Field Format partnerReferenceNo/ });
  const wrongMerchant = createSnapGateway(snapVendor(sim.url, { merchantId: 'SOMEONE-ELSE' }, 'snap-other-merchant'));
  t.match(await wrongMerchant.createQris(qrisInput()), { kind: 'failed', reason: /4044708 Invalid Merchant/ });

  await setFaults(sim.url, { op: 'createQris', mode: 'error', count: 1 });
  const erred = qrisInput();
  t.match(await gateway.createQris(erred), { kind: 'unknown', reason: /HTTP 500 5004701/ });
  t.match(value(await gateway.queryQris(erred.reference)), { status: 'NOT_FOUND' }, 'no id, no QR shown: not found');

  await setFaults(sim.url, { op: 'createQris', mode: 'error', status: 504, count: 1 });
  t.match(await gateway.createQris(qrisInput()), { kind: 'unknown', reason: /5044700 Timeout/ });

  await setFaults(sim.url, { op: 'createQris', mode: 'reject', status: 403, count: 1 });
  t.match(await gateway.createQris(qrisInput()), { kind: 'failed', reason: /HTTP 403 4034700/ });

  await setFaults(sim.url, { op: 'createQris', mode: 'timeout', count: 1 });
  const quick = createSnapGateway(vendor, { timeoutMs: 500 });
  const timedOut = qrisInput();
  t.match(await quick.createQris(timedOut), { kind: 'unknown', reason: /no answer \(ETIMEDOUT\)/ });
  t.match(value(await gateway.queryQris(timedOut.reference)), { status: 'NOT_FOUND' }, 'the timed-out generate did the work, but its QR was never shown: not found');

  await setFaults(sim.url, { op: 'createQris', mode: 'bad_qris', count: 1 });
  t.match(await gateway.createQris(qrisInput()), { kind: 'failed', reason: /unusable QRIS/ });
});

t.test('query: the configured serviceCode is what the provider checks; 5xx is unknown', async (t) => {
  const input = qrisInput();
  const created = value(await gateway.createQris(input));
  const sends51 = createSnapGateway(snapVendor(sim.url, { qrQueryServiceCode: '51' }, 'snap-51'));
  t.match(await sends51.queryQris(input.reference, created.vendorOrderId), { kind: 'failed', reason: /4005101 Invalid Field Format serviceCode/ });
  await setFaults(sim.url, { op: 'queryQris', mode: 'error', status: 503, count: 1 });
  t.match(await gateway.queryQris(input.reference, created.vendorOrderId), { kind: 'unknown', reason: /HTTP 503/ });
});

t.test('refund: full and partial, a repeat resolved from the payment query, refusals', async (t) => {
  const input = qrisInput({ amount: 100_000 });
  const created = value(await gateway.createQris(input));
  const unpaid = await gateway.refund({ reference: input.reference, vendorOrderId: created.vendorOrderId, refundReference: newRef('RFD'), amount: 1000 });
  t.match(unpaid, { kind: 'failed', reason: /4047800 Invalid Transaction Status/ });
  await simulatePay(sim.url, { reference: input.reference });

  const first = { reference: input.reference, vendorOrderId: created.vendorOrderId, refundReference: newRef('RFD'), amount: 40_000 };
  t.match(value(await gateway.refund(first)), { status: 'SUCCEEDED', vendorRefundId: /^R[0-9A-F]{16}$/ });
  // Re-sent: 409; the standard's query lists no refunds, and this one was not all of the payment.
  t.match(await gateway.refund(first), { kind: 'unknown', reason: /does not say what became/ });
  t.match(await gateway.queryRefund({ ...first, vendorRefundId: null, firstSentAt: new Date() }), { kind: 'unknown', unresolvable: true }, 'no read can settle a partial refund');
  t.match(await gateway.refund({ ...first, refundReference: newRef('RFD'), amount: 60_001 }), { kind: 'failed', reason: /4047813 Invalid Amount/ });
  const rest = { ...first, refundReference: newRef('RFD'), amount: 60_000 };
  t.match(value(await gateway.refund(rest)), { status: 'SUCCEEDED' });
  t.match(value(await gateway.queryQris(input.reference, created.vendorOrderId)), { status: 'PAID' }, 'a refunded QR (04) was paid');
  t.match(await gateway.refund({ ...first, refundReference: newRef('RFD'), vendorOrderId: 'A1NOTTHEONE' }), { kind: 'failed', reason: /4047801 Transaction Not Found/ });
});

t.test('account inquiry: a name, no such account, e-wallets and unknown banks refused before sending', async (t) => {
  t.match(value(await gateway.inquireAccount({ channel: 'BANK', bankCode: 'bca', ewalletCode: null, accountNumber: '1234567890' })), { status: 'FOUND', accountName: /^[A-Z ]+$/ });
  t.same(value(await gateway.inquireAccount({ channel: 'BANK', bankCode: 'BCA', ewalletCode: null, accountNumber: '1234569999' })), { status: 'NOT_FOUND', reason: 'INVALID_ACCOUNT' });
  t.match(await gateway.inquireAccount({ channel: 'EWALLET', bankCode: null, ewalletCode: 'OVO', accountNumber: '081234567890' }), { kind: 'failed', reason: /not offered/ });
  t.match(await gateway.inquireAccount({ channel: 'BANK', bankCode: 'NOSUCHBANK', ewalletCode: null, accountNumber: '1234567890' }), { kind: 'failed', reason: /no BI code/ });
  await setFaults(sim.url, { op: 'inquireAccount', mode: 'error', count: 1 });
  t.match(await gateway.inquireAccount({ channel: 'BANK', bankCode: 'BCA', ewalletCode: null, accountNumber: '1234567890' }), { kind: 'unknown' });
});

const bankPayout = (accountNumber: string, amount = 50_000) => ({
  reference: newRef('DSB'),
  channel: 'BANK' as const,
  bankCode: 'MANDIRI',
  ewalletCode: null,
  accountNumber,
  accountName: accountHolder(accountNumber) ?? 'Nobody',
  amount,
  callbackUrl: 'http://127.0.0.1:9/unused',
});

t.test('transfer: inquiry then transfer, status PROCESSING then SUCCESS or FAILED; a repeat is resolved by the status', async (t) => {
  const ok = bankPayout('1234567890');
  const sent = value(await gateway.disburse(ok));
  t.match(sent.vendorDisbursementId, /^T[0-9A-F]{16}$/);
  t.match(value(await gateway.queryDisbursement(ok.reference)), { status: 'PROCESSING', vendorDisbursementId: sent.vendorDisbursementId });
  await until(async () => ((await gateway.queryDisbursement(ok.reference)).kind === 'ok' && value(await gateway.queryDisbursement(ok.reference)).status === 'SUCCESS' ? true : undefined), 'SUCCESS');
  t.same(value(await gateway.disburse(ok)), sent, 'sent again: 409, resolved by the status inquiry, never a second transfer');

  const closed = bankPayout('1234560000');
  value(await gateway.disburse(closed));
  const failed = await until(async () => {
    const s = value(await gateway.queryDisbursement(closed.reference));
    return s.status === 'FAILED' ? s : undefined;
  }, 'FAILED');
  t.match(failed, { status: 'FAILED', failureReason: '06 ACCOUNT_CLOSED' });

  t.match(await gateway.disburse(bankPayout('1234569999')), { kind: 'failed', reason: /account inquiry: INVALID_ACCOUNT/ }, 'the inquiry refuses: no transfer is sent');
  t.match(value(await gateway.queryDisbursement('DSB-NEVER')), { status: 'NOT_FOUND' });
  t.match(await gateway.disburse({ ...bankPayout('1234567890'), channel: 'EWALLET', bankCode: null, ewalletCode: 'DANA' }), { kind: 'failed', reason: 'e-wallet payouts are not offered by this SNAP provider' });
  t.match(await gateway.disburse({ ...bankPayout('1234567890'), bankCode: 'NOSUCHBANK' }), { kind: 'failed', reason: /no BI code/ });
});

// Issue 29 finding 7: at Midtrans the inquiry and the transfer take the 7-digit bank code and
// the transfer a sourceAccountNo; without them both are refused and the payout goes elsewhere.
t.test('transfer and inquiry: the 7-digit bank code and sourceAccountNo the provider needs; without them, refused', async (t) => {
  const bare = createSnapGateway(snapVendor(sim.url, { bankBranchCode: '', sourceAccountNo: '' }, 'snap-3-digit'));
  t.match(await bare.inquireAccount({ channel: 'BANK', bankCode: 'BCA', ewalletCode: null, accountNumber: '1234567890' }), { kind: 'failed', reason: /4001601 Invalid Field Format beneficiaryBankCode/ });
  t.match(await bare.disburse(bankPayout('1234567890')), { kind: 'failed', reason: /account inquiry before the transfer/ }, 'refused before any transfer: failed, the next vendor may pay');
  const noSource = createSnapGateway(snapVendor(sim.url, { sourceAccountNo: '' }, 'snap-no-source'));
  t.match(await noSource.disburse(bankPayout('1234567890')), { kind: 'failed', reason: /4001802 Invalid Mandatory Field sourceAccountNo/ });
  const input = bankPayout('1234567890');
  value(await gateway.disburse(input));
  const status = value(await gateway.queryDisbursement(input.reference));
  t.match(status, { status: /PROCESSING|SUCCESS/ }, 'with both: sent');
});

t.test('a transfer to an account whose bank names another holder is refused for every vendor, unless accepted', async (t) => {
  const other = { ...bankPayout('1234567890'), accountName: 'Budi Santoso' }; // the bank says NUR HIDAYAH
  t.match(await gateway.disburse(other), { kind: 'failed', payoutRefusal: 'ACCOUNT_NAME_MISMATCH', reason: /names the holder NUR HIDAYAH, not Budi Santoso/ });
  t.match(await gateway.disburse({ ...other, accountName: 'Bpk. Nur Hidayah, S.Kom.' }), { kind: 'ok' }, 'titles, case and punctuation are not another holder');
  t.match(await gateway.disburse({ ...other, reference: newRef('DSB'), acceptNameMismatch: true }), { kind: 'ok' }, 'accepted: sent');
});

t.test('transfer: 5xx does no work and is unknown; the status says NOT_FOUND; a timeout did the work', async (t) => {
  await setFaults(sim.url, { op: 'disburse', mode: 'error', count: 1 });
  const erred = bankPayout('1234567890');
  t.match(await gateway.disburse(erred), { kind: 'unknown', reason: /5001801/ });
  t.match(value(await gateway.queryDisbursement(erred.reference)), { status: 'NOT_FOUND' });
  t.match(await gateway.disburse(erred), { kind: 'ok' }, 're-sent after NOT_FOUND: the error took no X-EXTERNAL-ID, so it goes through');

  await setFaults(sim.url, { op: 'disburse', mode: 'timeout', count: 1 });
  const held = bankPayout('1234567890');
  t.match(await createSnapGateway(vendor, { timeoutMs: 500 }).disburse(held), { kind: 'unknown', reason: /ETIMEDOUT/ });
  t.match(value(await gateway.queryDisbursement(held.reference)), { status: /PROCESSING|SUCCESS/ });

  await setFaults(sim.url, { op: 'inquireAccount', mode: 'error', count: 1 });
  t.match(await gateway.disburse(bankPayout('1234567890')), { kind: 'failed', reason: /account inquiry before the transfer/ }, 'no inquiry answer: no transfer sent, safe to fail over');

  await setFaults(sim.url, { op: 'queryDisbursement', mode: 'error', count: 1 });
  t.match(await gateway.queryDisbursement(held.reference), { kind: 'unknown' });
});

t.test('one token for concurrent calls; expired mid-run, one refresh for all of them', async (t) => {
  const code = 'snap-concurrent';
  const fresh = () => createSnapGateway(snapVendor(sim.url, {}, code), { timeoutMs: 5000 });
  const before = (await admin.stats()).token_requests;
  const refs = Array.from({ length: 30 }, () => newRef());
  const first = await Promise.all(refs.map((ref) => fresh().queryQris(ref, `A1${ref}`)));
  t.ok(first.every((o) => o.kind === 'ok'), 'every call answered');
  t.equal((await admin.stats()).token_requests - before, 1, 'thirty concurrent calls, adapters built per call: one token request');

  t.ok((await admin.expireTokens()) >= 1, 'the provider expires every token');
  const second = await Promise.all(refs.map((ref) => fresh().queryQris(ref, `A1${ref}`)));
  t.ok(second.every((o) => o.kind === 'ok'), 'each call refused with 401 once and sent again');
  t.equal((await admin.stats()).token_requests - before, 2, 'one refresh for all thirty');
});

t.test('a token is renewed before it expires', async (t) => {
  const shortLived = await startSnapSimulatorInProcess({ SIMULATOR_SNAP_TOKEN_SECONDS: '2' });
  t.teardown(() => shortLived.stop());
  const g = createSnapGateway(snapVendor(shortLived.url, {}, 'snap-short'));
  value(await g.queryQris('ORD-A', 'A1A'));
  await new Promise((resolve) => setTimeout(resolve, 1700));
  value(await g.queryQris('ORD-B', 'A1B'));
  const stats = await snapAdmin(shortLived.url).stats();
  t.equal(stats.token_requests, 2, 'renewed at 80% of its life');
  t.equal(stats.rejected['Invalid Token (B2B)'], undefined, 'never refused for an expired token');
});

t.test('the dialect refuses what a provider refuses', async (t) => {
  const token = await rawToken();
  const body = { originalReferenceNo: 'A1NOSUCH', originalPartnerReferenceNo: 'ORD-X', serviceCode: '47' };
  t.match(await rawCall('/v1.0/qr/qr-mpm-query', body, token), { status: 404, body: { responseCode: '4045101' } }, 'a correct request');
  t.match(await rawCall('/v1.0/qr/qr-mpm-query', { originalPartnerReferenceNo: 'ORD-X', serviceCode: '47' }, token), { status: 400, body: { responseCode: '4005102', responseMessage: /originalReferenceNo/ } }, 'a query without originalReferenceNo, as Finpay, Qoin, PayCloud and iFortepay refuse it');
  const id = `${Date.now()}999`;
  t.equal((await rawCall('/v1.0/qr/qr-mpm-query', body, token, { 'x-external-id': id })).status, 404);
  t.match(await rawCall('/v1.0/qr/qr-mpm-query', body, token, { 'x-external-id': id }), { status: 409, body: { responseCode: '4095100', responseMessage: 'Conflict' } }, 'X-EXTERNAL-ID reused the same day');
  t.match(await rawCall('/v1.0/qr/qr-mpm-query', body, token, { 'x-external-id': 'abc-123' }), { status: 400, body: { responseCode: '4005101' } }, 'a non-numeric X-EXTERNAL-ID');
  t.match(await rawCall('/v1.0/qr/qr-mpm-query', body, token, { 'x-signature': 'AAAA' }), { status: 401, body: { responseCode: '4015100' } }, 'a wrong signature');
  t.match(await rawCall('/v1.0/qr/qr-mpm-query', body, 'not-a-token'), { status: 401, body: { responseCode: '4015101' } }, 'an unknown token');
  t.match(await rawCall('/v1.0/qr/qr-mpm-query', body, token, { 'x-partner-id': 'SOMEONE' }), { status: 401, body: { responseCode: '4015100' } }, 'another partner');
  for (const name of ['x-timestamp', 'x-partner-id', 'x-external-id', 'channel-id', 'x-signature']) {
    t.match(await rawCall('/v1.0/qr/qr-mpm-query', body, token, { [name]: undefined }), { status: 400, body: { responseCode: '4005102' } }, `missing ${name}`);
  }
  const stale = `${new Date(Date.now() - 10 * 60_000 + 7 * 3600_000).toISOString().slice(0, 19)}+07:00`;
  t.match(await rawCall('/v1.0/qr/qr-mpm-query', body, token, { 'x-timestamp': stale }), { status: 401 }, 'a timestamp 10 minutes old (the signature is over the sent one)');
  const transfer = {
    partnerReferenceNo: 'DSB-F',
    amount: { value: '100.00', currency: 'IDR' },
    beneficiaryAccountName: 'X',
    beneficiaryAccountNo: '1234567890',
    beneficiaryBankCode: '0140000',
    sourceAccountNo: '0000000000',
    transactionDate: '2026-01-01T10:00:00+07:00',
    additionalInfo: { remark: 'DSB-F' },
  };
  t.match(await rawCall('/v1.0/transfer-interbank', { ...transfer, amount: { value: '100.50', currency: 'IDR' } }, token), { status: 400, body: { responseCode: '4001801' } }, 'a fractional amount');
  // CONFORMANCE §4 rows 26 and 28: Midtrans takes a 7-digit bank code and requires sourceAccountNo.
  t.match(await rawCall('/v1.0/transfer-interbank', { ...transfer, beneficiaryBankCode: '014' }, token), { status: 400, body: { responseCode: '4001801', responseMessage: /beneficiaryBankCode/ } }, 'a 3-digit bank code');
  t.match(await rawCall('/v1.0/transfer-interbank', { ...transfer, sourceAccountNo: undefined }, token), { status: 400, body: { responseCode: '4001802', responseMessage: /sourceAccountNo/ } }, 'no sourceAccountNo');
  t.match(await rawCall('/v1.0/account-inquiry-external', { beneficiaryBankCode: '014', beneficiaryAccountNo: '1234567890' }, token), { status: 400, body: { responseCode: '4001601' } }, 'an inquiry with a 3-digit bank code');
  await admin.expireTokens();
  t.match(await rawCall('/v1.0/qr/qr-mpm-query', body, token), { status: 401, body: { responseCode: '4015101' } }, 'an expired token');
});

interface Notify {
  path: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** Stands in for Kasir's notify route: the adapter verifies, the SNAP answer goes back. */
async function notifyReceiver(t: { teardown(fn: () => unknown): void }, g: Gateway, code: string) {
  const notifies: Array<Notify & { event: unknown }> = [];
  const server = createHttpServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const body = Buffer.concat(chunks);
      const sub = (req.url ?? '').slice(`/callbacks/${code}`.length);
      const answer =
        g.answerRequest!(sub, req.headers, body) ??
          await (async () => {
              const event = await g.parseCallback(req.headers, body, sub);
              notifies.push({ path: req.url ?? '', headers: req.headers, body, event });
              return g.answerCallback!(sub, event ? 'accepted' : 'bad_signature');
            })();
      res.statusCode = answer.status;
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify(answer.body));
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.teardown(() => {
    server.closeAllConnections();
    return new Promise((resolve) => server.close(resolve));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/callbacks/${code}/v1.0/qr/qr-mpm-notify`, notifies };
}

t.test('payment notifies: RSA-signed, verified by the adapter, answered 2005200; duplicates carry one event id', async (t) => {
  const receiver = await notifyReceiver(t, gateway, 'snap');
  await admin.setNotifyUrl(receiver.url);
  const input = qrisInput({ amount: 77_000 });
  const created = value(await gateway.createQris(input));
  await simulatePay(sim.url, { reference: input.reference }, { 'x-sim-fault': 'duplicate_callback' });
  await until(async () => (receiver.notifies.length >= 2 ? true : undefined), 'two notifies');
  const [a, b] = receiver.notifies;
  // No originalPartnerReferenceNo (the dialect leaves it out, as Finpay may): the provider's id names the order.
  t.match(a.event, { type: 'qris.paid', reference: '', vendorOrderId: created.vendorOrderId, amount: 77_000, eventId: `snap:${created.vendorOrderId}:00` });
  t.same(b.event, a.event, 'the duplicate is the same event');
  t.same(b.body, a.body, 'byte for byte');
  t.not(b.headers['x-external-id'], undefined);
  t.match(a.headers['x-timestamp'], /\+07:00$/);
  t.same(gateway.answerCallback!('/v1.0/qr/qr-mpm-notify', 'accepted'), { status: 200, body: { responseCode: '2005200', responseMessage: 'Successful' } });

  await setFaults(sim.url, { op: 'callback', mode: 'drop_callback', count: 1 });
  const dropped = qrisInput();
  const droppedQr = value(await gateway.createQris(dropped));
  await simulatePay(sim.url, { reference: dropped.reference });
  t.match(value(await gateway.queryQris(dropped.reference, droppedQr.vendorOrderId)), { status: 'PAID' }, 'a dropped notify: the query still tells');
});

t.test('HMAC notifies: the dialect fetches a token from Kasir first, then signs with the client secret', async (t) => {
  const hmacSim = await startSnapSimulatorInProcess({ SIMULATOR_SNAP_NOTIFY_SIGNATURE: 'hmac' });
  t.teardown(() => hmacSim.stop());
  const g = createSnapGateway(snapVendor(hmacSim.url, { notifySignature: 'hmac' }, 'snap-hmac'));
  const receiver = await notifyReceiver(t, g, 'snap-hmac');
  await snapAdmin(hmacSim.url).setNotifyUrl(receiver.url);
  const input = qrisInput();
  value(await g.createQris(input));
  await simulatePay(hmacSim.url, { reference: input.reference });
  await until(async () => (receiver.notifies.length >= 1 ? true : undefined), 'a notify');
  t.match(receiver.notifies[0].event, { type: 'qris.paid', reference: '' });
  t.match(receiver.notifies[0].headers.authorization, /^Bearer \d+\./, 'with the token Kasir issued');
});

t.test('a receiver refusing the notify gets it again, re-signed', async (t) => {
  const receiver = await startCallbackReceiver((n) => (n === 1 ? 500 : 200));
  t.teardown(() => receiver.close());
  await admin.setNotifyUrl(receiver.url.replace('/callbacks/sim', '/callbacks/snap/v1.0/qr/qr-mpm-notify'));
  const input = qrisInput();
  value(await gateway.createQris(input));
  await simulatePay(sim.url, { reference: input.reference });
  const [first, second] = await receiver.waitFor(2, 5000);
  t.same(second.body, first.body, 'the same bytes');
  for (const r of [first, second]) t.ok(await gateway.parseCallback(r.headers, r.body, '/v1.0/qr/qr-mpm-notify'), 'each attempt verifies');
});
