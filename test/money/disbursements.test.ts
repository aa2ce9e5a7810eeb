// V1 disbursements through the whole stack: the API, a real disbursement worker process, the
// simulator gateway over HTTP (magic account numbers choose the outcome), webhooks to a real
// receiver, the ops CLI for review. Every test ends with the ledger audit.
import t from 'tap';
import { randomUUID } from 'node:crypto';
import { sql } from '../../db/pool.ts';
import { call, eventually } from '../helpers/http.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { balanceOf, fundWallet, ledgerAudit, paidOrder } from '../helpers/money.ts';
import { ops, startWorkerGroup } from '../helpers/processes.ts';
import { clearFaults, setFaults, startCallbackReceiver } from '../helpers/simulator.ts';
import { startStack, type Stack } from '../helpers/stack.ts';
import { xSignature } from '../helpers/order-lifecycle.ts';

const FIELDS = [
  'id', 'ref_code', 'idempotency_key', 'channel', 'bank_id', 'bank_short_code', 'account_number', 'account_name', 'ewallet_provider',
  'ewallet_phone', 'request_amount', 'fee', 'final_amount', 'total_debit', 'vendor_disbursement_id', 'source', 'status',
  'failure_reason', 'requested_at', 'created_at',
];

type M = Awaited<ReturnType<typeof makeMerchant>>;

function disburse(stack: Stack, merchant: M, body: Record<string, unknown>) {
  return call(stack.api.url, { path: '/v1/disbursements', headers: { 'x-api-key': merchant.api_key }, body: { idempotency_key: randomUUID(), ...body } });
}

const bank = (amount: number, account = '1234567890', extra: Record<string, unknown> = {}) =>
  ({ channel: 'BANK', bank_short_code: 'BCA', account_number: account, account_name: 'Budi Santoso', amount, ...extra });

function getDisbursement(stack: Stack, merchant: M, id: string) {
  return call(stack.api.url, { path: `/v1/disbursements/${id}`, headers: { 'x-api-key': merchant.api_key } });
}

function reaches(stack: Stack, merchant: M, id: string, status: string, deadlineMs = 10_000) {
  return eventually(async () => {
    const res = await getDisbursement(stack, merchant, id);
    return res.json?.data?.status === status ? res.json.data : undefined;
  }, `disbursement ${id} to become ${status}`, deadlineMs);
}

async function rows(stack: Stack, merchantId: string) {
  return stack.api.ctx.pool.oneFirst(sql.unsafe`select count(*)::int from disbursements where merchant_id = ${merchantId}`);
}

