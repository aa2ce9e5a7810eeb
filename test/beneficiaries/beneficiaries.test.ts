// Beneficiaries through the whole stack: the API over HTTP, a real disbursement worker process
// verifying account names at the simulator gateway (magic account numbers choose the answer),
// and disbursements that name a saved beneficiary. Money tests end with the ledger audit.
import t from 'tap';
import { z } from 'zod';
import { randomUUID } from 'node:crypto';
import { adjustWallet } from '../../db/ledger.ts';
import { sql } from '../../db/pool.ts';
import { sendJob } from '../../db/queue.ts';
import { accountHolder } from '../../gateways/simulator/magic.ts';
import { call, eventually } from '../helpers/http.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { balanceOf, ledgerAudit } from '../helpers/money.ts';
import { ops } from '../helpers/processes.ts';
import { setFaults } from '../helpers/simulator.ts';
import { startStack, type Stack } from '../helpers/stack.ts';

const FIELDS = [
  'id', 'organization_id', 'merchant_id', 'label', 'channel', 'bank_id', 'bank_short_code', 'account_number', 'account_name', 'ewallet_provider',
  'ewallet_phone', 'verification_status', 'verified_name', 'is_default', 'is_enabled', 'created_at', 'updated_at',
];
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

type M = Awaited<ReturnType<typeof makeMerchant>>;

const as = (merchant: M) => ({ 'x-api-key': merchant.api_key });

function createBeneficiary(stack: Stack, merchant: M, body: unknown) {
  return call(stack.api.url, { path: '/v1/beneficiaries', headers: as(merchant), body });
}

function getBeneficiary(stack: Stack, merchant: M, id: string) {
  return call(stack.api.url, { path: `/v1/beneficiaries/${id}`, headers: as(merchant) });
}

function deleteBeneficiary(stack: Stack, merchant: M, id: string) {
  return call(stack.api.url, { method: 'DELETE', path: `/v1/beneficiaries/${id}`, headers: as(merchant) });
}

async function listBeneficiaries(stack: Stack, merchant: M) {
  const res = await call(stack.api.url, { path: '/v1/beneficiaries', headers: as(merchant) });
  if (res.status !== 200) throw new Error(`GET /v1/beneficiaries: ${res.status} ${res.text}`);
  return res;
}

const bankBeneficiary = (extra: Record<string, unknown> = {}) =>
  ({ channel: 'BANK', bank_short_code: 'BCA', account_number: '1234567890', account_name: 'Nur Hidayah', ...extra });
const walletBeneficiary = (extra: Record<string, unknown> = {}) =>
  ({ channel: 'EWALLET', ewallet_provider: 'OVO', ewallet_phone: '0812-3456-7890', ...extra });

async function created(stack: Stack, merchant: M, body: unknown) {
  const res = await createBeneficiary(stack, merchant, body);
  if (res.status !== 201) throw new Error(`POST /v1/beneficiaries: ${res.status} ${res.text}`);
  return res.json.data;
}

function verified(stack: Stack, merchant: M, id: string, status: 'VERIFIED' | 'NAME_MISMATCH' | 'FAILED', deadlineMs = 10_000) {
  return eventually(async () => {
    const res = await getBeneficiary(stack, merchant, id);
    return res.json?.data?.verification_status === status ? res.json.data : undefined;
  }, `beneficiary ${id} to become ${status}`, deadlineMs);
}

async function fund(stack: Stack, merchant: M, amount: number) {
  await stack.api.ctx.pool.transaction((tx) =>
    adjustWallet(tx, { merchantId: merchant.merchant_id, adjustmentId: randomUUID(), amount, reason: 'test float' }));
}

function disburse(stack: Stack, merchant: M, body: Record<string, unknown>) {
  return call(stack.api.url, { path: '/v1/disbursements', headers: as(merchant), body: { idempotency_key: randomUUID(), ...body } });
}

