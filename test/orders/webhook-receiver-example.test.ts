// The receiving examples in docs/examples/ (Node, PHP, Go), each run as a merchant would run it
// (node, php -S, go run), against real Kasir webhooks: each verifies the Standard Webhooks
// signature (id, timestamp and body) within its time window, acknowledges, and handles a
// retried delivery (same webhook-id) once; a forged request is 401, and so is a captured webhook
// replayed later or under a new id, each refusal logged on stderr with its reason; a sample is
// printed marked as one. PHP and Go come from Debian's php-cli and golang-go (the
// test preflight says so when they are missing).
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import t from 'tap';
import { freePort } from '../../scripts/lib/cluster.ts';
import { signBody, standardWebhooksSignature } from '../../db/signatures.ts';
import { ROOT } from '../../scripts/lib/local.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { call, eventually } from '../helpers/http.ts';
import { paidOrder } from '../helpers/money.ts';
import { startStack } from '../helpers/stack.ts';

const stack = await startStack(t, { groups: ['vendor', 'webhook'] });
// The form Kasir generates (--generate-webhook-secret): whsec_ and the base64 of 24 random bytes.
const secret = `whsec_${randomBytes(24).toString('base64')}`;
const examples = `${ROOT}docs/examples`;
const scratch = await mkdtemp(join(tmpdir(), 'kasir-receivers-'));
t.teardown(() => rm(scratch, { recursive: true, force: true }));

interface Receiver {
  port: number;
  events(): { id: string; event: string; sample: boolean; body: { ref_code: string; status: string; sample?: true } }[];
  /** What the example wrote on stderr, line by line. */
  logs(): string[];
}

/** Starts one example on a free port and collects the JSON lines it prints. */
async function startReceiver(t: { teardown(fn: () => unknown): void }, kind: 'node' | 'php' | 'go'): Promise<Receiver> {
  const port = await freePort();
  const env = { ...process.env, KASIR_WEBHOOK_SECRET: secret, PORT: String(port), HOME: scratch, GOCACHE: join(scratch, 'go-cache'), GOPATH: join(scratch, 'go') };
  const child: ChildProcess =
    kind === 'node' ? spawn(process.execPath, [`${examples}/webhook-receiver.mjs`], { cwd: examples, env, stdio: ['ignore', 'pipe', 'pipe'] })
    : kind === 'php' ? spawn('php', ['-S', `127.0.0.1:${port}`, 'webhook-receiver.php'], { cwd: examples, env, stdio: ['ignore', 'pipe', 'pipe'] })
    : spawn('go', ['run', 'webhook-receiver.go'], { cwd: examples, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  t.teardown(() => {
    try {
      if (kind === 'go') process.kill(-child.pid!, 'SIGTERM'); // go run's compiled child too
      else child.kill('SIGTERM');
    } catch {}
  });
  const lines: string[] = [];
  createInterface({ input: child.stdout! }).on('line', (line) => lines.push(line));
  const logs: string[] = [];
  createInterface({ input: child.stderr! }).on('line', (line) => logs.push(line));
  let exited: number | null = null;
  child.once('exit', (code) => (exited = code ?? 1));
  await eventually(async () => {
    if (exited !== null) throw new Error(`the ${kind} example exited (${exited})`);
    const res = await call(`http://127.0.0.1:${port}`, { path: '/kasir/webhooks', body: '{}' }).catch(() => null);
    return res?.status === 401 ? true : undefined;
  }, `the ${kind} example to listen`, 60_000);
  return {
    port,
    events: () => lines.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l)),
    logs: () => logs,
  };
}