t.test('a bank disbursement is debited at once, sent, and succeeds with signed webhooks', async (t) => {
  const stack = await startStack(t, { groups: ['vendor', 'disbursement', 'webhook'] });
  const receiver = await startCallbackReceiver();
  t.teardown(() => receiver.close());
  const secret = 'plain-webhook-secret-123';
  const merchant = await makeMerchant(stack.api.ctx, { webhookSecret: secret });
  await paidOrder(stack, merchant, 200_000); // credits 198,600
  const res = await disburse(stack, merchant, bank(150_000, '1234567890', { notify_url: receiver.url }));
  t.equal(res.status, 201, res.text);
  const d = res.json.data;
  t.same(Object.keys(d).sort(), [...FIELDS].sort(), 'exactly the spec 2.3 fields, and failure_reason');
  t.match(d, {
    ref_code: /^DSB-\d+-[0-9A-Z]+$/, channel: 'BANK', account_number: '1234567890', account_name: 'Budi Santoso',
    ewallet_provider: null, ewallet_phone: null, request_amount: 150_000, fee: 2_500, final_amount: 150_000,
    total_debit: 152_500, vendor_disbursement_id: null, source: 'API', status: 'PENDING',
  });
  t.match(d.bank_id, /^[0-9a-f-]{36}$/);
  t.equal(d.bank_short_code, 'BCA', 'the bank named by bank_id, by its short code');
  t.equal(await balanceOf(stack, merchant), 198_600 - 152_500, 'total_debit held at creation');

  const done = await reaches(stack, merchant, d.id, 'SUCCESS');
  t.match(done.vendor_disbursement_id, /.+/, 'vendor id filled once known');
  t.equal(await balanceOf(stack, merchant), 198_600 - 152_500, 'success moves no more money from the wallet');
  const byRef = await getDisbursement(stack, merchant, d.ref_code);
  t.equal(byRef.json.data.id, d.id, 'readable by ref_code too');

  const hooks = await receiver.waitFor(2);
  t.same(hooks.map((h) => h.json.event), ['disbursement.on_process', 'disbursement.success']);
  for (const hook of hooks) {
    t.equal(hook.headers['x-signature'], xSignature(secret, hook.body), 'X-Signature keyed with the secret string');
    t.equal(hook.json.ref_code, d.ref_code);
  }
  t.same(Object.keys(hooks[1].json).sort(), [...FIELDS, 'event', 'event_created_at', 'event_id'].sort(), 'webhook: the V1 object plus the event, its id and time');
  for (const hook of hooks) t.equal(hook.json.event_id, hook.headers['webhook-id'], `${hook.json.event}: event_id is the delivery id (webhook-id)`);
  t.not(hooks[0].json.event_id, hooks[1].json.event_id, 'each event its own id');
  t.ok(hooks[0].json.event_created_at <= hooks[1].json.event_created_at, 'event_created_at in the order the events happened');

  const history = await call(stack.api.url, { path: '/v1/balance-history', headers: { 'x-api-key': merchant.api_key } });
  t.match(history.json.data[0], { type: 'DISBURSEMENT', amount: -152_500, reference_type: 'DISBURSEMENT', reference_id: d.id, ref_code: d.ref_code });
  await ledgerAudit(t, stack.env);
});

t.test('a failed transfer returns total_debit exactly once; an e-wallet disbursement succeeds', async (t) => {
  const stack = await startStack(t, { groups: ['disbursement', 'webhook'] });
  const merchant = await makeMerchant(stack.api.ctx);
  await fundWallet(stack.api.ctx.pool, merchant, 100_000);
  const failed = await disburse(stack, merchant, bank(50_000, '1234560000'));
  t.equal(failed.status, 201);
  t.equal(await balanceOf(stack, merchant), 47_500);
  await reaches(stack, merchant, failed.json.data.id, 'FAILED');
  t.equal(await balanceOf(stack, merchant), 100_000, 'the debit is reversed');
  const reversals = await stack.api.ctx.pool.oneFirst(sql.unsafe`
    select count(*)::int from ledger_transfers where reference_id = ${failed.json.data.id} and kind = 'DISBURSEMENT_REVERSAL'`);
  t.equal(reversals, 1, 'one reversal');

  const wallet = await disburse(stack, merchant, { channel: 'EWALLET', ewallet_provider: 'OVO', ewallet_phone: '0812-3456-7890', amount: 20_000 });
  t.equal(wallet.status, 201, wallet.text);
  t.match(wallet.json.data, { channel: 'EWALLET', bank_id: null, bank_short_code: null, account_number: null, account_name: null, ewallet_provider: 'OVO', ewallet_phone: '6281234567890', fee: 1_000, total_debit: 21_000 });
  await reaches(stack, merchant, wallet.json.data.id, 'SUCCESS');
  t.equal(await balanceOf(stack, merchant), 79_000);
  await ledgerAudit(t, stack.env);
});