function verifyJobs(stack: Stack, id: string) {
  return stack.api.ctx.pool.any(sql.type(z.object({ state: z.string(), output: z.unknown() }))`
    select state, output from pgboss.job where name = 'beneficiary-verify' and data->>'beneficiary_id' = ${id} order by created_on`);
}

t.test('create, read, list and soft delete; the record of spec 2.4 exactly', async (t) => {
  const stack = await startStack(t, { groups: [] });
  const merchant = await makeMerchant(stack.api.ctx);
  const banks = await call(stack.api.url, { path: '/v1/banks', headers: as(merchant) });
  const bca = banks.json.data.find((b: { short_code: string }) => b.short_code === 'BCA');

  const res = await createBeneficiary(stack, merchant, bankBeneficiary({ label: ' Payroll: Budi ' }));
  t.equal(res.status, 201, res.text);
  const bank = res.json.data;
  t.same(Object.keys(bank).sort(), [...FIELDS].sort(), 'exactly the spec 2.4 fields');
  t.match(bank, {
    id: /^[0-9a-f-]{36}$/, organization_id: merchant.merchant_id, merchant_id: merchant.merchant_id, label: 'Payroll: Budi',
    channel: 'BANK', bank_id: bca.id, bank_short_code: 'BCA', account_number: '1234567890', account_name: 'Nur Hidayah', ewallet_provider: null,
    ewallet_phone: null, verification_status: 'PENDING', verified_name: null, is_default: false, is_enabled: true,
    created_at: ISO, updated_at: ISO,
  });
  const jobs = await verifyJobs(stack, bank.id);
  t.equal(jobs.length, 1, 'its verification is queued with it');

  const wallet = await created(stack, merchant, { channel: 'EWALLET', ewallet_provider: 'ovo', ewallet_phone: '+62 812 3456 7890', is_default: true });
  t.match(wallet, {
    label: 'OVO 6281234567890', channel: 'EWALLET', bank_id: null, bank_short_code: null, account_number: null, account_name: null,
    ewallet_provider: 'OVO', ewallet_phone: '6281234567890', verification_status: 'PENDING', is_default: true, is_enabled: true,
  });
  const unlabelled = await created(stack, merchant, bankBeneficiary({ bank_short_code: 'bri', account_number: '0099887766', account_name: undefined }));
  t.match(unlabelled, { label: 'BRI 0099887766', account_name: null }, 'account_name is optional; the label defaults to bank and number');

  const list = await listBeneficiaries(stack, merchant);
  t.same(Object.keys(list.json).sort(), ['data', 'success'], 'no meta');
  t.same(list.json.data.map((b: { id: string }) => b.id), [wallet.id, unlabelled.id, bank.id], 'the default first, then newest first');
  t.same(list.json.data[2], bank);
  const one = await getBeneficiary(stack, merchant, bank.id.toUpperCase());
  t.same(one.json, { success: true, data: bank }, 'read by id, in any case');

  const deleted = await deleteBeneficiary(stack, merchant, wallet.id);
  t.equal(deleted.status, 200);
  t.same(deleted.json, { success: true, data: { deleted: true } });
  const gone = await getBeneficiary(stack, merchant, wallet.id);
  t.equal(gone.status, 404);
  t.equal(gone.json.error.code, 'BENEFICIARY_NOT_FOUND', 'a deleted one is not found');
  t.equal((await deleteBeneficiary(stack, merchant, wallet.id)).json.error.code, 'BENEFICIARY_NOT_FOUND', 'nor deleted twice');
  t.same((await listBeneficiaries(stack, merchant)).json.data.map((b: { id: string }) => b.id), [unlabelled.id, bank.id], 'nor listed');
  const row = await stack.api.ctx.pool.one(sql.unsafe`select deleted_at is not null as deleted, is_default from beneficiaries where id = ${wallet.id}`);
  t.same(row, { deleted: true, is_default: false }, 'soft: the row stays, and is no longer the default');

  for (const method of ['GET', 'DELETE']) {
    const bad = await call(stack.api.url, { method, path: '/v1/beneficiaries/not-a-uuid', headers: as(merchant) });
    t.equal(bad.status, 400, `${method} a non-UUID: 400`);
    t.equal(bad.json.error.code, 'INVALID_ID');
    const unknown = await call(stack.api.url, { method, path: `/v1/beneficiaries/${randomUUID()}`, headers: as(merchant) });
    t.equal(unknown.status, 404, `${method} an unknown id: 404`);
    t.equal(unknown.json.error.code, 'BENEFICIARY_NOT_FOUND');
  }

  const other = await makeMerchant(stack.api.ctx);
  t.equal((await getBeneficiary(stack, other, bank.id)).json.error.code, 'BENEFICIARY_NOT_FOUND', "another merchant's is not found");
  t.equal((await deleteBeneficiary(stack, other, bank.id)).json.error.code, 'BENEFICIARY_NOT_FOUND', "another merchant's cannot be deleted");
  t.same((await listBeneficiaries(stack, other)).json.data, [], 'nor listed to them');
  t.equal((await getBeneficiary(stack, merchant, bank.id)).status, 200, 'and is still there');

  const manual = await makeMerchant(stack.api.ctx, { settlement: 'MANUAL' });
  t.equal((await createBeneficiary(stack, manual, bankBeneficiary())).status, 201, 'every merchant may keep beneficiaries');
  const anonymous = await call(stack.api.url, { path: '/v1/beneficiaries' });
  t.equal(anonymous.json.error.code, 'UNAUTHORIZED');
});

