// Idempotency-Key on the creating V1 POSTs beyond orders, refunds and disbursements: a saved
// beneficiary, a report export and a team user. The same key and body answer the first request
// byte for byte (Idempotent-Replayed: true) and create nothing more; another body is refused.
import { randomUUID } from 'node:crypto';
import t from 'tap';
import { sql } from '../../db/pool.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { call } from '../helpers/http.ts';
import { startStack } from '../helpers/stack.ts';

const stack = await startStack(t, { groups: [] });
const pool = stack.api.ctx.pool;

const cases: Array<{ what: string; path: string; body: () => object; other: object; count: (merchantId: string) => Promise<unknown> }> = [
  {
    what: 'a beneficiary',
    path: '/v1/beneficiaries',
    body: () => ({ channel: 'BANK', bank_short_code: 'BCA', account_number: '1234567890', account_name: 'Budi Santoso' }),
    other: { channel: 'BANK', bank_short_code: 'BCA', account_number: '1234567891', account_name: 'Budi Santoso' },
    count: (m) => pool.oneFirst(sql.unsafe`select count(*)::int from beneficiaries where merchant_id = ${m}`),
  },
  {
    what: 'a report export',
    path: '/v1/reports/export',
    body: () => ({ type: 'orders', date_from: '2026-01-01' }),
    other: { type: 'orders', date_from: '2026-02-01' },
    count: (m) => pool.oneFirst(sql.unsafe`select count(*)::int from exports where merchant_id = ${m}`),
  },
  {
    what: 'a team user',
    path: '/v1/my/users',
    body: () => ({ full_name: 'Siti Rahayu', email: 'siti@toko.example', role: 'viewer' }),
    other: { full_name: 'Siti Rahayu', email: 'siti2@toko.example', role: 'viewer' },
    count: (m) => pool.oneFirst(sql.unsafe`select count(*)::int from merchant_users where merchant_id = ${m}`),
  },
];

for (const c of cases) {
  t.test(`${c.what}: the same key and body answer the first; another body is refused`, async (t) => {
    const merchant = await makeMerchant(stack.api.ctx);
    const key = randomUUID();
    const send = (body: object, k = key) => call(stack.api.url, { path: c.path, headers: { 'x-api-key': merchant.api_key, 'idempotency-key': k }, body });
    const first = await send(c.body());
    t.equal(first.status, 201, first.text);
    const again = await send(c.body());
    t.equal(again.status, 201);
    t.equal(again.text, first.text, 'the stored answer');
    t.equal(again.headers['idempotent-replayed'], 'true');
    t.equal(await c.count(merchant.merchant_id), 1, 'created once');
    const other = await send(c.other);
    t.equal(other.json?.error?.code, 'IDEMPOTENCY_KEY_REUSED');
    t.equal(await c.count(merchant.merchant_id), 1, 'nothing more');
    const fresh = await send(c.other, randomUUID());
    t.equal(fresh.status, 201, 'another key is another request');
  });
}