// Issue 37: one name rule for every payout path and every vendor that can inquire, the built-in
// simulator included. Its sandbox confirms the name entered except on …8888, whose holder is the
// bank's own: a direct payout there ends FAILED ACCOUNT_NAME_MISMATCH, its debit returned.
t.test('a direct payout whose holder the bank names otherwise ends FAILED ACCOUNT_NAME_MISMATCH, unless accepted', async (t) => {
  const stack = await startStack(t, { groups: ['disbursement', 'webhook'] });
  const receiver = await startCallbackReceiver();
  t.teardown(() => receiver.close());
  const merchant = await makeMerchant(stack.api.ctx);
  await fundWallet(stack.api.ctx.pool, merchant, 500_000);
  const refused = await disburse(stack, merchant, bank(100_000, '1234568888', { notify_url: receiver.url }));
  t.equal(refused.status, 201, refused.text);
  t.equal(refused.json.data.failure_reason, null, 'no reason while it is not FAILED');
  const failed = await reaches(stack, merchant, refused.json.data.id, 'FAILED');
  t.equal(failed.failure_reason, 'ACCOUNT_NAME_MISMATCH', 'the merchant reads why');
  t.equal(failed.vendor_disbursement_id, null, 'no vendor was asked to pay it');
  const last = await eventually(async () => receiver.received.find((h) => h.json?.event === 'disbursement.failed'), 'the disbursement.failed webhook', 15_000);
  t.match(last.json, { ref_code: refused.json.data.ref_code, status: 'FAILED', failure_reason: 'ACCOUNT_NAME_MISMATCH' }, 'the webhook says why');
  t.equal(await balanceOf(stack, merchant), 500_000, 'the debit came back');

  const accepted = await disburse(stack, merchant, bank(100_000, '1234568888', { accept_name_mismatch: true }));
  const madeUp = await disburse(stack, merchant, bank(50_000, '3141592653', { account_name: 'Rizky Pratama' }));
  t.equal((await reaches(stack, merchant, accepted.json.data.id, 'SUCCESS')).failure_reason, null, 'accept_name_mismatch pays it');
  await reaches(stack, merchant, madeUp.json.data.id, 'SUCCESS');
  t.equal(await balanceOf(stack, merchant), 500_000 - 102_500 - 52_500, 'any made-up name elsewhere is confirmed and paid');
  await ledgerAudit(t, stack.env);
});

