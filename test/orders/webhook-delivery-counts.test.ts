// GET /v1/webhook-deliveries takes meta.total from the kept counts (webhook_delivery_counts,
// migration 104), so the counts must follow every way a delivery is written: inserted many at
// once, re-statused in a batch (sent, failed, reopened by a resend), updated without a status
// change, deleted as the retention pass deletes. After each, the kept counts equal a count of the
// rows, per merchant, status and event, and the list's total with every filter equals it too.
import t from 'tap';
import { z } from 'zod';
import { sql } from '../../db/pool.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { call } from '../helpers/http.ts';
import { startStack } from '../helpers/stack.ts';

const stack = await startStack(t, { groups: [] });
const pool = stack.api.ctx.pool;

const countRow = z.object({ merchant_id: z.string(), status: z.string(), event: z.string(), n: z.number() });

t.test('the kept counts follow inserts, batch status changes, resends and deletes; the list total reads them', async (t) => {
  const a = await makeMerchant(stack.api.ctx);
  const b = await makeMerchant(stack.api.ctx);
  const merchants = [a.merchant_id, b.merchant_id];

  const check = async (when: string) => {
    const counted = await pool.any(sql.type(countRow)`
      select merchant_id, status, event, count(*)::int as n from webhook_deliveries
      where merchant_id = any(${sql.array(merchants, 'uuid')}) group by 1, 2, 3 order by 1, 2, 3`);
    const kept = await pool.any(sql.type(countRow)`
      select merchant_id, status, event, sum(n)::int as n from webhook_delivery_counts
      where merchant_id = any(${sql.array(merchants, 'uuid')}) group by 1, 2, 3 having sum(n) <> 0 order by 1, 2, 3`);
    t.same(kept, counted, `${when}: the kept counts equal the rows`);
    for (const m of [a, b]) {
      for (const query of ['', 'status=DELIVERED', 'status=PENDING', 'event=order.paid', 'status=FAILED&event=order.expired']) {
        const res = await call(stack.api.url, { path: `/v1/webhook-deliveries?limit=1&${query}`, headers: { 'x-api-key': m.api_key } });
        const params = new URLSearchParams(query);
        const expected = counted
          .filter((c) => c.merchant_id === m.merchant_id && (!params.get('status') || c.status === params.get('status')) && (!params.get('event') || c.event === params.get('event')))
          .reduce((sum, c) => sum + c.n, 0);
        if (res.status !== 200 || res.json.meta.total !== expected) t.fail(`${when}: ?${query} for ${m.merchant_id}: total ${res.json?.meta?.total}, rows ${expected} (${res.status})`);
      }
    }
    t.pass(`${when}: every filter's total is the rows'`);
  };

  // 300 deliveries in one statement, over both merchants, two events.
  await pool.query(sql.unsafe`
    insert into webhook_deliveries (merchant_id, event, url, body)
    select case when i % 3 = 0 then ${b.merchant_id}::uuid else ${a.merchant_id}::uuid end,
           case when i % 2 = 0 then 'order.paid' else 'order.expired' end,
           'https://merchant.example.test/hook', '{}'
    from generate_series(1, 300) as i`);
  await check('after a 300-row insert');

  // A batch records its attempts: most sent, some failed, in one statement.
  await pool.query(sql.unsafe`
    update webhook_deliveries set status = case when get_byte(uuid_send(id), 0) % 5 = 0 then 'FAILED' else 'DELIVERED' end,
                                  attempts = attempts + 1, delivered_at = now()
    where merchant_id = any(${sql.array(merchants, 'uuid')})`);
  await check('after a batch of outcomes');

  // Updates that change no status (a retry's schedule) move nothing.
  await pool.query(sql.unsafe`update webhook_deliveries set next_attempt_at = now() + interval '1 minute' where merchant_id = ${a.merchant_id}`);
  await check('after updates without a status change');

  // A resend reopens failed ones.
  await pool.query(sql.unsafe`update webhook_deliveries set status = 'PENDING' where merchant_id = ${a.merchant_id} and status = 'FAILED'`);
  await check('after a resend of the failed ones');

  // The retention pass deletes ended deliveries in batches.
  await pool.query(sql.unsafe`
    delete from webhook_deliveries where id in (
      select id from webhook_deliveries where merchant_id = any(${sql.array(merchants, 'uuid')}) and status = 'DELIVERED' limit 120)`);
  await check('after a retention batch');
});
