// A client that lost a disbursement's answer finds what it made: the 409 of a repeated key names
// the disbursement, GET /v1/disbursements?idempotency_key= finds it, and the list filters by
// status and WIB day. The key may come as the Idempotency-Key header instead of the body's field
// (a repeat is the same 409); both sent must be equal.
import { randomUUID } from 'node:crypto';
import t from 'tap';
import { makeMerchant } from '../helpers/factories.ts';
import { call } from '../helpers/http.ts';
import { bankPayout } from '../helpers/merchant-api.ts';
import { fundWallet, ledgerAudit } from '../helpers/money.ts';
import { ops } from '../helpers/processes.ts';
import { startStack } from '../helpers/stack.ts';

const stack = await startStack(t, { groups: [] });
const pool = stack.api.ctx.pool;
type M = Awaited<ReturnType<typeof makeMerchant>>;
const post = (m: M, body: object, headers: Record<string, string> = {}) => call(stack.api.url, { path: '/v1/disbursements', headers: { 'x-api-key': m.api_key, ...headers }, body });
const list = (m: M, query: string) => call(stack.api.url, { method: 'GET', path: `/v1/disbursements?${query}`, headers: { 'x-api-key': m.api_key } });

t.test('the 409 names the disbursement; the key finds it; lists filter', async (t) => {
  const merchant = await makeMerchant(stack.api.ctx);
  const other = await makeMerchant(stack.api.ctx);
  await fundWallet(pool, merchant, 1_000_000);
  const key = `payout-${randomUUID()}`;
  const first = await post(merchant, { idempotency_key: key, ...bankPayout(10_000, '1234567890') });
  t.equal(first.status, 201, first.text);
  const made = first.json.data;

  const again = await post(merchant, { idempotency_key: key, ...bankPayout(10_000, '1234567890') });
  t.equal(again.status, 409);
  t.equal(again.json.error.code, 'DUPLICATE_IDEMPOTENCY_KEY');
  t.match(again.json.error.message, made.ref_code, 'the existing one named');
  t.match(again.json.error.details, { id: made.id, ref_code: made.ref_code, same_request: true }, 'and identified, as this same request');

  const found = await list(merchant, `idempotency_key=${encodeURIComponent(key)}`);
  t.same(found.json.data.map((d: { id: string }) => d.id), [made.id], 'found by its key');
  t.same((await list(other, `idempotency_key=${encodeURIComponent(key)}`)).json.data, [], "not another merchant's");
  t.equal((await list(merchant, `idempotency_key=${'x'.repeat(256)}`)).json?.error?.code, 'INVALID_BODY');

  // Above the review threshold: IN_REVIEW, where the first one is PENDING.
  t.equal((await ops(stack.env, 'merchant:set-fees', '--merchant', merchant.merchant_id, '--review-threshold', '15000')).code, 0);
  const reviewed = (await post(merchant, { idempotency_key: randomUUID(), ...bankPayout(20_000, '1234567890') })).json.data;
  t.equal(reviewed.status, 'IN_REVIEW');
  const inReview = await list(merchant, 'status=IN_REVIEW');
  t.same(inReview.json.data.map((d: { id: string }) => d.id), [reviewed.id], 'by status');
  t.equal(inReview.json.meta.total, 1);
  t.same((await list(merchant, 'status=PENDING')).json.data.map((d: { id: string }) => d.id), [made.id]);
  const today = new Date(Date.now() + 7 * 3600_000).toISOString().slice(0, 10);
  t.equal((await list(merchant, `date_from=${today}&date_to=${today}`)).json.meta.total, 2, 'today (WIB)');
  t.equal((await list(merchant, 'date_to=2020-01-01')).json.meta.total, 0, 'before they existed');
  t.equal((await list(merchant, 'status=LOST')).json?.error?.code, 'INVALID_BODY');

  // The wallet's history filters the same way: by movement type and WIB day.
  const history = (query: string) => call(stack.api.url, { method: 'GET', path: `/v1/balance-history?${query}`, headers: { 'x-api-key': merchant.api_key } });
  t.same((await history('type=DISBURSEMENT')).json.data.map((m: { reference_id: string }) => m.reference_id), [reviewed.id, made.id], 'both debits');
  t.equal((await history('type=ADJUSTMENT')).json.meta.total, 1, 'the float');
  t.equal((await history(`date_from=${today}`)).json.meta.total, 3);
  t.equal((await history('date_to=2020-01-01')).json.meta.total, 0);
  t.equal((await history('type=GIFT')).json?.error?.code, 'INVALID_BODY');
  t.equal((await list(merchant, 'date_from=2026-13-01')).json?.error?.code, 'INVALID_BODY');
  await ledgerAudit(t, stack.env);
});

t.test('the Idempotency-Key header carries the key when the body has none; both must be equal', async (t) => {
  const merchant = await makeMerchant(stack.api.ctx);
  await fundWallet(pool, merchant, 100_000);
  const mismatch = await post(merchant, { idempotency_key: 'a-1', ...bankPayout(1_000, '1234567890') }, { 'idempotency-key': 'a-2' });
  t.equal(mismatch.status, 400);
  t.match(mismatch.json.error, { code: 'INVALID_BODY', message: /idempotency_key "a-1" and the Idempotency-Key header "a-2" differ/ });
  const same = await post(merchant, { idempotency_key: 'a-1', ...bankPayout(1_000, '1234567890') }, { 'idempotency-key': 'a-1' });
  t.equal(same.status, 201, same.text);

  const key = `hdr-${randomUUID()}`;
  const byHeader = await post(merchant, bankPayout(2_000, '1234567890'), { 'idempotency-key': key });
  t.equal(byHeader.status, 201, byHeader.text);
  const found = await list(merchant, `idempotency_key=${key}`);
  t.same(found.json.data.map((d: { id: string }) => d.id), [byHeader.json.data.id], 'stored as the disbursement\'s idempotency_key');
  const repeat = await post(merchant, bankPayout(2_000, '1234567890'), { 'idempotency-key': key });
  t.equal(repeat.status, 409, 'a repeat by header is the same 409 as by body');
  t.equal(repeat.json.error.code, 'DUPLICATE_IDEMPOTENCY_KEY');

  const neither = await post(merchant, bankPayout(1_000, '1234567890'));
  t.equal(neither.status, 400);
  t.match(neither.json.error, { code: 'INVALID_BODY', message: /idempotency_key: is required.*Idempotency-Key header/ });
  const malformed = await post(merchant, bankPayout(1_000, '1234567890'), { 'idempotency-key': 'has space' });
  t.match(malformed.json.error, { code: 'INVALID_BODY', message: /Idempotency-Key/ });
  await ledgerAudit(t, stack.env);
});