t.test('rules in the contract order, each refusing with its code and writing nothing', async (t) => {
  const stack = await startStack(t, { groups: [] });
  const merchant = await makeMerchant(stack.api.ctx);
  await fundWallet(stack.api.ctx.pool, merchant, 10_000);
  const expect = async (body: Record<string, unknown>, status: number, code: string, what: string) => {
    const res = await call(stack.api.url, { path: '/v1/disbursements', headers: { 'x-api-key': merchant.api_key }, body });
    t.equal(res.status, status, `${what}: HTTP ${status}`);
    t.equal(res.json?.error?.code, code, `${what}: ${code}`);
    return res;
  };
  const key = () => ({ idempotency_key: randomUUID() });
  const missingKey = await expect(bank(1_000), 400, 'INVALID_BODY', 'no idempotency_key');
  t.match(missingKey.json.error.message, /idempotency_key/);
  await expect({ ...key(), ...bank(1_000), channel: 'CASH' }, 400, 'INVALID_BODY', 'unknown channel');
  await expect({ ...key(), channel: 'BANK', bank_short_code: 'BCA', account_number: '1234567890', amount: 1_000 }, 400, 'MISSING_BANK_INFO', 'no account_name');
  await expect({ ...key(), channel: 'BANK', bank_short_code: 'BCA', account_name: 'X', amount: 1_000 }, 400, 'MISSING_BANK_INFO', 'no account_number');
  await expect({ ...key(), channel: 'EWALLET', ewallet_provider: 'OVO', amount: 1_000 }, 400, 'MISSING_EWALLET_INFO', 'no ewallet_phone');
  await expect({ ...key(), channel: 'EWALLET', ewallet_phone: '081234567890', amount: 1_000 }, 400, 'MISSING_EWALLET_INFO', 'no ewallet_provider');
  await expect({ ...key(), ...bank(1_000), bank_short_code: 'NOPE' }, 400, 'BANK_NOT_FOUND', 'unknown bank');
  const disabled = await ops(stack.env, 'banks:disable', '--code', 'PANIN');
  t.equal(disabled.code, 0, disabled.stderr);
  await expect({ ...key(), ...bank(1_000), bank_short_code: 'PANIN' }, 422, 'BANK_DISABLED', 'disabled bank');
  await expect({ ...key(), channel: 'EWALLET', ewallet_provider: 'PAYPAL', ewallet_phone: '081234567890', amount: 1_000 }, 400, 'INVALID_BODY', 'unknown e-wallet');
  for (const amount of [0, -5, 1.5, '1000', null]) await expect({ ...key(), ...bank(1_000), amount }, 400, 'INVALID_BODY', `amount ${JSON.stringify(amount)}`);
  await expect({ ...key(), ...bank(100_000_001) }, 422, 'AMOUNT_EXCEEDS_LIMIT', 'above the per-transaction limit');
  const short = await expect({ ...key(), ...bank(7_501) }, 422, 'INSUFFICIENT_BALANCE', 'amount + fee above the balance');
  t.equal(short.json.error.message, 'Balance is below amount plus fee: 10000 available, 10001 needed (amount 7501 + fee 2500)', 'says what is available and what is needed');
  // Order: a bank problem is reported before an amount problem, the limit before the balance.
  await expect({ ...key(), ...bank(0), bank_short_code: 'NOPE' }, 400, 'BANK_NOT_FOUND', 'bank before amount');
  t.equal(await rows(stack, merchant.merchant_id), 0, 'nothing was written');
  t.equal(await balanceOf(stack, merchant), 10_000, 'nothing was debited');

  const exact = await disburse(stack, merchant, bank(7_500));
  t.equal(exact.status, 201, 'exactly the balance is allowed');
  await fundWallet(stack.api.ctx.pool, merchant, 5_000);
  const first = await call(stack.api.url, { path: '/v1/disbursements', headers: { 'x-api-key': merchant.api_key }, body: { idempotency_key: 'pay-2', ...bank(1_000) } });
  t.equal(first.status, 201);
  await expect({ idempotency_key: 'pay-2', ...bank(1_000) }, 409, 'DUPLICATE_IDEMPOTENCY_KEY', 'a repeated key');
  await expect({ idempotency_key: 'pay-2', ...bank(0), bank_short_code: 'NOPE' }, 409, 'DUPLICATE_IDEMPOTENCY_KEY', 'the key is checked first');

  const manual = await makeMerchant(stack.api.ctx, { settlement: 'MANUAL' });
  const refused = await call(stack.api.url, { path: '/v1/disbursements', headers: { 'x-api-key': manual.api_key }, body: { ...key(), ...bank(1_000) } });
  t.equal(refused.json.error.code, 'NOT_WALLET_MERCHANT');
  t.equal(refused.status, 403);
  const list = await call(stack.api.url, { path: '/v1/disbursements', headers: { 'x-api-key': manual.api_key } });
  t.equal(list.json.error.code, 'NOT_WALLET_MERCHANT');
  await ledgerAudit(t, stack.env);
});

