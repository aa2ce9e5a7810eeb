// Beneficiary verification that always ends, and the merchant's request to check again
// (POST /v1/beneficiaries/{id}/verify). The job handler is called directly where a test needs a
// given attempt (the last retry of a chain takes an hour of backoff); the deadline sweep runs in
// a real scheduler process, started after the rows are made overdue, as after a crash.
import t from 'tap';
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { NO_ATTEMPT_REASON, VERIFY_DEADLINE_SECONDS, longestVerifyChainSeconds } from '../../db/beneficiaries.ts';
import { sql } from '../../db/pool.ts';
import { queues } from '../../db/queue.ts';
import { handleBeneficiaryVerify } from '../../workers/beneficiary-verify.ts';
import type { WorkerContext } from '../../workers/context.ts';
import { accountHolder } from '../../gateways/simulator/magic.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { call, eventually } from '../helpers/http.ts';
import { startWorkerGroup } from '../helpers/processes.ts';
import { clearFaults, setFaults } from '../helpers/simulator.ts';
import { startStack, type Stack } from '../helpers/stack.ts';
import { issueKey, makeUser } from '../helpers/team.ts';

type M = Awaited<ReturnType<typeof makeMerchant>>;

const LAST_ATTEMPT = queues['beneficiary-verify'].options.retryLimit;

const workerContext = (stack: Stack): WorkerContext => ({
  config: stack.api.ctx.config, pool: stack.api.ctx.pool, replica: stack.api.ctx.replica, boss: stack.api.ctx.boss, sealer: stack.api.ctx.sealer,
});

async function created(stack: Stack, merchant: M, extra: Record<string, unknown> = {}) {
  const res = await call(stack.api.url, {
    path: '/v1/beneficiaries', headers: { 'x-api-key': merchant.api_key },
    body: { channel: 'BANK', bank_short_code: 'BCA', account_number: '1234567890', account_name: 'Nur Hidayah', ...extra },
  });
  if (res.status !== 201) throw new Error(`POST /v1/beneficiaries: ${res.status} ${res.text}`);
  return res.json.data;
}

const read = async (stack: Stack, apiKey: string, id: string) =>
  (await call(stack.api.url, { path: `/v1/beneficiaries/${id}`, headers: { 'x-api-key': apiKey } })).json.data;

const verify = (stack: Stack, apiKey: string, id: string) =>
  call(stack.api.url, { method: 'POST', path: `/v1/beneficiaries/${id}/verify`, headers: { 'x-api-key': apiKey } });

const stored = (stack: Stack, id: string) =>
  stack.api.ctx.pool.one(sql.type(z.object({ verification_failure: z.string().nullable(), verification_last_error: z.string().nullable() }))`
    select verification_failure, verification_last_error from beneficiaries where id = ${id}`);

