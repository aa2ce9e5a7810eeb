// The receiving example in docs/examples/webhook-receiver.mjs, run as a merchant would run it,
// against real Kasir webhooks: it verifies the Standard Webhooks signature (id, timestamp and
// body) within its time window, acknowledges, and handles a retried delivery (same webhook-id)
// once; a forged request is 401, and so is a captured webhook replayed later or under a new id.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import t from 'tap';
import { signBody, standardWebhooksSignature } from '../../db/signatures.ts';
import { ROOT } from '../../scripts/lib/local.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { call, eventually } from '../helpers/http.ts';
import { paidOrder } from '../helpers/money.ts';
import { startStack } from '../helpers/stack.ts';

const stack = await startStack(t, { groups: ['vendor', 'webhook'] });
const secret = 'whsec_exampleReceiverSecret0123456789abcdef';

const child = spawn(process.execPath, [`${ROOT}docs/examples/webhook-receiver.mjs`], { cwd: ROOT, env: { ...process.env, KASIR_WEBHOOK_SECRET: secret, PORT: '0' }, stdio: ['ignore', 'pipe', 'inherit'] });
t.teardown(() => void child.kill('SIGTERM'));
const lines: string[] = [];
const port = await new Promise<number>((resolve, reject) => {
  createInterface({ input: child.stdout! }).on('line', (line) => {
    lines.push(line);
    const m = /^listening on (\d+)$/.exec(line);
    if (m) resolve(Number(m[1]));
  });
  child.once('exit', (code) => reject(new Error(`the example exited (${code})`)));
});
const url = `http://127.0.0.1:${port}/kasir/webhooks`;
const events = () => lines.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { id: string; event: string; body: { ref_code: string; status: string } });

t.test('verifies, acknowledges and handles each delivery once', async (t) => {
  const merchant = await makeMerchant(stack.api.ctx, { notifyUrl: url, webhookSecret: secret });
  const order = await paidOrder(stack, merchant, 75_000);
  const [paid] = await eventually(async () => {
    const found = events().filter((e) => e.body.ref_code === order.ref_code);
    return found.length ? found : undefined;
  }, 'the example to receive order.paid');
  t.match(paid, { event: 'order.paid', body: { ref_code: order.ref_code, status: 'PAID' } });

  // Kasir sends the same delivery again (as after a lost answer): handled once.
  const deliveries = await call(stack.api.url, { method: 'GET', path: '/v1/webhook-deliveries', headers: { 'x-api-key': merchant.api_key } });
  const delivery = deliveries.json.data.find((d: { resource: { ref_code: string } }) => d.resource.ref_code === order.ref_code);
  await call(stack.api.url, { path: `/v1/webhook-deliveries/${delivery.id}/resend`, headers: { 'x-api-key': merchant.api_key }, body: {} });
  await eventually(async () => {
    const res = await call(stack.api.url, { method: 'GET', path: `/v1/webhook-deliveries/${delivery.id}`, headers: { 'x-api-key': merchant.api_key } });
    return res.json.data.attempts === 2 && res.json.data.status === 'DELIVERED' ? true : undefined;
  }, 'the resend acknowledged');
  t.equal(events().filter((e) => e.id === paid.id).length, 1, 'the retried delivery was handled once');

  const forged = await call(`http://127.0.0.1:${port}`, { path: '/kasir/webhooks', headers: { 'x-signature': `sha256=${'0'.repeat(64)}`, 'webhook-id': 'msg_forged' }, body: { ref_code: 'ORD-1-FAKE', status: 'PAID' } });
  t.equal(forged.status, 401, 'a forged webhook is refused');
  t.notOk(events().some((e) => e.id === 'msg_forged'));

  // A captured delivery, as an attacker on the path holds it: its exact body and headers.
  const detail = await call(stack.api.url, { method: 'GET', path: `/v1/webhook-deliveries/${delivery.id}`, headers: { 'x-api-key': merchant.api_key } });
  const body: string = detail.json.data.body;
  const replay = (id: string, timestamp: number, signedId = id) => call(`http://127.0.0.1:${port}`, {
    path: '/kasir/webhooks',
    body,
    headers: {
      'x-kasir-event': 'order.paid', 'x-signature': signBody(secret, body), 'webhook-id': id, 'webhook-timestamp': String(timestamp),
      'webhook-signature': standardWebhooksSignature(secret, signedId, timestamp, body),
    },
  });
  const now = Math.floor(Date.now() / 1000);
  t.equal((await replay('msg_new_id', now - 600, delivery.id)).status, 401, 'a 10-minute-old webhook under a new id is refused (the id is signed)');
  t.equal((await replay(delivery.id, now - 600)).status, 401, 'a 10-minute-old webhook under its own id is refused (the time window)');
  t.equal((await replay('msg_new_id', now, delivery.id)).status, 401, 'a fresh timestamp does not help without the secret');
  t.equal((await replay(delivery.id, now - 60)).status, 200, 'within the window, its own id, it verifies...');
  t.equal(events().filter((e) => e.id === paid.id).length, 1, '...and is handled once: deduplicated on the signed id');
  t.notOk(events().some((e) => e.id === 'msg_new_id'));
});