t.test('a 409 says whether the disbursement holding the key is this request: a retry, or a key used twice', async (t) => {
  const stack = await startStack(t, { groups: [] });
  const merchant = await makeMerchant(stack.api.ctx);
  await fundWallet(stack.api.ctx.pool, merchant, 100_000);
  const send = (body: Record<string, unknown>) =>
    call(stack.api.url, { path: '/v1/disbursements', headers: { 'x-api-key': merchant.api_key }, body: { idempotency_key: 'retry-1', ...body } });
  const first = await send(bank(10_000));
  t.equal(first.status, 201, first.text);
  const held = { id: first.json.data.id, ref_code: first.json.data.ref_code, status: 'PENDING' };

  const retry = await send(bank(10_000));
  t.equal(retry.status, 409);
  t.equal(retry.json.error.code, 'DUPLICATE_IDEMPOTENCY_KEY', 'the contract\'s code stays');
  t.same(retry.json.error.details, { ...held, same_request: true, same_amount: true, same_destination: true, same_fee: true }, 'a retry of the same request');
  t.match(retry.json.error.message, /matches this request \(same amount and destination\): DSB-.+ \(PENDING\) is your earlier request/);
  const lower = await send(bank(10_000, '1234567890', { bank_short_code: 'bca', account_name: ' Budi Santoso ' }));
  t.equal(lower.json.error.details.same_request, true, 'the bank code in another case and a padded name are the same destination');

  const more = await send(bank(20_000));
  t.same(more.json.error.details, { ...held, same_request: false, same_amount: false, same_destination: true, same_fee: true }, 'another amount');
  t.match(more.json.error.message, /for another request \(its amount differ\).*use a new idempotency_key/);
  const elsewhere = await send(bank(10_000, '9999999999'));
  t.match(elsewhere.json.error.details, { same_request: false, same_amount: true, same_destination: false }, 'another account');
  const wallet = await send({ channel: 'EWALLET', ewallet_provider: 'OVO', ewallet_phone: '081234567890', amount: 10_000 });
  t.match(wallet.json.error.details, { same_request: false, same_destination: false, same_fee: false }, 'another channel, whose fee differs too');

  const fees = await ops(stack.env, 'merchant:set-fees', '--merchant', merchant.merchant_id, '--fee-bank', '3000');
  t.equal(fees.code, 0, fees.stderr);
  const afterFees = await send(bank(10_000));
  t.match(afterFees.json.error.details, { same_request: true, same_fee: false }, 'a fee changed since is reported, and is no reason to call it another request');
  t.equal(await rows(stack, merchant.merchant_id), 1, 'nothing more was written');
  t.equal(await balanceOf(stack, merchant), 100_000 - 12_500, 'nothing more was debited');
  await ledgerAudit(t, stack.env);
});

t.test('the daily limit counts the WIB day, pending disbursements included', async (t) => {
  const stack = await startStack(t, { groups: [] });
  const merchant = await makeMerchant(stack.api.ctx);
  await fundWallet(stack.api.ctx.pool, merchant, 1_000_000);
  t.equal((await ops(stack.env, 'merchant:set-fees', '--merchant', merchant.merchant_id, '--daily-limit', '100000')).code, 0);
  t.equal((await disburse(stack, merchant, bank(60_000))).status, 201);
  const over = await disburse(stack, merchant, bank(40_001));
  t.equal(over.json.error.code, 'DAILY_LIMIT_EXCEEDED');
  t.equal(over.status, 422);
  t.equal((await disburse(stack, merchant, bank(40_000))).status, 201, 'exactly the limit is allowed');
  // Yesterday's disbursements (WIB) do not count.
  // (A day passing: the rows and the day's running total move to yesterday together.)
  await stack.api.ctx.pool.query(sql.unsafe`update disbursements set wib_date = wib_date - 1 where merchant_id = ${merchant.merchant_id}`);
  await stack.api.ctx.pool.query(sql.unsafe`update disbursement_daily_totals set wib_date = wib_date - 1 where merchant_id = ${merchant.merchant_id}`);
  t.equal((await disburse(stack, merchant, bank(100_000))).status, 201, 'a new WIB day starts from zero');
  await ledgerAudit(t, stack.env);
});