const jobCount = (stack: Stack, id: string) =>
  stack.api.ctx.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    select count(*)::int as n from pgboss.job where name = 'beneficiary-verify' and data->>'beneficiary_id' = ${id}`);

t.test('every retry failing: earlier attempts keep it PENDING, the last records FAILED with the vendor\'s reason', async (t) => {
  const stack = await startStack(t, { groups: [] });
  const merchant = await makeMerchant(stack.api.ctx);
  const ctx = workerContext(stack);
  await setFaults(stack.sim.url, [{ op: 'inquireAccount', mode: 'reject' }]);
  const b = await created(stack, merchant);

  await t.rejects(handleBeneficiaryVerify(ctx, { beneficiary_id: b.id }, { retryCount: 0 }), /no vendor answered the inquiry: sim: /, 'the first attempt throws, so pg-boss retries');
  t.equal((await read(stack, merchant.api_key, b.id)).verification_status, 'PENDING', 'still PENDING meanwhile');
  const kept = await stored(stack, b.id);
  t.match(kept.verification_last_error, /^no vendor answered the inquiry: sim: /, 'the attempt\'s reason is kept on the row');
  await t.rejects(handleBeneficiaryVerify(ctx, { beneficiary_id: b.id }, { retryCount: LAST_ATTEMPT - 1 }), 'the last but one still throws');

  const last = await handleBeneficiaryVerify(ctx, { beneficiary_id: b.id }, { retryCount: LAST_ATTEMPT });
  t.same(last, { status: 'FAILED', exhausted: true }, 'the last attempt completes instead of throwing');
  const failed = await read(stack, merchant.api_key, b.id);
  t.match(failed, { verification_status: 'FAILED', verified_name: null });
  t.not(failed.updated_at, b.updated_at);
  t.match((await stored(stack, b.id)).verification_failure, /^no vendor answered the inquiry: sim: /, 'FAILED with the vendor\'s reason');

  t.same(await handleBeneficiaryVerify(ctx, { beneficiary_id: b.id }, { retryCount: LAST_ATTEMPT }), { skipped: 'FAILED' }, 'a duplicate changes nothing');

  // No vendor routed for the channel is a reason too.
  await stack.api.ctx.pool.query(sql.unsafe`delete from vendor_routes where method = 'EWALLET'`);
  const wallet = await created(stack, merchant, { channel: 'EWALLET', ewallet_provider: 'OVO', ewallet_phone: '081234567890', bank_short_code: undefined, account_number: undefined, account_name: undefined });
  t.same(await handleBeneficiaryVerify(ctx, { beneficiary_id: wallet.id }, { retryCount: LAST_ATTEMPT }), { status: 'FAILED', exhausted: true });
  t.equal((await stored(stack, wallet.id)).verification_failure, 'no vendor routed for EWALLET inquiries');
});

t.test('a chain that died: the scheduler fails checks PENDING past the deadline, with the last attempt\'s reason', async (t) => {
  const stack = await startStack(t, { groups: [] });
  const merchant = await makeMerchant(stack.api.ctx);
  await setFaults(stack.sim.url, [{ op: 'inquireAccount', mode: 'error' }]);
  const tried = await created(stack, merchant);
  await t.rejects(handleBeneficiaryVerify(workerContext(stack), { beneficiary_id: tried.id }, { retryCount: 3 }), 'one attempt ran and failed, then its worker died');
  const untried = await created(stack, merchant, { account_number: '5550001111' });
  const recent = await created(stack, merchant, { account_number: '5550002222' });

  t.ok(VERIFY_DEADLINE_SECONDS > longestVerifyChainSeconds(), 'the deadline is past the longest job chain');
  t.ok(longestVerifyChainSeconds() > 3_000, `the longest chain (${longestVerifyChainSeconds()} s) covers every backoff`);
  await stack.api.ctx.pool.query(sql.unsafe`
    update beneficiaries set verification_requested_at = now() - make_interval(secs => ${VERIFY_DEADLINE_SECONDS + 60})
    where id in (${tried.id}, ${untried.id})`);
  await startWorkerGroup(t, 'scheduler', stack.env);

  const ended = await eventually(async () => {
    const rows = await Promise.all([tried.id, untried.id].map((id) => read(stack, merchant.api_key, id)));
    return rows.every((r) => r.verification_status === 'FAILED') ? rows : undefined;
  }, 'the overdue checks to fail');
  t.ok(ended.every((r) => r.verified_name === null));
  t.match((await stored(stack, tried.id)).verification_failure, /^no vendor answered the inquiry: sim: /, 'the vendor\'s reason from the last attempt');
  t.equal((await stored(stack, untried.id)).verification_failure, NO_ATTEMPT_REASON, 'a check no attempt reached says so');
  t.equal((await read(stack, merchant.api_key, recent.id)).verification_status, 'PENDING', 'a check within its deadline is left to its job');
});

t.test('POST /v1/beneficiaries/{id}/verify: checks again, idempotent while PENDING', async (t) => {
  const stack = await startStack(t, { groups: [] });
  const merchant = await makeMerchant(stack.api.ctx);
  const key = merchant.api_key;
  await setFaults(stack.sim.url, [{ op: 'inquireAccount', mode: 'reject' }]);
  const b = await created(stack, merchant);

  const whilePending = await verify(stack, key, b.id);
  t.equal(whilePending.status, 200, whilePending.text);
  t.same(whilePending.json, { success: true, data: b }, 'while PENDING: the beneficiary as it is');
  t.equal(await jobCount(stack, b.id), 1, 'and no second check is queued');

  await handleBeneficiaryVerify(workerContext(stack), { beneficiary_id: b.id }, { retryCount: LAST_ATTEMPT });
  const failed = await read(stack, key, b.id);
  t.equal(failed.verification_status, 'FAILED');
  await clearFaults(stack.sim.url);

  const again = await Promise.all(Array.from({ length: 5 }, () => verify(stack, key, b.id)));
  t.same(again.map((r) => r.status), [200, 200, 200, 200, 200], 'five concurrent requests on a FAILED one all answer 200');
  t.ok(again.every((r) => r.json.data.verification_status === 'PENDING' && r.json.data.verified_name === null), 'PENDING again');
  t.not(again[0].json.data.updated_at, failed.updated_at);
  t.equal(await jobCount(stack, b.id), 2, 'exactly one new check is queued');
  t.same(await stored(stack, b.id), { verification_failure: null, verification_last_error: null }, 'the old failure is cleared');

  await startWorkerGroup(t, 'disbursement', stack.env);
  const verified = await eventually(async () => {
    const row = await read(stack, key, b.id);
    return row.verification_status === 'VERIFIED' ? row : undefined;
  }, 'the new check to verify it');
  t.equal(verified.verified_name, accountHolder('1234567890'));

  const recheck = await verify(stack, key, b.id);
  t.match(recheck.json.data, { verification_status: 'PENDING', verified_name: null }, 'a VERIFIED one may be checked again too');
  t.equal(await jobCount(stack, b.id), 3);
  await eventually(async () => ((await read(stack, key, b.id)).verification_status === 'VERIFIED' ? true : undefined), 'the recheck to verify it');

  // Errors, as the other beneficiary routes answer them.
  const expect = async (apiKey: string, id: string, status: number, code: string, what: string) => {
    const res = await verify(stack, apiKey, id);
    t.equal(res.status, status, `${what}: HTTP ${status}`);
    t.equal(res.json?.error?.code, code, `${what}: ${code}`);
  };
  await expect(key, 'not-a-uuid', 400, 'INVALID_ID', 'not a UUID');
  await expect(key, randomUUID(), 404, 'BENEFICIARY_NOT_FOUND', 'unknown');
  const other = await makeMerchant(stack.api.ctx);
  await expect(other.api_key, b.id, 404, 'BENEFICIARY_NOT_FOUND', "another merchant's");
  const gone = await created(stack, merchant, { account_number: '5550003333' });
  t.equal((await call(stack.api.url, { method: 'DELETE', path: `/v1/beneficiaries/${gone.id}`, headers: { 'x-api-key': key } })).status, 200);
  await expect(key, gone.id, 404, 'BENEFICIARY_NOT_FOUND', 'deleted');
  const anonymous = await call(stack.api.url, { method: 'POST', path: `/v1/beneficiaries/${b.id}/verify` });
  t.equal(anonymous.json?.error?.code, 'UNAUTHORIZED');

  // Roles: a beneficiary write, as create and delete (owner and ops).
  for (const role of ['viewer', 'finance'] as const) {
    const k = (await issueKey(stack, (await makeUser(stack, key, role)).id)).api_key;
    await expect(k, b.id, 403, 'FORBIDDEN', role);
  }
  const opsKey = (await issueKey(stack, (await makeUser(stack, key, 'ops')).id)).api_key;
  t.equal((await verify(stack, opsKey, b.id)).status, 200, 'ops may ask');
});