t.test('create rules, each refusing with its code and writing nothing', async (t) => {
  const stack = await startStack(t, { groups: [] });
  const merchant = await makeMerchant(stack.api.ctx);
  const expect = async (body: unknown, status: number, code: string, what: string, message?: RegExp) => {
    const res = await createBeneficiary(stack, merchant, body);
    t.equal(res.status, status, `${what}: HTTP ${status}`);
    t.equal(res.json?.error?.code, code, `${what}: ${code}`);
    if (message) t.match(res.json?.error?.message, message, `${what}: names the field`);
  };
  await expect({ account_number: '1234567890' }, 400, 'INVALID_BODY', 'no channel', /^channel/);
  await expect(bankBeneficiary({ channel: 'CASH' }), 400, 'INVALID_BODY', 'unknown channel', /^channel/);
  await expect(bankBeneficiary({ account_number: undefined }), 400, 'MISSING_BANK_INFO', 'no account_number');
  await expect(bankBeneficiary({ bank_short_code: undefined }), 400, 'MISSING_BANK_INFO', 'no bank_short_code');
  await expect(bankBeneficiary({ account_number: '12-34' }), 400, 'INVALID_BODY', 'account_number not digits', /^account_number/);
  await expect(bankBeneficiary({ bank_short_code: 'NOPE' }), 400, 'BANK_NOT_FOUND', 'unknown bank');
  await expect(walletBeneficiary({ ewallet_phone: undefined }), 400, 'MISSING_EWALLET_INFO', 'no ewallet_phone');
  await expect(walletBeneficiary({ ewallet_provider: undefined }), 400, 'MISSING_EWALLET_INFO', 'no ewallet_provider');
  await expect(walletBeneficiary({ ewallet_phone: '12345' }), 400, 'INVALID_BODY', 'not a phone number', /^ewallet_phone/);
  await expect(walletBeneficiary({ ewallet_provider: 'PAYPAL' }), 400, 'INVALID_BODY', 'unknown e-wallet', /^ewallet_provider/);
  await expect(bankBeneficiary({ is_default: 'yes' }), 400, 'INVALID_BODY', 'is_default not a boolean', /^is_default/);
  await expect(bankBeneficiary({ label: 'x'.repeat(256) }), 400, 'INVALID_BODY', 'label too long', /^label/);
  await expect('[]', 400, 'INVALID_BODY', 'not an object');
  await expect('{', 400, 'INVALID_JSON', 'not JSON');
  const disabled = await ops(stack.env, 'banks:disable', '--code', 'PANIN');
  t.equal(disabled.code, 0, disabled.stderr);
  await expect(bankBeneficiary({ bank_short_code: 'PANIN' }), 422, 'BANK_DISABLED', 'a disabled bank, as for disbursements');
  const rows = await stack.api.ctx.pool.oneFirst(sql.unsafe`select count(*)::int from beneficiaries`);
  t.equal(rows, 0, 'nothing was written');
  const jobs = await stack.api.ctx.pool.oneFirst(sql.unsafe`select count(*)::int from pgboss.job where name = 'beneficiary-verify'`);
  t.equal(jobs, 0, 'nothing was queued');
});