t.test('listing and reading: pagination, ids, other merchants', async (t) => {
  const stack = await startStack(t, { groups: [] });
  const merchant = await makeMerchant(stack.api.ctx);
  const other = await makeMerchant(stack.api.ctx);
  await fundWallet(stack.api.ctx.pool, merchant, 1_000_000);
  const created = [];
  for (let i = 0; i < 12; i++) created.push((await disburse(stack, merchant, bank(1_000 + i))).json.data);
  const page1 = await call(stack.api.url, { path: '/v1/disbursements', headers: { 'x-api-key': merchant.api_key } });
  t.same(page1.json.meta, { page: 1, limit: 10, total: 12, total_pages: 2 }, 'default limit 10');
  t.equal(page1.json.data[0].id, created[11].id, 'newest first');
  const page2 = await call(stack.api.url, { path: '/v1/disbursements?page=2&limit=10', headers: { 'x-api-key': merchant.api_key } });
  t.same(page2.json.data.map((d: any) => d.id), [created[1].id, created[0].id]);
  const big = await call(stack.api.url, { path: '/v1/disbursements?limit=51', headers: { 'x-api-key': merchant.api_key } });
  t.equal(big.json.error.code, 'INVALID_BODY', 'limit max 50');
  t.equal((await call(stack.api.url, { path: '/v1/disbursements?limit=50', headers: { 'x-api-key': merchant.api_key } })).status, 200);
  for (const id of [created[0].id, created[0].ref_code]) {
    const foreign = await getDisbursement(stack, other, id);
    t.equal(foreign.status, 404);
    t.equal(foreign.json.error.code, 'DISBURSEMENT_NOT_FOUND', "another merchant's is not found");
  }
  t.equal((await getDisbursement(stack, merchant, 'nonsense')).json.error.code, 'DISBURSEMENT_NOT_FOUND');
  t.equal((await getDisbursement(stack, merchant, randomUUID())).json.error.code, 'DISBURSEMENT_NOT_FOUND');
  await ledgerAudit(t, stack.env);
});

t.test('review: above the threshold waits IN_REVIEW; approve sends it, reject returns the money', async (t) => {
  const stack = await startStack(t, { groups: ['disbursement', 'webhook'] });
  const receiver = await startCallbackReceiver();
  t.teardown(() => receiver.close());
  const merchant = await makeMerchant(stack.api.ctx, { notifyUrl: receiver.url });
  await fundWallet(stack.api.ctx.pool, merchant, 1_000_000);
  t.equal((await ops(stack.env, 'merchant:set-fees', '--merchant', merchant.merchant_id, '--review-threshold', '100000')).code, 0);
  const small = await disburse(stack, merchant, bank(100_000));
  t.equal(small.json.data.status, 'PENDING', 'at the threshold: no review');
  const a = (await disburse(stack, merchant, bank(100_001))).json.data;
  const b = (await disburse(stack, merchant, bank(200_000))).json.data;
  t.equal(a.status, 'IN_REVIEW');
  t.equal(b.status, 'IN_REVIEW');
  t.equal(await balanceOf(stack, merchant), 1_000_000 - 102_500 - 102_501 - 202_500, 'held while in review');

  const approve = await ops(stack.env, 'disbursements:approve', '--id', a.id, '--json');
  t.equal(approve.code, 0, approve.stderr);
  await reaches(stack, merchant, a.id, 'SUCCESS');
  const reject = await ops(stack.env, 'disbursements:reject', '--id', b.id, '--reason', 'suspicious payee', '--json');
  t.equal(JSON.parse(reject.stdout).status, 'REJECTED');
  const again = await ops(stack.env, 'disbursements:reject', '--id', b.id);
  t.equal(again.code, 1, 'a second decision is refused');
  t.match(again.stderr, /REJECTED, not IN_REVIEW/);
  await reaches(stack, merchant, small.json.data.id, 'SUCCESS');
  t.equal(await balanceOf(stack, merchant), 1_000_000 - 102_500 - 102_501, 'the rejected debit came back, once');
  await eventually(async () => (receiver.received.some((h) => h.json.event === 'disbursement.rejected' && h.json.ref_code === b.ref_code) ? true : undefined), 'rejected webhook');
  await ledgerAudit(t, stack.env);
});

