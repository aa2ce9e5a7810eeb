// Payout callbacks find their payout by the kind recorded with the reference it went out
// under (db/payouts.ts, migration 016), never by the reference's shape: the one payout state
// machine (workers/payout-execute.ts) records every reference it sends.
import t from 'tap';
import { randomBytes, randomUUID } from 'node:crypto';
import { findPayoutReference } from '../../db/payouts.ts';
import { sql } from '../../db/pool.ts';
import { call, eventually } from '../helpers/http.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { fundWallet, ledgerAudit } from '../helpers/money.ts';
import { simulatorSignature } from '../helpers/order-lifecycle.ts';
import { startWorkerGroup } from '../helpers/processes.ts';
import { startStack } from '../helpers/stack.ts';

const stack = await startStack(t);
await startWorkerGroup(t, 'disbursement', stack.env);

function signedCallback(reference: string, status: 'SUCCESS' | 'FAILED') {
  const body = JSON.stringify({
    event_id: `evt_test_${randomBytes(6).toString('hex')}`,
    type: 'disbursement.updated',
    reference,
    id: `dsb_test_${randomBytes(6).toString('hex')}`,
    status,
    failure_reason: status === 'FAILED' ? 'TEST' : null,
  });
  return call(stack.api.url, { path: '/callbacks/sim', headers: { 'content-type': 'application/json', ...simulatorSignature(stack.sim.secret, body) }, body });
}

t.test('a disbursement sent to a vendor is recorded under its reference as a DISBURSEMENT and completed by it', async (t) => {
  const merchant = await makeMerchant(stack.api.ctx);
  await fundWallet(stack.api.ctx.pool, merchant, 500_000);
  const created = await call(stack.api.url, {
    path: '/v1/disbursements',
    headers: { 'x-api-key': merchant.api_key },
    body: { idempotency_key: randomUUID(), channel: 'BANK', bank_short_code: 'BCA', account_number: '1234567890', account_name: 'Budi Santoso', amount: 100_000 },
  });
  t.equal(created.status, 201, created.text);
  const { id, ref_code: ref } = created.json.data;
  const recorded = await eventually(() => findPayoutReference(stack.api.ctx.pool, ref).then((r) => r ?? undefined), `${ref} recorded`);
  t.same(recorded, { kind: 'DISBURSEMENT', payout_id: id, vendors: ['sim'] }, 'with the vendor it was sent to');
  await eventually(async () => {
    const status = await stack.api.ctx.pool.oneFirst(sql.unsafe`select status from disbursements where id = ${id}`);
    return status === 'SUCCESS' ? status : undefined;
  }, `${ref} SUCCESS`);
  const again = await signedCallback(ref, 'FAILED');
  t.equal(again.status, 200);
  t.equal(again.json?.data?.result, 'contradicted', 'a late contrary callback on the recorded payout changes nothing; it is recorded as a contradiction');
  await ledgerAudit(t, stack.env);
});

t.test('a callback for a reference Kasir never sent completes nothing, whatever it looks like', async (t) => {
  for (const reference of ['STL-20260101-999', 'DSB-000000-NOPE', 'anything-else']) {
    const before = await stack.api.ctx.pool.oneFirst(sql.unsafe`select count(*)::int from ledger_transfers`);
    const res = await signedCallback(reference, 'SUCCESS');
    t.equal(res.status, 200, 'acknowledged: retrying would not change the answer');
    t.equal(res.json?.data?.result, 'unknown', reference);
    t.equal(await stack.api.ctx.pool.oneFirst(sql.unsafe`select count(*)::int from ledger_transfers`), before, 'no money moved');
  }
  await ledgerAudit(t, stack.env);
});