t.test('at most one default per merchant, whatever the concurrency', async (t) => {
  const stack = await startStack(t, { groups: [] });
  const merchant = await makeMerchant(stack.api.ctx);
  const other = await makeMerchant(stack.api.ctx);
  const first = await created(stack, merchant, bankBeneficiary({ is_default: true }));
  const othersDefault = await created(stack, other, bankBeneficiary({ is_default: true }));
  const plain = await created(stack, merchant, walletBeneficiary());
  t.equal((await getBeneficiary(stack, merchant, first.id)).json.data.is_default, true, 'a non-default create leaves the default alone');
  const second = await created(stack, merchant, walletBeneficiary({ is_default: true }));
  t.equal(second.is_default, true);
  const demoted = (await getBeneficiary(stack, merchant, first.id)).json.data;
  t.equal(demoted.is_default, false, 'a new default unsets the previous one');
  t.not(demoted.updated_at, first.updated_at, 'and touches its updated_at');

  const raced = await Promise.all(Array.from({ length: 20 }, (_, i) => createBeneficiary(stack, merchant, bankBeneficiary({ label: `race ${i}`, is_default: true }))));
  t.same(raced.map((r) => r.status), Array(20).fill(201), 'twenty concurrent default creates all succeed');
  t.ok(raced.every((r) => r.json.data.is_default), 'each was the default when it was created');
  const list = (await listBeneficiaries(stack, merchant)).json.data;
  t.equal(list.length, 23);
  const defaults = list.filter((b: { is_default: boolean }) => b.is_default);
  t.equal(defaults.length, 1, 'exactly one default remains');
  t.ok(raced.some((r) => r.json.data.id === defaults[0].id), 'one of the racers');
  t.equal(list[0].id, defaults[0].id, 'listed first');
  t.equal((await getBeneficiary(stack, other, othersDefault.id)).json.data.is_default, true, "another merchant's default is untouched");
  t.equal((await getBeneficiary(stack, merchant, plain.id)).json.data.is_default, false);

  t.equal((await deleteBeneficiary(stack, merchant, defaults[0].id)).status, 200);
  const after = (await listBeneficiaries(stack, merchant)).json.data;
  t.equal(after.filter((b: { is_default: boolean }) => b.is_default).length, 0, 'deleting the default leaves none');
  t.equal((await created(stack, merchant, bankBeneficiary({ is_default: true }))).is_default, true, 'and a new one can be set');

  // The database itself refuses a second live default, whoever writes.
  const forged = await stack.api.ctx.pool.query(sql.unsafe`update beneficiaries set is_default = true where id = ${plain.id}`).then(
    () => null,
    (err: { constraint?: string }) => err,
  );
  t.equal(forged?.constraint, 'beneficiaries_one_default_key', 'the database refuses a second live default');
});

