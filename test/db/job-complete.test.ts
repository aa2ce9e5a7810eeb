// The vendor worker's confirmation completes the order-create jobs of the attempts it confirms,
// in its own statement (db/orders.sql.ts confirmAttempts with db/job-complete.ts): the job ends
// as pg-boss's own complete leaves it, column for column, and only a job still held at the
// attempt the worker fetched, of an attempt this statement confirmed, is completed.
import { randomUUID } from 'node:crypto';
import t from 'tap';
import type { Job } from 'pg-boss';
import { completionFor } from '../../db/job-complete.ts';
import { jobsFor } from '../../db/job-insert.ts';
import { ORDER_OUTCOME_CHANNEL } from '../../db/orders.ts';
import { confirmAttempts, insertOrderAndQueue, type Confirmation } from '../../db/orders.sql.ts';
import { upsertVendor } from '../../db/vendors.ts';
import { queueTestbed } from '../helpers/db.ts';
import { newAttempt } from '../helpers/factories.ts';

const { pool, boss, client, sealer, merchantId } = await queueTestbed(t);
for (const code of ['sim', 'simb']) await upsertVendor(pool, sealer, { code, kind: 'simulator', baseUrl: 'http://127.0.0.1:9', credentials: {} });
const completion = await completionFor(boss, 'order-create');

/** A CREATING attempt and its order-create job, fetched by a worker: as the vendor worker holds it. */
async function heldAttempt(key: string | null = null): Promise<{ orderId: string; job: Job<unknown> }> {
  const o = newAttempt(merchantId);
  const claim = key === null ? null : { merchantId, key, requestHash: Buffer.alloc(32, 7) };
  await insertOrderAndQueue(pool, claim, o, (await jobsFor(boss, 'order-create'))('inserted', [{ order_id: o.id, merchant_id: merchantId }]));
  const [job] = await boss.fetch('order-create', { batchSize: 1 });
  t.equal((job.data as { order_id: string }).order_id, o.id, 'the fetched job is the attempt just made');
  return { orderId: o.id, job };
}

const confirmation = (orderId: string, vendorCode = 'sim'): Confirmation => ({
  orderId,
  vendorCode,
  vendorOrderId: `v-${orderId}`,
  qrisString: 'qris',
  source: 'vendor-worker',
  detail: { vendor: vendorCode },
  responseBody: JSON.stringify({ vendor: vendorCode }),
});
const settling = (c: Confirmation, job: Job<unknown>): Confirmation => ({ ...c, settle: { completion, id: job.id, retryCount: job.retryCount } });
const jobRow = async (id: string) => (await client.query(`select * from pgboss.job where id = $1`, [id])).rows[0];
const orderRow = async (id: string) => (await client.query(`select status, updated_at from orders where id = $1`, [id])).rows[0];

t.test("completes the job as pg-boss's complete does, in the confirmation's transaction", async (t) => {
  const ours = await heldAttempt();
  const theirs = await heldAttempt();
  t.same(await confirmAttempts(pool, [settling(confirmation(ours.orderId), ours.job)], ORDER_OUTCOME_CHANNEL), [{ confirmed: true, settled: true }]);
  t.same(await confirmAttempts(pool, [confirmation(theirs.orderId)], ORDER_OUTCOME_CHANNEL), [{ confirmed: true, settled: false }], 'without a job to settle, none is');
  await boss.complete('order-create', [{ id: theirs.job.id, retryCount: theirs.job.retryCount }], { confirmed: 'sim' });

  const mine = await jobRow(ours.job.id);
  const reference = await jobRow(theirs.job.id);
  const differ = ['id', 'data', 'created_on', 'start_after', 'started_on', 'heartbeat_on', 'completed_on', 'keep_until'];
  for (const column of Object.keys(reference).filter((c) => !differ.includes(c))) {
    t.same(mine[column], reference[column], `${column} as pg-boss's complete leaves it`);
  }
  t.equal(mine.state, 'completed');
  t.same(mine.output, { confirmed: 'sim' }, 'the output the worker would have given');
  // job_now() and the order's now() are the same transaction's clock only if they committed together.
  t.equal(mine.completed_on.getTime(), (await orderRow(ours.orderId)).updated_at.getTime(), 'completed in the same transaction as the confirmation');
  t.not(reference.completed_on.getTime(), (await orderRow(theirs.orderId)).updated_at.getTime(), 'a separate complete has its own clock');
});

