// A payout the vendor lost (accepted it, then answers that it has no such payout: the
// simulator's lost_payout fault) is on the operator's list as soon as the reconcile read says
// so: unresolved, its money held, nothing sent again; the worker logs that once, with no stack,
// and no further line for it however long it waits. The operator then settles it by hand.
import { randomUUID } from 'node:crypto';
import t from 'tap';
import { sql } from '../../db/pool.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { call, eventually } from '../helpers/http.ts';
import { bankPayout } from '../helpers/merchant-api.ts';
import { balanceOf, fundWallet, ledgerAudit } from '../helpers/money.ts';
import { ops } from '../helpers/processes.ts';
import { startLoggedProcess } from '../helpers/replicas.ts';
import { setFaults } from '../helpers/simulator.ts';
import { startStack } from '../helpers/stack.ts';

// The reconcile read comes a second after the vendor accepted it; the worker logs at info, as
// an operator runs it.
const stack = await startStack(t, { groups: [], env: { DISBURSEMENT_RECONCILE_DELAY_SECONDS: '1' } });
const worker = await startLoggedProcess(t, 'disbursement-1', 'workers/run.ts', ['disbursement'], { ...stack.env, LOG_LEVEL: 'info' });
const pool = stack.api.ctx.pool;

t.test('a lost payout waits for an operator at once, logged once; settled by hand', async (t) => {
  const merchant = await makeMerchant(stack.api.ctx);
  await fundWallet(pool, merchant, 300_000);
  await setFaults(stack.sim.url, { op: 'disburse', mode: 'lost_payout', count: 1 });
  const res = await call(stack.api.url, { path: '/v1/disbursements', headers: { 'x-api-key': merchant.api_key }, body: { idempotency_key: randomUUID(), ...bankPayout(100_000, '1234563333') } });
  t.equal(res.status, 201, res.text);
  const lost = res.json.data;

  await eventually(
    async () => ((await pool.oneFirst(sql.unsafe`select unresolved_at is not null from disbursements where id = ${lost.id}`)) ? true : undefined),
    `${lost.ref_code} unresolved`,
    30_000,
  );
  const list = await ops(stack.env, 'unresolved:list', '--json');
  const listed = (JSON.parse(list.stdout) as Array<{ ref_code: string }>).find((r) => r.ref_code === lost.ref_code);
  t.match(listed, { kind: 'DISBURSEMENT', vendor_code: 'sim', reason: /^LOST: sim accepted it as .+, then answered that it has no such payout$/ });
  t.equal(await pool.oneFirst(sql.unsafe`select status from disbursements where id = ${lost.id}`), 'ON_PROCESS', 'still in flight: nothing decided for the operator');
  t.equal(await balanceOf(stack, merchant), 300_000 - lost.total_debit, 'its money held');

  // Its reconcile job ends once parked: nothing left to retry, so no further line will come.
  await eventually(async () => {
    const open = await pool.oneFirst(sql.unsafe`
      select count(*)::int from pgboss.job where name = 'disbursement-reconcile' and data->>'disbursement_id' = ${lost.id} and state in ('created', 'retry', 'active')`);
    return open === 0 ? true : undefined;
  }, 'no reconcile job left for it');
  const about = worker.logs.filter((l) => JSON.stringify(l).includes(lost.ref_code) || JSON.stringify(l).includes(lost.id));
  t.equal(about.length, 1, `one line about it: ${JSON.stringify(about)}`);
  t.match(about[0], { level: 50, reference: lost.ref_code, msg: /unresolved: waiting for an operator/ });
  t.notOk(worker.logs.some((l) => l.msg === 'job failed'), 'no failed job, no stack');

  const settled = await ops(stack.env, 'payouts:settle', '--ref', lost.ref_code, '--outcome', 'FAILED', '--reason', 'the vendor has no record of it', '--evidence', 'ticket VND-77', '--json');
  t.equal(settled.code, 0, settled.stderr);
  t.equal(await balanceOf(stack, merchant), 300_000, 'the debit returned once');
  t.same(JSON.parse((await ops(stack.env, 'unresolved:list', '--json')).stdout), [], 'off the list');
  await ledgerAudit(t, stack.env);
});