// Issue 37: the spec's flow in the sandbox, with names a tester makes up. The simulator confirms
// the name entered (as the vendors' test modes do), so the beneficiary is VERIFIED and paid.
t.test('the spec\'s flow with made-up names: PENDING, then VERIFIED, then paid by beneficiary_id', async (t) => {
  const stack = await startStack(t, { groups: ['disbursement'] });
  const merchant = await makeMerchant(stack.api.ctx);
  await fund(stack, merchant, 1_000_000);
  const b = await created(stack, merchant, bankBeneficiary({ account_number: '3141592653', account_name: 'Rizky Pratama' }));
  t.equal(b.verification_status, 'PENDING', 'PENDING at creation (spec 4.5)');
  const v = await verified(stack, merchant, b.id, 'VERIFIED');
  t.equal(v.verified_name, 'RIZKY PRATAMA', 'the name entered, as the bank prints it');
  const paid = await disburse(stack, merchant, { beneficiary_id: b.id, amount: 100_000 });
  t.equal(paid.status, 201, paid.text);
  const done = await eventually(async () => {
    const res = await call(stack.api.url, { path: `/v1/disbursements/${paid.json.data.id}`, headers: as(merchant) });
    return res.json?.data?.status === 'SUCCESS' ? res.json.data : undefined;
  }, 'the payout to succeed');
  t.match(done, { account_number: '3141592653', account_name: 'Rizky Pratama', request_amount: 100_000 });
  t.equal(await balanceOf(stack, merchant), 1_000_000 - paid.json.data.total_debit);
  await ledgerAudit(t, stack.env);
});

// Issue 29, a newcomer's finding: a beneficiary saved under one name whose bank answered another
// became VERIFIED and was paid. The name is compared (case, punctuation and titles aside), a
// mismatch is its own status, and paying it is refused (issue 37: 422 with a code of its own
// that says how to fix it) unless the request accepts it. In the sandbox, …8888 is held by the
// bank's own holder whatever name is entered.
t.test('a beneficiary whose bank names another holder is NAME_MISMATCH; paying it is 422 BENEFICIARY_NAME_MISMATCH until saved again with the bank\'s name', async (t) => {
  const stack = await startStack(t, { groups: ['disbursement'] });
  const merchant = await makeMerchant(stack.api.ctx);
  await fund(stack, merchant, 1_000_000);
  const account = '1234568888';
  const banks = accountHolder(account)!;
  t.equal(banks, 'NUR HIDAYAH', "the simulator's holder of the number (docs/simulator.md)");
  const other = await created(stack, merchant, bankBeneficiary({ account_number: account, account_name: 'Budi Santoso' }));
  const titled = await created(stack, merchant, bankBeneficiary({ account_number: account, account_name: 'Ibu Hj. Nur  Hidayah, S.Kom.' }));
  const mismatch = await verified(stack, merchant, other.id, 'NAME_MISMATCH');
  t.match(mismatch, { account_name: 'Budi Santoso', verified_name: banks }, "the bank's name is shown beside the saved one");
  const why = await stack.api.ctx.pool.oneFirst(sql.unsafe`select verification_failure from beneficiaries where id = ${other.id}`);
  t.match(why, /^ACCOUNT_NAME_MISMATCH: \S+ names the holder NUR HIDAYAH/);
  await verified(stack, merchant, titled.id, 'VERIFIED');

  const before = await balanceOf(stack, merchant);
  const refused = await disburse(stack, merchant, { beneficiary_id: other.id, amount: 200_000 });
  t.equal(refused.status, 422, refused.text);
  t.equal(refused.json.error.code, 'BENEFICIARY_NAME_MISMATCH', 'a code of its own, not INVALID_BODY');
  t.match(refused.json.error.message, new RegExp(`^beneficiary_id: the bank names the account holder NUR HIDAYAH, not Budi Santoso\\. To pay NUR HIDAYAH, delete this beneficiary \\(DELETE /v1/beneficiaries/${other.id}\\) and save it again with account_name "NUR HIDAYAH"; or send accept_name_mismatch: true`));
  t.equal(await balanceOf(stack, merchant), before, 'nothing debited');
  const notBoolean = await disburse(stack, merchant, { beneficiary_id: other.id, amount: 1_000, accept_name_mismatch: 'yes' });
  t.equal(notBoolean.status, 400);
  t.equal(notBoolean.json.error.code, 'INVALID_BODY', 'a malformed body is still INVALID_BODY');

  const accepted = await disburse(stack, merchant, { beneficiary_id: other.id, amount: 200_000, accept_name_mismatch: true });
  t.equal(accepted.status, 201, accepted.text);
  const flag = await stack.api.ctx.pool.oneFirst(sql.unsafe`select accept_name_mismatch from disbursements where id = ${accepted.json.data.id}`);
  t.equal(flag, true, 'the acceptance is recorded with the disbursement');

  // The fix the message gives: delete it, save it again with the bank's name, pay it.
  t.equal((await deleteBeneficiary(stack, merchant, other.id)).status, 200);
  const again = await created(stack, merchant, bankBeneficiary({ account_number: account, account_name: mismatch.verified_name }));
  await verified(stack, merchant, again.id, 'VERIFIED');
  const fixed = await disburse(stack, merchant, { beneficiary_id: again.id, amount: 100_000 });
  t.equal(fixed.status, 201, fixed.text);
  for (const id of [accepted.json.data.id, fixed.json.data.id]) {
    await eventually(async () => {
      const res = await call(stack.api.url, { path: `/v1/disbursements/${id}`, headers: as(merchant) });
      return res.json?.data?.status === 'SUCCESS' ? true : undefined;
    }, `disbursement ${id} to succeed`);
  }
  t.equal(await balanceOf(stack, merchant), before - accepted.json.data.total_debit - fixed.json.data.total_debit);
  await ledgerAudit(t, stack.env);
});

