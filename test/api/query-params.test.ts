// Every list and report knows its query parameters (issue 35): one it does not know is 400
// INVALID_BODY naming it and the known name it was probably meant to be, as unknown body fields
// are, never a filter silently ignored; and a NUL character in any value is 400, never a 500.
import t from 'tap';
import { makeMerchant } from '../helpers/factories.ts';
import { startStack } from '../helpers/stack.ts';
import { orderApi, uniqueId } from '../helpers/v1-orders.ts';

const stack = await startStack(t);
const ctx = stack.api.ctx;
const api = orderApi(stack);

const merchant = await makeMerchant(ctx);
const created = await api.create(merchant.api_key, { merchant_order_id: uniqueId(), amount: 25_000, payment_method: 'QRIS' });
if (created.status !== 201) throw new Error(`create failed: ${created.status} ${created.text}`);
const ref = created.json.data.ref_code;

// Each list or report, a parameter it takes (to misspell), and the name a misspelling should suggest.
const LISTS: Array<{ path: string; known?: string }> = [
  { path: '/v1/orders', known: 'merchant_order_id' },
  { path: `/v1/orders/${ref}/events` },
  { path: `/v1/orders/${ref}/refunds`, known: 'status' },
  { path: '/v1/refunds', known: 'date_from' },
  { path: '/v1/balance' },
  { path: '/v1/balance-history', known: 'type' },
  { path: '/v1/disbursements', known: 'idempotency_key' },
  { path: '/v1/disbursements/imports', known: 'limit' },
  { path: '/v1/beneficiaries' },
  { path: '/v1/settlements', known: 'page' },
  { path: '/v1/reports/profits', known: 'date_to' },
  { path: '/v1/reports/exports', known: 'limit' },
  { path: '/v1/webhook-deliveries', known: 'event' },
  { path: '/v1/my/users' },
  { path: '/v1/banks' },
  { path: '/v1/ewallets' },
];

/** `date_from` → `date_form`, `limit` → `limti`: a transposition, as a hurried hand types it. */
function misspelt(name: string): string {
  const i = name.length - 3;
  return name.slice(0, i) + name[i + 1] + name[i] + name.slice(i + 2);
}

t.test('each list answers 200 to what it knows', async (t) => {
  for (const { path } of LISTS) {
    const res = await api.get(merchant.api_key, path);
    t.equal(res.status, 200, `${path}: ${res.text.slice(0, 200)}`);
  }
});

t.test('an unknown query parameter is 400 INVALID_BODY naming it, and the close known name', async (t) => {
  for (const { path, known } of LISTS) {
    const res = await api.get(merchant.api_key, `${path}?sort=newest`);
    t.equal(res.status, 400, `${path}?sort=newest is refused`);
    t.equal(res.json?.error?.code, 'INVALID_BODY', `${path}: INVALID_BODY`);
    t.match(res.json?.error?.message, /^Received unknown query parameter: sort;/, `${path}: the message names sort`);
    if (known) {
      const typo = misspelt(known);
      const near = await api.get(merchant.api_key, `${path}?${typo}=1`);
      t.equal(near.status, 400, `${path}?${typo} is refused`);
      t.match(near.json?.error?.message, `${typo} (did you mean ${known}?)`, `${path}: suggests ${known}`);
    }
  }
});

t.test('the filters the issue found ignored are refused under their wrong names', async (t) => {
  const res = await api.get(merchant.api_key, '/v1/orders?merchant_order=INV-1');
  t.equal(res.status, 400);
  t.match(res.json.error.message, 'merchant_order (did you mean merchant_order_id?)');
  const two = await api.get(merchant.api_key, '/v1/balance-history?kind=REFUND&datefrom=2026-01-01');
  t.match(two.json.error.message, /^Received unknown query parameters: kind, datefrom \(did you mean date_from\?\)/);
});

t.test('a NUL character in any query value is 400, never a 500', async (t) => {
  const probes = [
    '/v1/disbursements?idempotency_key=%00',
    '/v1/orders?merchant_order_id=%00',
    '/v1/orders?merchant_order_id=INV%00X',
    '/v1/webhook-deliveries?event=%00',
    '/v1/refunds?status=PAID%00',
    '/v1/balance-history?type=%00',
    '/v1/reports/profits?from=%00',
  ];
  for (const path of probes) {
    const res = await api.get(merchant.api_key, path);
    t.equal(res.status, 400, `${path}: ${res.status}`);
    t.equal(res.json?.error?.code, 'INVALID_BODY');
  }
});

t.test('profits takes its period as from/to or date_from/date_to, not both', async (t) => {
  const short = await api.get(merchant.api_key, '/v1/reports/profits?from=2026-01-01&to=2026-01-31');
  t.equal(short.status, 200);
  t.equal(short.json.data.date_from, '2026-01-01', 'from is honoured');
  t.equal(short.json.data.date_to, '2026-01-31', 'to is honoured');
  const both = await api.get(merchant.api_key, '/v1/reports/profits?from=2026-01-01&date_from=2026-01-01');
  t.equal(both.status, 400);
});
