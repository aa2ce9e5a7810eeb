// An operator settles by hand a payout stuck in flight at its vendor (accepted, then never
// heard of again: the simulator keeps an account ending 7777 PROCESSING for ever): FAILED
// returns the debit exactly once, SUCCESS completes it; anything not in flight is refused.
import { randomUUID } from 'node:crypto';
import t from 'tap';
import { sql } from '../../db/pool.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { call, eventually } from '../helpers/http.ts';
import { bankPayout } from '../helpers/merchant-api.ts';
import { balanceOf, fundWallet, ledgerAudit } from '../helpers/money.ts';
import { ops } from '../helpers/processes.ts';
import { startStack } from '../helpers/stack.ts';

const stack = await startStack(t, { groups: ['disbursement'] });
const pool = stack.api.ctx.pool;
type M = Awaited<ReturnType<typeof makeMerchant>>;

const disburse = (m: M, body: object) => call(stack.api.url, { path: '/v1/disbursements', headers: { 'x-api-key': m.api_key }, body: { idempotency_key: randomUUID(), ...body } });
const statusOf = (id: string) => pool.oneFirst(sql.unsafe`select status from disbursements where id = ${id}`);
const inFlight = (id: string) => eventually(async () => ((await statusOf(id)) === 'ON_PROCESS' ? true : undefined), `${id} ON_PROCESS`);

t.test('FAILED by hand returns the debit once; SUCCESS completes; nothing else can be settled', async (t) => {
  const merchant = await makeMerchant(stack.api.ctx);
  await fundWallet(pool, merchant, 500_000);
  const lost = (await disburse(merchant, bankPayout(100_000, '1234567777'))).json.data;
  const arrived = (await disburse(merchant, bankPayout(50_000, '2234567777'))).json.data;
  await inFlight(lost.id);
  await inFlight(arrived.id);
  t.equal(await balanceOf(stack, merchant), 500_000 - lost.total_debit - arrived.total_debit, 'both held in flight');

  const failed = await ops(stack.env, 'payouts:settle', '--ref', lost.ref_code, '--outcome', 'FAILED', '--reason', 'vendor has no record after acceptance', '--evidence', 'ticket VND-1234', '--json');
  t.equal(failed.code, 0, failed.stderr);
  t.match(JSON.parse(failed.stdout), { ref: lost.ref_code, kind: 'DISBURSEMENT', status: 'FAILED' });
  t.equal(await statusOf(lost.id), 'FAILED');
  t.equal(await balanceOf(stack, merchant), 500_000 - arrived.total_debit, 'the debit returned');
  const event = await pool.one(sql.unsafe`select source, detail from disbursement_events where disbursement_id = ${lost.id} and status = 'FAILED'`);
  t.match(event, { source: 'operator', detail: { operator_reason: 'vendor has no record after acceptance', evidence: 'ticket VND-1234' } });

  const again = await ops(stack.env, 'payouts:settle', '--ref', lost.ref_code, '--outcome', 'FAILED', '--reason', 'twice');
  t.equal(again.code === 0, false, 'a settled payout cannot be settled again');
  t.match(again.stderr + again.stdout, /is FAILED: only one ON_PROCESS/);
  t.equal(await balanceOf(stack, merchant), 500_000 - arrived.total_debit, 'and nothing moved twice');

  const ok = await ops(stack.env, 'payouts:settle', '--ref', arrived.ref_code, '--outcome', 'SUCCESS', '--reason', 'on the bank statement', '--vendor-id', 'T0001');
  t.equal(ok.code, 0, ok.stderr);
  t.equal(await statusOf(arrived.id), 'SUCCESS');
  t.equal(await pool.oneFirst(sql.unsafe`select vendor_disbursement_id from disbursements where id = ${arrived.id}`), 'T0001');
  t.equal(await balanceOf(stack, merchant), 500_000 - arrived.total_debit, 'the money left');

  const unknown = await ops(stack.env, 'payouts:settle', '--ref', 'DSB-1-NOPE', '--outcome', 'FAILED', '--reason', 'x y z');
  t.match(unknown.stderr + unknown.stdout, /no disbursement DSB-1-NOPE/);
  await ledgerAudit(t, stack.env);
});