t.test('verification at the simulator: VERIFIED with the holder name, FAILED for a missing account', async (t) => {
  const stack = await startStack(t, { groups: ['disbursement'] });
  const merchant = await makeMerchant(stack.api.ctx);
  const good = await created(stack, merchant, bankBeneficiary({ account_number: '1234567890' }));
  const missing = await created(stack, merchant, bankBeneficiary({ account_number: '1234569999' }));
  const wallet = await created(stack, merchant, walletBeneficiary({ ewallet_phone: '081234567890' }));

  const ok = await verified(stack, merchant, good.id, 'VERIFIED');
  t.equal(ok.verified_name, 'NUR HIDAYAH', 'the name the bank gives: the one entered, as it prints names');
  t.equal(ok.account_name, 'Nur Hidayah', 'the name the merchant gave is kept as given');
  t.not(ok.updated_at, good.updated_at);
  const failed = await verified(stack, merchant, missing.id, 'FAILED');
  t.equal(failed.verified_name, null);
  const reason = await stack.api.ctx.pool.oneFirst(sql.unsafe`select verification_failure from beneficiaries where id = ${missing.id}`);
  t.equal(reason, 'ACCOUNT_NOT_FOUND', "the vendor's reason is kept");
  const ewallet = await verified(stack, merchant, wallet.id, 'VERIFIED');
  t.equal(ewallet.verified_name, accountHolder('6281234567890'), 'an e-wallet is asked by its phone number');

  // A duplicate job changes nothing.
  await sendJob(stack.api.ctx.boss, 'beneficiary-verify', { beneficiary_id: missing.id });
  const jobs = await eventually(async () => {
    const rows = await verifyJobs(stack, missing.id);
    return rows.length === 2 && rows.every((r) => r.state === 'completed') ? rows : undefined;
  }, 'both jobs to complete');
  t.same(jobs.map((j) => j.output), [{ status: 'FAILED', vendor: 'sim' }, { skipped: 'FAILED' }]);
  t.same((await getBeneficiary(stack, merchant, missing.id)).json.data, failed);
});