t.test('200-way race on a wallet that affords exactly 10: no overdraft, no double debit, no deadlock', async (t) => {
  const stack = await startStack(t, { groups: [] });
  const merchant = await makeMerchant(stack.api.ctx);
  await fundWallet(stack.api.ctx.pool, merchant, 10 * 12_500);
  const results = await Promise.all(Array.from({ length: 200 }, () => disburse(stack, merchant, bank(10_000))));
  const accepted = results.filter((r) => r.status === 201);
  const refused = results.filter((r) => r.json?.error?.code === 'INSUFFICIENT_BALANCE');
  t.equal(accepted.length, 10, 'exactly what the wallet affords');
  t.equal(refused.length, 190, 'every other one is INSUFFICIENT_BALANCE');
  t.equal(await balanceOf(stack, merchant), 0);
  // The same key raced: one wins, the others are duplicates.
  await fundWallet(stack.api.ctx.pool, merchant, 12_500);
  const raced = await Promise.all(Array.from({ length: 20 }, () => disburse(stack, merchant, { ...bank(10_000), idempotency_key: 'same-key' })));
  t.equal(raced.filter((r) => r.status === 201).length, 1);
  t.equal(raced.filter((r) => r.json?.error?.code === 'DUPLICATE_IDEMPOTENCY_KEY').length, 19);
  t.equal(await balanceOf(stack, merchant), 0, 'one debit for one key');
  await ledgerAudit(t, stack.env);
});

t.test('unknown vendor outcomes are reconciled at the same vendor, never re-sent blindly', async (t) => {
  const stack = await startStack(t, { groups: ['disbursement'], env: { DISBURSEMENT_RECONCILE_DELAY_SECONDS: '1', ORDER_RECONCILE_DELAY_SECONDS: '1' } });
  const merchant = await makeMerchant(stack.api.ctx);
  await fundWallet(stack.api.ctx.pool, merchant, 1_000_000);
  // The vendor takes the transfer but the answer never comes (timeout), and its callback is lost.
  await setFaults(stack.sim.url, [{ op: 'disburse', mode: 'timeout', count: 1 }, { op: 'callback', mode: 'drop_callback', count: 1 }]);
  const timedOut = (await disburse(stack, merchant, bank(10_000))).json.data;
  const done = await reaches(stack, merchant, timedOut.id, 'SUCCESS', 20_000);
  t.match(done.vendor_disbursement_id, /.+/);
  // A 5xx without doing the work: the query says NOT_FOUND, so it is sent (once) to the same vendor.
  await setFaults(stack.sim.url, [{ op: 'disburse', mode: 'error', count: 1 }]);
  const errored = (await disburse(stack, merchant, bank(20_000))).json.data;
  await reaches(stack, merchant, errored.id, 'SUCCESS', 20_000);
  // A stuck transfer (account ending 7777 stays PROCESSING) stays ON_PROCESS with its money held.
  const stuck = (await disburse(stack, merchant, bank(30_000, '1234567777'))).json.data;
  await reaches(stack, merchant, stuck.id, 'ON_PROCESS');
  const events = await stack.api.ctx.pool.anyFirst(sql.unsafe`
    select event from disbursement_events where disbursement_id = ${timedOut.id} order by id`);
  t.same(events, ['disbursement.created', 'disbursement.on_process', 'disbursement.success']);
  const vendorsTried = await stack.api.ctx.pool.oneFirst(sql.unsafe`select vendors_tried from disbursements where id = ${errored.id}`);
  t.same(vendorsTried, ['sim'], 'one vendor, asked rather than re-sent elsewhere');
  t.equal(await balanceOf(stack, merchant), 1_000_000 - 12_500 - 22_500 - 32_500);
  await ledgerAudit(t, stack.env);
});

