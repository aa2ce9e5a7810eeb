// Prometheus metrics, scraped over HTTP from real processes: the API entry (api/server.ts) and
// the vendor, webhook and scheduler worker groups, each with its own METRICS_PORT (0: a free
// port, reported in the process's ready message). An order is created, paid and delivered,
// another expires; each process shows what it did, with route patterns (never raw paths) as
// labels, the database gauges, and output in the text format. GET /metrics is not on the API
// port, so a merchant's key reaches nothing.
import t from 'tap';
import { randomUUID } from 'node:crypto';
import { freePort } from '../../scripts/lib/cluster.ts';
import { parseConfig } from '../../db/config.ts';
import { afterCommit } from '../../db/metrics.ts';
import { sql } from '../../db/pool.ts';
import { sendJob } from '../../db/queue.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { call, eventually } from '../helpers/http.ts';
import { makeOverdue } from '../helpers/order-lifecycle.ts';
import { startProcess, startWorkerGroup } from '../helpers/processes.ts';
import { simulatePay, startCallbackReceiver } from '../helpers/simulator.ts';
import { startStack } from '../helpers/stack.ts';

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\["\\n])*)"(,|$)/y;
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);

/** Parses the Prometheus text format strictly; every line that does not fit is a problem. */
function parseExposition(text: string): { samples: Sample[]; problems: string[] } {
  const samples: Sample[] = [];
  const problems: string[] = [];
  const types = new Map<string, string>();
  const seen = new Set<string>();
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const type = /^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (\w+)$/.exec(line);
    if (type) {
      if (!TYPES.has(type[2])) problems.push(`unknown type: ${line}`);
      types.set(type[1], type[2]);
      continue;
    }
    if (/^# HELP [a-zA-Z_:][a-zA-Z0-9_:]* .*$/.test(line)) continue;
    const match = SAMPLE.exec(line);
    if (!match) {
      problems.push(`not a sample: ${line}`);
      continue;
    }
    const [, name, labelText = '', valueText] = match;
    const labels: Record<string, string> = {};
    LABEL.lastIndex = 0;
    while (LABEL.lastIndex < labelText.length) {
      const label = LABEL.exec(labelText);
      if (!label) {
        problems.push(`bad labels: ${line}`);
        break;
      }
      labels[label[1]] = label[2].replace(/\\(["\\n])/g, (_, c: string) => (c === 'n' ? '\n' : c));
    }
    // Prometheus reads values with Go's ParseFloat: NaN and Inf in any case (prom-client writes "Nan").
    const special = /^(nan|([+-]?)inf)$/i.exec(valueText);
    const value = special ? (special[2] === undefined ? NaN : special[2] === '-' ? -Infinity : Infinity) : Number(valueText);
    if (!special && (valueText === '' || Number.isNaN(value))) problems.push(`bad value: ${line}`);
    const family = types.has(name) ? name : name.replace(/_(bucket|sum|count)$/, '');
    if (!types.has(family)) problems.push(`sample before its # TYPE: ${line}`);
    const key = `${name}{${Object.entries(labels).sort().map(([k, v]) => `${k}=${v}`).join(',')}}`;
    if (seen.has(key)) problems.push(`duplicate series: ${line}`);
    seen.add(key);
    samples.push({ name, labels, value });
  }
  return { samples, problems };
}

function pick(samples: Sample[], name: string, labels: Record<string, string> = {}): Sample[] {
  return samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
}

/** The one value of a series, or undefined when the process does not have it (yet). */
function valueOf(samples: Sample[], name: string, labels: Record<string, string> = {}): number | undefined {
  const found = pick(samples, name, labels);
  return found.length === 1 ? found[0].value : undefined;
}

async function scrape(port: number): Promise<Sample[]> {
  const res = await call(`http://127.0.0.1:${port}`, { path: '/metrics' });
  if (res.status !== 200) throw new Error(`GET /metrics on ${port}: ${res.status} ${res.text}`);
  if (!String(res.headers['content-type']).startsWith('text/plain; version=0.0.4')) throw new Error(`content-type ${res.headers['content-type']}`);
  const { samples, problems } = parseExposition(res.text);
  if (problems.length) throw new Error(`unparseable metrics on ${port}:\n${problems.slice(0, 5).join('\n')}`);
  return samples;
}

/** Scrapes until `expect` holds for the samples (counters move after commits, gauges are cached). */
function scrapeUntil(port: number, what: string, expect: (s: Sample[]) => boolean, deadlineMs = 15_000) {
  return eventually(async () => {
    const samples = await scrape(port);
    return expect(samples) ? samples : undefined;
  }, what, deadlineMs);
}

// The stack gives the database, the simulator (routed) and factories; the API and workers under
// test are processes of their own, so their metrics listeners are the real ones.
const stack = await startStack(t, { groups: [] });
const apiPort = await freePort();
const env = { ...stack.env, PORT: String(apiPort), PUBLIC_BASE_URL: `http://127.0.0.1:${apiPort}`, METRICS_PORT: '0' };
const [api, vendor, webhook, scheduler] = await Promise.all([
  startProcess(t, 'api/server.ts', [], env),
  startWorkerGroup(t, 'vendor', env),
  startWorkerGroup(t, 'webhook', env),
  startWorkerGroup(t, 'scheduler', env),
]);
const apiUrl = `http://127.0.0.1:${api.message.port}`;
const ports = { api: api.message.metricsPort, vendor: vendor.message.metricsPort, webhook: webhook.message.metricsPort, scheduler: scheduler.message.metricsPort };

const receiver = await startCallbackReceiver();
t.teardown(() => receiver.close());
const merchant = await makeMerchant(stack.api.ctx, { notifyUrl: receiver.url });
const key = { 'x-api-key': merchant.api_key };

async function createOrder(merchantOrderId: string) {
  const res = await call(apiUrl, {
    path: '/v1/orders',
    headers: key,
    body: { merchant_order_id: merchantOrderId, amount: 150_000, payment_method: 'QRIS' },
  });
  if (res.status !== 201) throw new Error(`create: ${res.status} ${res.text}`);
  return res.json.data.ref_code as string;
}

function orderReaches(ref: string, status: string) {
  return eventually(async () => {
    const res = await call(apiUrl, { path: `/v1/orders/${ref}`, headers: key });
    return res.json?.data?.status === status ? true : undefined;
  }, `${ref} ${status}`);
}

t.test('each process serves its own metrics port, reported when it is ready', async (t) => {
  const all = Object.values(ports);
  t.ok(all.every((p) => Number.isInteger(p) && p > 0), `ports ${JSON.stringify(ports)}`);
  t.equal(new Set(all).size, all.length, 'one port per process');
  for (const [name, port] of Object.entries(ports)) {
    const samples = await scrape(port);
    t.ok(pick(samples, 'process_cpu_user_seconds_total').length === 1, `${name}: process metrics`);
    t.ok(pick(samples, 'nodejs_eventloop_lag_seconds').length === 1, `${name}: event loop lag`);
  }
});

t.test('an order created, paid and delivered, another expired: each process counts its part', async (t) => {
  const paidRef = await createOrder(`MET-${randomUUID()}`);
  const paid = await simulatePay(stack.sim.url, { reference: paidRef });
  t.equal(paid.status, 200);
  await orderReaches(paidRef, 'PAID');
  const expiringRef = await createOrder(`MET-${randomUUID()}`);
  await makeOverdue(stack, [expiringRef]);
  await orderReaches(expiringRef, 'EXPIRED');
  await receiver.waitFor(2, 10_000);

  const apiSamples = await scrapeUntil(ports.api, 'the payment in the API metrics', (s) => valueOf(s, 'kasir_orders_paid_total', { late: 'false' }) === 1);
  const httpCount = (method: string, route: string, status: string) =>
    valueOf(apiSamples, 'kasir_http_request_duration_seconds_count', { method, route, status });
  t.equal(httpCount('POST', '/v1/orders', '201'), 2, 'both creates, labelled with the route pattern');
  t.ok((httpCount('GET', '/v1/orders/:ref_code', '200') ?? 0) >= 2, 'reads under the pattern, not the ref code');
  t.equal(httpCount('POST', '/callbacks/:vendor', '200'), 1, 'the vendor callback');
  const routes = new Set(pick(apiSamples, 'kasir_http_request_duration_seconds_count').map((s) => s.labels.route));
  t.notOk([...routes].some((r) => r.includes('ORD-') || r.includes(paidRef)), `no raw paths among ${[...routes].join(' ')}`);
  const buckets = pick(apiSamples, 'kasir_http_request_duration_seconds_bucket', { method: 'POST', route: '/v1/orders', status: '201' });
  t.ok(buckets.length > 5 && buckets.some((b) => b.labels.le === '+Inf' && b.value === 2), 'histogram buckets up to +Inf');
  t.equal(valueOf(apiSamples, 'kasir_orders_paid_total', { late: 'true' }), 0, 'no late payment');
  t.equal(valueOf(apiSamples, 'kasir_ledger_transfers_total', { kind: 'ORDER_PAYMENT' }), 1, 'the payment posted once, after commit');

  const vendorSamples = await scrape(ports.vendor);
  t.equal(valueOf(vendorSamples, 'kasir_orders_created_total'), 2, 'vendor worker: orders created');
  t.equal(
    valueOf(vendorSamples, 'kasir_vendor_call_duration_seconds_count', { vendor: 'sim', operation: 'create_qris', outcome: 'ok' }),
    2,
    'vendor worker: calls by vendor, operation and outcome',
  );
  t.ok((valueOf(vendorSamples, 'kasir_vendor_call_duration_seconds_sum', { vendor: 'sim', operation: 'create_qris', outcome: 'ok' }) ?? 0) > 0, 'with their duration');
  t.equal(pick(vendorSamples, 'kasir_vendor_call_duration_seconds_count', { outcome: 'unknown' }).length, 0, 'no unknown outcome');

  const webhookSamples = await scrapeUntil(ports.webhook, 'both deliveries counted', (s) => valueOf(s, 'kasir_webhook_attempts_total', { outcome: 'delivered' }) === 2);
  t.equal(valueOf(webhookSamples, 'kasir_webhook_attempts_total', { outcome: 'retrying' }), 0);
  t.equal(valueOf(webhookSamples, 'kasir_webhook_attempts_total', { outcome: 'exhausted' }), 0);

  const schedulerSamples = await scrape(ports.scheduler);
  t.equal(valueOf(schedulerSamples, 'kasir_orders_expired_total'), 1, 'scheduler: the expired order');
  t.equal(valueOf(schedulerSamples, 'kasir_orders_created_total'), 0, 'counters are per process');
});

t.test('queue and state gauges are read from the database on scrape', async (t) => {
  // Nobody in this stack serves export-build, so a job sent there waits; a delayed reconcile is deferred.
  const boss = stack.api.ctx.boss;
  await sendJob(boss, 'export-build', { export_id: randomUUID() });
  await sendJob(boss, 'order-reconcile', { order_id: randomUUID() }, { startAfter: 3600 });
  const samples = await scrapeUntil(
    ports.vendor,
    'the waiting jobs in the gauges (cached for 5 s)',
    (s) =>
      valueOf(s, 'kasir_queue_jobs', { queue: 'export-build', state: 'ready' }) === 1 &&
      valueOf(s, 'kasir_queue_jobs', { queue: 'order-reconcile', state: 'deferred' }) === 1 &&
      (valueOf(s, 'kasir_queue_oldest_ready_job_age_seconds', { queue: 'export-build' }) ?? 0) > 0,
  );
  for (const state of ['ready', 'deferred', 'active', 'failed']) {
    t.equal(pick(samples, 'kasir_queue_jobs', { queue: 'webhook-deliver', state }).length, 1, `webhook-deliver ${state}`);
  }
  t.equal(valueOf(samples, 'kasir_queue_oldest_ready_job_age_seconds', { queue: 'webhook-deliver' }), 0, 'a drained queue has no age');
  t.equal(valueOf(samples, 'kasir_rows_in_state', { table: 'orders', status: 'CREATING' }), 0);
  t.equal(valueOf(samples, 'kasir_rows_in_state', { table: 'settlements', status: 'FAILED' }), 0);
  t.equal(valueOf(samples, 'kasir_rows_in_state_oldest_age_seconds', { table: 'disbursements', status: 'ON_PROCESS' }), 0);

  // A create attempt stuck in CREATING shows up with its age.
  await stack.api.ctx.pool.query(sql.unsafe`
    update orders set status = 'CREATING', updated_at = now() - interval '10 minutes'
    where ref_code = (select ref_code from orders where merchant_id = ${merchant.merchant_id} and status = 'EXPIRED' limit 1)`);
  const stuck = await scrapeUntil(ports.api, 'the stuck attempt in the API gauges', (s) => valueOf(s, 'kasir_rows_in_state', { table: 'orders', status: 'CREATING' }) === 1);
  t.ok((valueOf(stuck, 'kasir_rows_in_state_oldest_age_seconds', { table: 'orders', status: 'CREATING' }) ?? 0) >= 600, 'aged from updated_at');
});

t.test('metrics are operator-only: not on the API port, whatever key is sent', async (t) => {
  const attempts: Record<string, string>[] = [{}, key, { authorization: `Bearer ${merchant.api_key}` }];
  for (const headers of attempts) {
    const res = await call(apiUrl, { path: '/metrics', headers });
    t.equal(res.status, 404, `GET /metrics on the API port with ${Object.keys(headers).join(',') || 'nothing'}`);
    t.notMatch(res.text, /kasir_|process_cpu/, 'and no metric in the answer');
  }
  const onMetricsPort = await call(`http://127.0.0.1:${ports.api}`, { path: '/v1/orders', headers: key });
  t.equal(onMetricsPort.status, 404, 'the metrics port serves nothing of the API');
  const post = await call(`http://127.0.0.1:${ports.api}`, { method: 'POST', path: '/metrics', body: {} });
  t.equal(post.status, 404, 'GET only');
});

t.test('business counters move only when the transaction commits', async (t) => {
  const pool = stack.api.ctx.pool;
  let runs = 0;
  await pool.transaction(async (tx) => {
    afterCommit(tx, () => runs++);
    afterCommit(tx, () => runs++);
    t.equal(runs, 0, 'not before the commit');
  });
  t.equal(runs, 2, 'after it, each once');
  await t.rejects(
    pool.transaction(async (tx) => {
      afterCommit(tx, () => runs++);
      throw new Error('abort');
    }),
  );
  t.equal(runs, 2, 'never for a rollback');
  afterCommit(pool, () => runs++);
  t.equal(runs, 3, 'outside a transaction, at once');
});

t.test('METRICS_PORT: off unless set, a port when set', async (t) => {
  const base = { DATABASE_URL: 'postgres://u:p@127.0.0.1:5432/kasir', KASIR_MASTER_KEY: 'ab'.repeat(32) };
  t.equal(parseConfig(base).METRICS_PORT, undefined, 'unset: no listener');
  t.equal(parseConfig({ ...base, METRICS_PORT: '' }).METRICS_PORT, undefined, 'empty: no listener');
  t.equal(parseConfig({ ...base, METRICS_PORT: '9464' }).METRICS_PORT, 9464);
  t.equal(parseConfig({ ...base, METRICS_PORT: '0' }).METRICS_PORT, 0, '0: a free port');
  for (const bad of ['metrics', '70000', '-1']) t.throws(() => parseConfig({ ...base, METRICS_PORT: bad }), /METRICS_PORT/, `${bad} is refused`);
});
