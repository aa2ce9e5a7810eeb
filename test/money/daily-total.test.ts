// The daily limit reads a running total per merchant and WIB day (migration 020) instead of
// summing the day's rows. It must equal the rows whatever happens to them: raised by creates
// and imports, lowered exactly once by a FAILED or a REJECTED (an imported row's too), untouched
// by SUCCESS and by refusals; and the ledger audit proves it (and names it when it does not hold).
import { randomUUID } from 'node:crypto';
import t from 'tap';
import { sql } from '../../db/pool.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { call, eventually } from '../helpers/http.ts';
import { bankPayout } from '../helpers/merchant-api.ts';
import { fundWallet, ledgerAudit } from '../helpers/money.ts';
import { ops } from '../helpers/processes.ts';
import { startStack } from '../helpers/stack.ts';

const stack = await startStack(t, { groups: ['disbursement'], env: { DISBURSEMENT_RECONCILE_DELAY_SECONDS: '1' } });
const pool = stack.api.ctx.pool;
type M = Awaited<ReturnType<typeof makeMerchant>>;

const runningTotal = async (m: M) =>
  (await pool.maybeOneFirst(sql.unsafe`select total from disbursement_daily_totals where merchant_id = ${m.merchant_id} and wib_date = (now() at time zone 'Asia/Jakarta')::date`)) ?? 0;
const liveRows = async (m: M) =>
  Number(await pool.oneFirst(sql.unsafe`select coalesce(sum(request_amount), 0) from disbursements where merchant_id = ${m.merchant_id} and status not in ('FAILED', 'REJECTED')`));
const disburse = (m: M, body: object) => call(stack.api.url, { path: '/v1/disbursements', headers: { 'x-api-key': m.api_key }, body: { idempotency_key: randomUUID(), ...body } });
const reaches = (m: M, id: string, status: string) =>
  eventually(async () => ((await call(stack.api.url, { path: `/v1/disbursements/${id}`, headers: { 'x-api-key': m.api_key } })).json?.data?.status === status ? true : undefined), `${id} ${status}`, 15_000);

t.test('success, failure, rejection, refusals and an import: the running total follows the rows', async (t) => {
  const merchant = await makeMerchant(stack.api.ctx);
  await fundWallet(pool, merchant, 2_000_000);
  t.equal((await ops(stack.env, 'merchant:set-fees', '--merchant', merchant.merchant_id, '--daily-limit', '1000000', '--review-threshold', '300000')).code, 0);

  const ok = await disburse(merchant, bankPayout(100_000, '1234567890'));
  const failing = await disburse(merchant, bankPayout(50_000, '1234560000'));
  const reviewed = await disburse(merchant, bankPayout(400_000, '1234567890'));
  t.same([ok.status, failing.status, reviewed.status], [201, 201, 201]);
  t.equal(reviewed.json.data.status, 'IN_REVIEW');
  t.equal(await runningTotal(merchant), 550_000, 'raised by each create');

  const over = await disburse(merchant, bankPayout(450_001, '1234567890'));
  t.equal(over.json?.error?.code, 'DAILY_LIMIT_EXCEEDED', '550,000 + 450,001 is over the limit');
  t.equal(await runningTotal(merchant), 550_000, 'a refusal adds nothing');

  await reaches(merchant, ok.json.data.id, 'SUCCESS');
  await reaches(merchant, failing.json.data.id, 'FAILED');
  t.equal(await runningTotal(merchant), 500_000, 'lowered once by the FAILED, not by the SUCCESS');
  const rejected = await ops(stack.env, 'disbursements:reject', '--id', reviewed.json.data.id, '--reason', 'not this one');
  t.equal(rejected.code, 0, rejected.stderr);
  t.equal(await runningTotal(merchant), 100_000, 'lowered once by the REJECTED');
  t.equal((await ops(stack.env, 'disbursements:reject', '--id', reviewed.json.data.id)).code === 0, false, 'a second rejection is refused');
  t.equal(await runningTotal(merchant), 100_000, 'and lowers nothing');

  // An import adds its accepted rows in its one decision; its rows then end like any other.
  const form = new FormData();
  const file = [
    'channel,bank_short_code,account_number,account_name,ewallet_provider,ewallet_phone,amount,notify_url',
    'BANK,BCA,1234567890,Budi Santoso,,,20000,',
    'BANK,BCA,1234567890,Budi Santoso,,,30000,',
    'BANK,NOSUCHBANK,1234567890,Budi Santoso,,,10000,',
    'BANK,BCA,1234560000,Closed Account,,,40000,',
    'BANK,BCA,1234567890,Budi Santoso,,,350000,',
  ].join('\n');
  form.set('file', new Blob([file], { type: 'text/csv' }), 'payouts.csv');
  form.set('idempotency_prefix', `dt-${randomUUID()}`);
  const imported = await fetch(`${stack.api.url}/v1/disbursements/import`, { method: 'POST', headers: { 'x-api-key': merchant.api_key }, body: form });
  t.equal(imported.status, 200, await imported.clone().text());
  const results = ((await imported.json()) as any).data.results;
  t.same(results.map((r: any) => r.disbursement_status ?? r.error.code), ['PENDING', 'PENDING', 'BANK_NOT_FOUND', 'PENDING', 'IN_REVIEW']);
  t.equal(await runningTotal(merchant), 540_000, 'raised by the accepted rows of the file only');
  t.equal(await runningTotal(merchant), await liveRows(merchant), 'equal to the rows');
  await reaches(merchant, results[3].disbursement_id, 'FAILED');
  t.equal(await runningTotal(merchant), 500_000, 'an imported row that fails lowers it once');
  const rejectedImport = await ops(stack.env, 'disbursements:reject', '--id', results[4].disbursement_id, '--reason', 'too big');
  t.equal(rejectedImport.code, 0, rejectedImport.stderr);
  t.equal(await runningTotal(merchant), 150_000, 'an imported row rejected from review lowers it once');
  await reaches(merchant, results[0].disbursement_id, 'SUCCESS');
  t.equal(await runningTotal(merchant), await liveRows(merchant), 'equal to the rows');
  await ledgerAudit(t, stack.env);
});

t.test('the audit names a running total that does not match the rows', async (t) => {
  const merchant = await makeMerchant(stack.api.ctx);
  await fundWallet(pool, merchant, 100_000);
  t.equal((await disburse(merchant, bankPayout(10_000, '1234567777'))).status, 201);
  await pool.query(sql.unsafe`update disbursement_daily_totals set total = total + 1 where merchant_id = ${merchant.merchant_id}`);
  const audit = await ops(stack.env, 'ledger:audit', '--json');
  t.equal(audit.code, 1);
  t.match(JSON.parse(audit.stdout).problems, [{ check: 'daily_total', subject: new RegExp(merchant.merchant_id), detail: 'running total 10001, disbursements 10000' }]);
  await pool.query(sql.unsafe`update disbursement_daily_totals set total = total - 1 where merchant_id = ${merchant.merchant_id}`);
  await ledgerAudit(t, stack.env);
});