t.test('a definite refusal fails over to the next vendor', async (t) => {
  const stack = await startStack(t, { vendors: ['sim', 'sim2'], groups: ['disbursement'] });
  const merchant = await makeMerchant(stack.api.ctx);
  await fundWallet(stack.api.ctx.pool, merchant, 100_000);
  await setFaults(stack.sims[0].url, [{ op: 'disburse', mode: 'reject' }]);
  const d = (await disburse(stack, merchant, bank(10_000))).json.data;
  await reaches(stack, merchant, d.id, 'SUCCESS');
  const row = await stack.api.ctx.pool.one(sql.unsafe`select vendor_code, vendors_tried from disbursements where id = ${d.id}`);
  t.same(row, { vendor_code: 'sim2', vendors_tried: ['sim', 'sim2'] });
  await setFaults(stack.sims[1].url, [{ op: 'disburse', mode: 'reject' }]);
  const none = (await disburse(stack, merchant, bank(10_000))).json.data;
  await reaches(stack, merchant, none.id, 'FAILED');
  t.equal(await balanceOf(stack, merchant), 100_000 - 12_500, 'the refused one came back');
  await ledgerAudit(t, stack.env);
});

t.test('a worker killed mid-disbursement loses and duplicates nothing', async (t) => {
  const stack = await startStack(t, { groups: [], env: { DISBURSEMENT_RECONCILE_DELAY_SECONDS: '1' } });
  const merchant = await makeMerchant(stack.api.ctx);
  await fundWallet(stack.api.ctx.pool, merchant, 1_000_000);
  // Every send hangs for a while: the worker is inside the vendor call when it dies.
  await setFaults(stack.sim.url, [{ op: 'disburse', mode: 'latency', latency_ms: 3000 }]);
  const worker = await startWorkerGroup(t, 'disbursement', stack.env);
  const ids = [];
  for (let i = 0; i < 5; i++) ids.push((await disburse(stack, merchant, bank(10_000 + i))).json.data.id);
  await eventually(async () => {
    const n = await stack.api.ctx.pool.oneFirst(sql.unsafe`select count(*)::int from disbursements where merchant_id = ${merchant.merchant_id} and status = 'ON_PROCESS'`);
    return n === 5 ? true : undefined;
  }, 'all five sent');
  await worker.stop('SIGKILL');
  await clearFaults(stack.sim.url);
  await startWorkerGroup(t, 'disbursement', stack.env);
  for (const id of ids) await reaches(stack, merchant, id, 'SUCCESS', 30_000);
  const transfers = await stack.api.ctx.pool.oneFirst(sql.unsafe`
    select count(*)::int from ledger_transfers where merchant_id = ${merchant.merchant_id} and kind like 'DISBURSEMENT%'`);
  t.equal(transfers, 10, 'one debit and one completion per disbursement');
  t.equal(await balanceOf(stack, merchant), 1_000_000 - 5 * 12_500 - 10);
  await ledgerAudit(t, stack.env);
});

t.test('a disbursement whose job was lost is restarted by the scheduler after an hour of silence', async (t) => {
  const stack = await startStack(t, { groups: [] });
  const merchant = await makeMerchant(stack.api.ctx);
  await fundWallet(stack.api.ctx.pool, merchant, 100_000);
  const lost = (await disburse(stack, merchant, bank(10_000))).json.data;
  const quiet = (await disburse(stack, merchant, bank(20_000))).json.data;
  const pool = stack.api.ctx.pool;
  // The jobs vanish (as if their retries ran out while every vendor was down).
  await pool.query(sql.unsafe`delete from pgboss.job where name = 'disbursement-execute'`);
  await pool.query(sql.unsafe`update disbursements set updated_at = now() - interval '2 hours' where id = ${lost.id}`);
  await pool.query(sql.unsafe`update disbursements set updated_at = now() - interval '10 minutes' where id = ${quiet.id}`);
  await startWorkerGroup(t, 'disbursement', stack.env);
  await startWorkerGroup(t, 'scheduler', stack.env);
  await reaches(stack, merchant, lost.id, 'SUCCESS');
  const stillPending = await getDisbursement(stack, merchant, quiet.id);
  t.equal(stillPending.json.data.status, 'PENDING', 'ten quiet minutes are not yet stale');
  await ledgerAudit(t, stack.env);
});
