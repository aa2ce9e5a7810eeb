// The create handler (workers/order-create.ts) when its attempt stops being one while the vendor
// works: another attempt of the same job (retried elsewhere) confirms the order first. The QR
// this call made is not taken, the order keeps the first confirmation, and the handler's answer,
// which becomes the job's output in jobs:list, says the attempt was superseded instead of
// claiming a confirmation. The handler is called directly, on the stack's simulator (a latency
// fault holds its create call open), so the other confirmation lands at a known moment.
import t from 'tap';
import { z } from 'zod';
import { confirmOrder } from '../../db/orders.ts';
import { findOrderById, insertOrder } from '../../db/orders.sql.ts';
import { sql } from '../../db/pool.ts';
import type { WorkerContext } from '../../workers/context.ts';
import { handleOrderCreate } from '../../workers/order-create.ts';
import { makeMerchant, newAttempt } from '../helpers/factories.ts';
import { eventually } from '../helpers/http.ts';
import { clearFaults, setFaults } from '../helpers/simulator.ts';
import { startStack } from '../helpers/stack.ts';

const stack = await startStack(t, { groups: [] });
const pool = stack.api.ctx.pool;
const ctx: WorkerContext = { config: stack.api.ctx.config, pool, replica: stack.api.ctx.replica, boss: stack.api.ctx.boss, sealer: stack.api.ctx.sealer };
const attemptRow = z.object({ status: z.string(), pending_vendor: z.string().nullable(), vendor_order_id: z.string().nullable() });
const attemptOf = (id: string) => pool.one(sql.type(attemptRow)`select status, pending_vendor, vendor_order_id from orders where id = ${id}`);

t.test('an attempt confirmed elsewhere during the vendor call: the handler answers superseded, the order keeps the first confirmation', async (t) => {
  t.teardown(() => clearFaults(stack.sim.url));
  const merchant = await makeMerchant(stack.api.ctx);
  const attempt = await insertOrder(pool, newAttempt(merchant.merchant_id));
  t.ok(attempt, 'a CREATING attempt');
  // Under the tests' vendor timeout (1.5 s): the call is slow, not unanswered.
  await setFaults(stack.sim.url, [{ op: 'createQris', mode: 'latency', latency_ms: 800, count: 1 }]);

  const handled = handleOrderCreate(ctx, { order_id: attempt!.id, merchant_id: merchant.merchant_id });
  await eventually(async () => ((await attemptOf(attempt!.id)).pending_vendor === 'sim' ? true : undefined), 'the create call to be on its way to sim');
  // The other attempt of the job, quicker: it confirms the order while this call waits.
  const row = (await findOrderById(pool, attempt!.id))!;
  t.equal(await confirmOrder(pool, row, { vendorCode: 'sim', vendorOrderId: 'first', qrisString: 'first-qris' }, 'vendor-worker', stack.env.PUBLIC_BASE_URL), 'confirmed');

  t.same(await handled, { superseded: 'sim' }, 'the late QR is reported as not taken, not as a confirmation');
  const after = await attemptOf(attempt!.id);
  t.equal(after.status, 'PENDING');
  t.equal(after.vendor_order_id, 'first', 'the order keeps the confirmation that came first');
});