t.test('verification asks the next vendor when one cannot answer, and retries when none can', async (t) => {
  const stack = await startStack(t, { vendors: ['sim', 'sim2'], groups: ['disbursement'] });
  const merchant = await makeMerchant(stack.api.ctx);
  await setFaults(stack.sims[0].url, [{ op: 'inquireAccount', mode: 'reject' }]);
  const b = await created(stack, merchant, bankBeneficiary());
  await verified(stack, merchant, b.id, 'VERIFIED');
  // The row is VERIFIED before pg-boss records the job's output: wait for the job to complete.
  const answered = await eventually(async () => {
    const rows = await verifyJobs(stack, b.id);
    return rows.every((r) => r.state === 'completed') ? rows : undefined;
  }, 'the verify job to complete');
  t.same(answered.map((j) => j.output), [{ status: 'VERIFIED', vendor: 'sim2' }], 'answered by the second vendor');

  // No vendor answers at first (a refusal, then a 5xx): it stays PENDING and the job retries.
  await setFaults(stack.sims[1].url, [{ op: 'inquireAccount', mode: 'error', count: 1 }]);
  const later = await created(stack, merchant, bankBeneficiary({ account_number: '5550001111', account_name: accountHolder('5550001111') }));
  await eventually(async () => ((await verifyJobs(stack, later.id))[0]?.state === 'retry' ? true : undefined), 'the job to wait for a retry');
  t.equal((await getBeneficiary(stack, merchant, later.id)).json.data.verification_status, 'PENDING', 'still PENDING meanwhile');
  const done = await verified(stack, merchant, later.id, 'VERIFIED', 20_000);
  t.equal(done.verified_name, accountHolder('5550001111'));
});