t.test('confirmations of different vendors in one statement: each job gets its own output', async (t) => {
  const a = await heldAttempt();
  const b = await heldAttempt();
  const c = await heldAttempt();
  const results = await confirmAttempts(
    pool,
    [settling(confirmation(a.orderId, 'sim'), a.job), settling(confirmation(b.orderId, 'simb'), b.job), confirmation(c.orderId, 'sim')],
    ORDER_OUTCOME_CHANNEL,
  );
  t.same(results, [{ confirmed: true, settled: true }, { confirmed: true, settled: true }, { confirmed: true, settled: false }]);
  t.same((await jobRow(a.job.id)).output, { confirmed: 'sim' });
  t.same((await jobRow(b.job.id)).output, { confirmed: 'simb' });
  t.equal((await jobRow(c.job.id)).state, 'active', 'the job given no settle stays for the work loop');
});

t.test('a job retried elsewhere meanwhile (another attempt of it) is not completed; the order is still confirmed', async (t) => {
  const { orderId, job } = await heldAttempt();
  // The supervisor found its heartbeat stale and another worker fetched it again: a new attempt.
  await client.query(`update pgboss.job set retry_count = retry_count + 1 where id = $1`, [job.id]);
  t.same(await confirmAttempts(pool, [settling(confirmation(orderId), job)], ORDER_OUTCOME_CHANNEL), [{ confirmed: true, settled: false }]);
  t.equal((await orderRow(orderId)).status, 'PENDING', 'the attempt is confirmed');
  const row = await jobRow(job.id);
  t.equal(row.state, 'active', "the other attempt's job is left to its own worker");
  t.equal(row.output, null);
});

t.test('an attempt not confirmed (no longer CREATING): its job is not completed either', async (t) => {
  const { orderId, job } = await heldAttempt();
  await confirmAttempts(pool, [confirmation(orderId)], ORDER_OUTCOME_CHANNEL);
  t.same(await confirmAttempts(pool, [settling(confirmation(orderId), job)], ORDER_OUTCOME_CHANNEL), [{ confirmed: false, settled: false }]);
  t.equal((await jobRow(job.id)).state, 'active', 'left for the work loop, which settles what the handler returns');
});

t.test('two attempts of one job confirming in one batch: one confirmation counts; the attempt still held completes the job, and only it is told so', async (t) => {
  const key = randomUUID();
  const { orderId, job } = await heldAttempt(key);
  // Retried elsewhere while this attempt's vendor call ran: the job's current attempt is the next one.
  await client.query(`update pgboss.job set retry_count = retry_count + 1 where id = $1`, [job.id]);
  const current = { ...job, retryCount: job.retryCount + 1 };
  const results = await confirmAttempts(
    pool,
    [settling(confirmation(orderId, 'sim'), job), settling(confirmation(orderId, 'simb'), current)],
    ORDER_OUTCOME_CHANNEL,
  );
  t.same(results.map((r) => r.confirmed), [true, false], 'only the confirmation the order took is told it confirmed');
  t.same(results.map((r) => r.settled), [false, true], 'the stale attempt is not told its job was completed; the current one is');
  const row = await jobRow(job.id);
  t.equal(row.state, 'completed');
  // One confirmation of the order counts, the first in the batch: the order, its one event and
  // the job's output all name its vendor.
  const order = (await client.query(`select vendor_code from orders where id = $1`, [orderId])).rows[0];
  t.equal(order.vendor_code, 'sim', 'the order takes the first confirmation');
  const events = (await client.query(`select detail from order_events where order_id = $1 and event = 'order.created'`, [orderId])).rows;
  t.same(events.map((e) => e.detail), [{ vendor: 'sim' }], 'one order.created event, of that confirmation');
  t.same(row.output, { confirmed: 'sim' }, 'the job output names the vendor the order took');
  const answer = (await client.query(`select response_body from idempotency_keys where merchant_id = $1 and key = $2`, [merchantId, key])).rows[0];
  t.same(JSON.parse(answer.response_body), { vendor: 'sim' }, "the key's stored answer is that confirmation's");
});
