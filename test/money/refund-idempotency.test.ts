// Refunds take an Idempotency-Key (issue: a web process that died after the commit and before
// the answer made the client's retry refund the payer twice). The same key and body answer the
// first refund and move no money; another body is refused; concurrent repeats wait for the
// first; and a retry after the web process is killed between commit and answer gets the first
// refund back. Every test ends with the ledger audit.
import { randomUUID } from 'node:crypto';
import { connect } from 'node:net';
import t from 'tap';
import { sql } from '../../db/pool.ts';
import { freePort } from '../../scripts/lib/cluster.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { call, eventually } from '../helpers/http.ts';
import { balanceOf, ledgerAudit, paidOrder } from '../helpers/money.ts';
import { startProcess } from '../helpers/processes.ts';
import { startStack } from '../helpers/stack.ts';

const stack = await startStack(t, { groups: ['vendor', 'webhook'] });
const pool = stack.api.ctx.pool;
type M = Awaited<ReturnType<typeof makeMerchant>>;

function refund(url: string, merchant: M, ref: string, body: object, key?: string) {
  return call(url, { method: 'POST', path: `/v1/orders/${ref}/refund`, headers: { 'x-api-key': merchant.api_key, ...(key ? { 'idempotency-key': key } : {}) }, body });
}

const refundsOf = (ref: string) => pool.anyFirst(sql.unsafe`select r.id from refunds r join orders o on o.id = r.order_id where o.ref_code = ${ref}`);
const refundTransfers = (ref: string) =>
  pool.oneFirst(sql.unsafe`select count(*)::int from ledger_transfers where kind = 'REFUND' and reference_id in (select r.id from refunds r join orders o on o.id = r.order_id where o.ref_code = ${ref})`);

t.test('the same key and body answer the first refund; another body or another order is refused', async (t) => {
  const merchant = await makeMerchant(stack.api.ctx);
  const order = await paidOrder(stack, merchant, 100_000);
  const key = randomUUID();
  const first = await refund(stack.api.url, merchant, order.ref_code, { amount: 30_000, reason: 'damaged' }, key);
  t.equal(first.status, 201, first.text);
  const again = await refund(stack.api.url, merchant, order.ref_code, { amount: 30_000, reason: 'damaged' }, key);
  t.equal(again.status, 201);
  t.equal(again.text, first.text, 'the stored answer, byte for byte');
  t.equal(again.headers['idempotent-replayed'], 'true');
  t.equal(first.headers['idempotent-replayed'], undefined);
  const other = await refund(stack.api.url, merchant, order.ref_code, { amount: 20_000 }, key);
  t.equal(other.status, 400);
  t.equal(other.json?.error?.code, 'IDEMPOTENCY_KEY_REUSED');
  const second = await paidOrder(stack, merchant, 50_000);
  const elsewhere = await refund(stack.api.url, merchant, second.ref_code, { amount: 30_000, reason: 'damaged' }, key);
  t.equal(elsewhere.json?.error?.code, 'IDEMPOTENCY_KEY_REUSED', 'a key is one request on one endpoint');
  t.equal((await refundsOf(order.ref_code)).length, 1, 'one refund');
  t.equal(await refundTransfers(order.ref_code), 1, 'one REFUND transfer');
  t.equal((await refund(stack.api.url, merchant, order.ref_code, { amount: 1 }, 'bad key with spaces')).json?.error?.code, 'INVALID_BODY', 'a malformed key');
  await ledgerAudit(t, stack.env);
});

t.test('concurrent repeats of one key wait for the first: one refund, every answer the same', async (t) => {
  const merchant = await makeMerchant(stack.api.ctx);
  const order = await paidOrder(stack, merchant, 100_000);
  const key = randomUUID();
  const answers = await Promise.all(Array.from({ length: 8 }, () => refund(stack.api.url, merchant, order.ref_code, { amount: 10_000 }, key)));
  t.same(answers.map((a) => a.status), Array(8).fill(201));
  t.equal(new Set(answers.map((a) => a.json.data.id)).size, 1, 'one refund id');
  t.equal((await refundsOf(order.ref_code)).length, 1);
  t.equal(await balanceOf(stack, merchant), 99_300 - 10_000, 'debited once');
  await ledgerAudit(t, stack.env);
});

t.test('a refusal is not stored: the same key is judged again', async (t) => {
  const merchant = await makeMerchant(stack.api.ctx);
  const order = await paidOrder(stack, merchant, 100_000);
  const key = randomUUID();
  const tooMuch = await refund(stack.api.url, merchant, order.ref_code, { amount: 100_001 }, key);
  t.equal(tooMuch.json?.error?.code, 'AMOUNT_EXCEEDS_ORDER');
  const again = await refund(stack.api.url, merchant, order.ref_code, { amount: 100_001 }, key);
  t.equal(again.json?.error?.code, 'AMOUNT_EXCEEDS_ORDER', 'refused again, not replayed');
  t.equal(again.headers['idempotent-replayed'], undefined);
  await ledgerAudit(t, stack.env);
});

t.test('the web process is killed between commit and answer; the retry with the key gets the first refund', async (t) => {
  const merchant = await makeMerchant(stack.api.ctx);
  const order = await paidOrder(stack, merchant, 100_000);
  const port = await freePort();
  const env = { ...stack.env, PORT: String(port), PUBLIC_BASE_URL: `http://127.0.0.1:${port}` };
  const web = await startProcess(t, 'api/server.ts', [], env);
  const url = `http://127.0.0.1:${web.message.port}`;

  // The client writes the request and never gets to read an answer: whatever the process had
  // written when it died is lost with it, as on a real crash.
  const key = randomUUID();
  const body = JSON.stringify({ amount: 40_000, reason: 'returned' });
  const socket = connect(web.message.port, '127.0.0.1');
  socket.on('error', () => {}); // reset by the kill
  socket.write(
    `POST /v1/orders/${order.ref_code}/refund HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n`
    + `x-api-key: ${merchant.api_key}\r\nidempotency-key: ${key}\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
  await eventually(async () => ((await refundsOf(order.ref_code)).length === 1 ? true : undefined), 'the refund committed');
  await web.stop('SIGKILL');
  socket.destroy();

  const restarted = await startProcess(t, 'api/server.ts', [], env);
  const retry = await refund(`http://127.0.0.1:${restarted.message.port}`, merchant, order.ref_code, JSON.parse(body), key);
  t.equal(retry.status, 201, retry.text);
  t.equal(retry.headers['idempotent-replayed'], 'true');
  t.same(await refundsOf(order.ref_code), [retry.json.data.id], 'the retry answers the refund the dead process made');
  t.equal(await refundTransfers(order.ref_code), 1, 'the money moved once');
  t.equal(await balanceOf(stack, merchant), 99_300 - 40_000);
  await restarted.stop();
  await ledgerAudit(t, stack.env);
});