t.test('a disbursement naming a beneficiary takes its destination', async (t) => {
  const stack = await startStack(t, { groups: ['disbursement'] });
  const merchant = await makeMerchant(stack.api.ctx);
  const other = await makeMerchant(stack.api.ctx);
  await fund(stack, merchant, 1_000_000);
  const bank = await created(stack, merchant, bankBeneficiary());
  const wallet = await created(stack, merchant, walletBeneficiary());

  const paid = await disburse(stack, merchant, { beneficiary_id: bank.id, amount: 10_000 });
  t.equal(paid.status, 201, paid.text);
  t.match(paid.json.data, {
    channel: 'BANK', bank_id: bank.bank_id, account_number: '1234567890', account_name: 'Nur Hidayah',
    ewallet_provider: null, ewallet_phone: null, request_amount: 10_000, fee: 2_500, status: 'PENDING',
  });
  const recorded = await stack.api.ctx.pool.oneFirst(sql.unsafe`select beneficiary_id from disbursements where id = ${paid.json.data.id}`);
  t.equal(recorded, bank.id, 'the disbursement records its beneficiary');

  const toWallet = await disburse(stack, merchant, { beneficiary_id: wallet.id, amount: 20_000 });
  t.match(toWallet.json.data, { channel: 'EWALLET', bank_id: null, account_number: null, account_name: null, ewallet_provider: 'OVO', ewallet_phone: '6281234567890', fee: 1_000 });

  const agreeing = await disburse(stack, merchant, {
    beneficiary_id: bank.id, channel: 'BANK', bank_short_code: 'bca', account_number: '1234567890', account_name: 'NUR  HIDAYAH', amount: 1_000,
  });
  t.equal(agreeing.status, 201, 'explicit fields that agree are fine (short code and name in any case)');
  t.equal(agreeing.json.data.account_name, 'Nur Hidayah', 'the saved name is used');
  const agreeingWallet = await disburse(stack, merchant, { beneficiary_id: wallet.id, ewallet_provider: 'ovo', ewallet_phone: '6281234567890', amount: 1_000 });
  t.equal(agreeingWallet.status, 201, 'the phone is compared normalised');

  const refused = async (body: Record<string, unknown>, status: number, code: string, what: string, message?: RegExp) => {
    const res = await disburse(stack, merchant, { amount: 1_000, ...body });
    t.equal(res.status, status, `${what}: HTTP ${status}`);
    t.equal(res.json?.error?.code, code, `${what}: ${code}`);
    if (message) t.match(res.json?.error?.message, message, `${what}: names the field`);
  };
  const before = await balanceOf(stack, merchant);
  await refused({ beneficiary_id: bank.id, account_number: '1234567891' }, 400, 'INVALID_BODY', 'another account number', /^account_number: does not match the beneficiary/);
  await refused({ beneficiary_id: bank.id, channel: 'EWALLET' }, 400, 'INVALID_BODY', 'another channel', /^channel/);
  await refused({ beneficiary_id: bank.id, bank_short_code: 'BRI' }, 400, 'INVALID_BODY', 'another bank', /^bank_short_code/);
  await refused({ beneficiary_id: bank.id, account_name: 'Siti Rahayu' }, 400, 'INVALID_BODY', 'another name', /^account_name/);
  await refused({ beneficiary_id: bank.id, ewallet_phone: '081234567890' }, 400, 'INVALID_BODY', 'an e-wallet field on a bank beneficiary', /^ewallet_phone/);
  await refused({ beneficiary_id: wallet.id, ewallet_phone: '081299998888' }, 400, 'INVALID_BODY', 'another phone', /^ewallet_phone/);
  await refused({ beneficiary_id: wallet.id, account_number: '1234567890' }, 400, 'INVALID_BODY', 'a bank field on an e-wallet beneficiary', /^account_number/);
  await refused({ beneficiary_id: 'not-a-uuid' }, 400, 'INVALID_BODY', 'a beneficiary_id that is not a UUID', /^beneficiary_id/);
  await refused({ beneficiary_id: randomUUID() }, 404, 'BENEFICIARY_NOT_FOUND', 'an unknown beneficiary');
  const foreign = await created(stack, other, bankBeneficiary());
  await refused({ beneficiary_id: foreign.id }, 404, 'BENEFICIARY_NOT_FOUND', "another merchant's beneficiary");
  await refused({ bank_short_code: 'BCA', account_number: '1234567890', account_name: 'Budi' }, 400, 'INVALID_BODY', 'no channel and no beneficiary', /^channel: is required/);
  t.equal(await balanceOf(stack, merchant), before, 'refusals debit nothing');

  // A bank beneficiary saved without a name: the request's name, else the verified one.
  const nameless = await created(stack, merchant, bankBeneficiary({ account_number: '2233445566', account_name: undefined }));
  const named = await disburse(stack, merchant, { beneficiary_id: nameless.id, account_name: 'Agus', amount: 1_000 });
  t.equal(named.json.data.account_name, 'Agus', 'the request fills a name the beneficiary lacks');
  const v = await verified(stack, merchant, nameless.id, 'VERIFIED');
  const byVerified = await disburse(stack, merchant, { beneficiary_id: nameless.id, amount: 1_000 });
  t.equal(byVerified.status, 201, byVerified.text);
  t.equal(byVerified.json.data.account_name, v.verified_name, 'else the name the vendor verified');

  const invalid = await created(stack, merchant, bankBeneficiary({ account_number: '9876549999' }));
  await verified(stack, merchant, invalid.id, 'FAILED');
  await refused({ beneficiary_id: invalid.id }, 400, 'INVALID_BODY', 'a beneficiary that failed verification', /^beneficiary_id/);

  // Deleted: no new disbursements to it, and the old ones stay readable.
  t.equal((await deleteBeneficiary(stack, merchant, bank.id)).status, 200);
  await refused({ beneficiary_id: bank.id }, 404, 'BENEFICIARY_NOT_FOUND', 'a deleted beneficiary');
  const done = await eventually(async () => {
    const res = await call(stack.api.url, { path: `/v1/disbursements/${paid.json.data.id}`, headers: as(merchant) });
    return res.json?.data?.status === 'SUCCESS' ? res.json.data : undefined;
  }, 'the disbursement to succeed');
  t.match(done, { id: paid.json.data.id, account_number: '1234567890', account_name: 'Nur Hidayah' }, 'still readable after the delete');
  const list = await call(stack.api.url, { path: '/v1/disbursements?limit=50', headers: as(merchant) });
  t.ok(list.json.data.some((d: { id: string }) => d.id === paid.json.data.id), 'and listed');
  t.equal(
    await stack.api.ctx.pool.oneFirst(sql.unsafe`select beneficiary_id from disbursements where id = ${paid.json.data.id}`),
    bank.id,
    'still pointing at its beneficiary',
  );
  await ledgerAudit(t, stack.env);
});