for (const kind of ['node', 'php', 'go'] as const) {
  t.test(`${kind}: verifies, acknowledges, handles each delivery once, refuses forgeries and replays`, async (t) => {
    const receiver = await startReceiver(t, kind);
    const url = `http://127.0.0.1:${receiver.port}/kasir/webhooks`;
    const merchant = await makeMerchant(stack.api.ctx, { notifyUrl: url, webhookSecret: secret });
    const order = await paidOrder(stack, merchant, 75_000);
    const [paid] = await eventually(async () => {
      const found = receiver.events().filter((e) => e.body.ref_code === order.ref_code);
      return found.length ? found : undefined;
    }, `the ${kind} example to receive order.paid`);
    t.match(paid, { event: 'order.paid', sample: false, body: { ref_code: order.ref_code, status: 'PAID' } }, 'a real event, printed as one');

    // Kasir sends the same delivery again (as after a lost answer): handled once.
    const deliveries = await call(stack.api.url, { method: 'GET', path: '/v1/webhook-deliveries', headers: { 'x-api-key': merchant.api_key } });
    const delivery = deliveries.json.data.find((d: { resource: { ref_code: string } }) => d.resource.ref_code === order.ref_code);
    await call(stack.api.url, { path: `/v1/webhook-deliveries/${delivery.id}/resend`, headers: { 'x-api-key': merchant.api_key }, body: {} });
    await eventually(async () => {
      const res = await call(stack.api.url, { method: 'GET', path: `/v1/webhook-deliveries/${delivery.id}`, headers: { 'x-api-key': merchant.api_key } });
      return res.json.data.attempts === 2 && res.json.data.status === 'DELIVERED' ? true : undefined;
    }, 'the resend acknowledged');
    t.equal(receiver.events().filter((e) => e.id === paid.id).length, 1, 'the retried delivery was handled once');

    const forged = await call(`http://127.0.0.1:${receiver.port}`, { path: '/kasir/webhooks', headers: { 'x-signature': `sha256=${'0'.repeat(64)}`, 'webhook-id': 'msg_forged' }, body: { ref_code: 'ORD-1-FAKE', status: 'PAID' } });
    t.equal(forged.status, 401, 'a forged webhook is refused');
    t.notOk(receiver.events().some((e) => e.id === 'msg_forged'));
    await eventually(async () => receiver.logs().some((l) => l.includes('refused webhook msg_forged: missing webhook-id, webhook-timestamp or webhook-signature')) || undefined,
      `the ${kind} example to log the forged request's refusal`);

    // A captured delivery, as an attacker on the path holds it: its exact body and headers.
    const detail = await call(stack.api.url, { method: 'GET', path: `/v1/webhook-deliveries/${delivery.id}`, headers: { 'x-api-key': merchant.api_key } });
    const body: string = detail.json.data.body;
    const replay = (id: string, timestamp: number, signedId = id) => call(`http://127.0.0.1:${receiver.port}`, {
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
    await eventually(async () => {
      const logged = receiver.logs();
      return logged.some((l) => l.includes(`refused webhook ${delivery.id}: stale timestamp ${now - 600}`))
        && logged.some((l) => l.includes('refused webhook msg_new_id: bad signature')) ? true : undefined;
    }, `the ${kind} example to log each refusal with its reason`);
    t.equal((await replay(delivery.id, now - 60)).status, 200, 'within the window, its own id, it verifies...');
    t.equal(receiver.events().filter((e) => e.id === paid.id).length, 1, '...and is handled once: deduplicated on the signed id');
    t.notOk(receiver.events().some((e) => e.id === 'msg_new_id'));

    // A sample Kasir sends on request: verified like a delivery, printed marked as a sample.
    const asked = await call(stack.api.url, { path: '/v1/webhook-deliveries/samples', headers: { 'x-api-key': merchant.api_key }, body: { event: 'order.paid' } });
    t.equal(asked.status, 202, asked.text);
    const sample = await eventually(async () => receiver.events().find((e) => e.body.sample === true), `the ${kind} example to receive the sample`);
    t.match(sample, { event: 'order.paid', sample: true }, 'the sample is printed as a sample');
    t.notOk(receiver.events().some((e) => e.body.sample !== true && e.sample), 'no real event is printed as a sample');
  });
}
