// The pg-boss ceiling of the orders bench: the smallest program of the shape the product owner's
// design gives an order create, pg-boss included, so the orders figure can be read against what
// that shape could do at best on this machine and database.
//
//   node scripts/bench/pgboss-ceiling.ts web|worker    (DATABASE_URL, PORT, DB_POOL_SIZE, STUB_URL)
//
// - web: POST /v1/orders, in one transaction, inserts the order row and sends a pg-boss job for
//   it (boss.send with the transaction as its db); then waits for the row's "done"
//   notification on the process's one LISTEN connection and answers 201 (504 after 10 s).
// - worker: pg-boss's work loop with the settings of Kasir's vendor worker (NOTIFY wake-ups,
//   batches of 50, two fetch loops, back-to-back fetches while batches come back full); each
//   job calls the HTTP stub (scripts/bench/design-ceiling.ts stub, keep-alive), the batch is
//   confirmed in one statement that marks the rows done and NOTIFYs each, and pg-boss completes
//   the batch in one statement (a failure fails the whole batch: no per-job results).
// Its own two statements are named (prepared once per connection); pg-boss's are sent as
// pg-boss sends them. Each sends {listening, port} (or {ready}) over IPC, and stops on SIGTERM
// or when the parent goes.
import { Agent, createServer, request as httpRequest } from 'node:http';
import express from 'express';
import pg from 'pg';
import { PgBoss } from 'pg-boss';

const TABLE = 'bench_pgboss_orders';
const QUEUE = 'bench-pgboss-create';
const DONE = 'bench_pgboss_done';
const ANSWER_TIMEOUT_MS = 10_000;

const role = process.argv[2];
const url = process.env.DATABASE_URL ?? '';
const stops: Array<() => Promise<unknown> | unknown> = [];

async function stop() {
  for (const s of stops.reverse()) await Promise.resolve(s()).catch(() => undefined);
  process.exit(0);
}
process.on('SIGTERM', () => void stop());
process.on('SIGINT', () => void stop());
process.on('disconnect', () => void stop());

async function startBoss(worker: boolean): Promise<PgBoss> {
  const boss = new PgBoss({ connectionString: url, schema: 'pgboss', max: worker ? 6 : 4, useListenNotify: worker, supervise: worker, schedule: false, migrate: true });
  boss.on('error', () => undefined);
  await boss.start();
  // Both processes start at once: whichever creates the queue first, the other finds it.
  if (!(await boss.getQueue(QUEUE))) {
    await boss.createQueue(QUEUE, { retryLimit: 5, retryDelay: 1, expireInSeconds: 120, notify: true }).catch(async (err) => {
      if (!(await boss.getQueue(QUEUE))) throw err;
    });
  }
  stops.push(() => boss.stop({ graceful: false }));
  return boss;
}

if (role === 'web') {
  const pool = new pg.Pool({ connectionString: url, max: Number(process.env.DB_POOL_SIZE ?? 10) });
  pool.on('error', () => undefined);
  stops.push(() => pool.end());
  await pool.query(`create table if not exists ${TABLE} (
    id bigint generated always as identity primary key,
    merchant_order_id text not null,
    amount bigint not null,
    status text not null default 'new',
    result text,
    created_at timestamptz not null default now())`);
  const boss = await startBoss(false);
  const waiting = new Map<string, (result: string) => void>();
  const early = new Map<string, string>();
  const listener = new pg.Client({ connectionString: url });
  listener.on('error', () => undefined);
  await listener.connect();
  listener.on('notification', (n) => {
    const [id, ...rest] = (n.payload ?? '').split(':');
    const wake = waiting.get(id);
    if (wake) wake(rest.join(':'));
    else early.set(id, rest.join(':'));
  });
  await listener.query(`listen ${DONE}`);
  stops.push(() => listener.end());

  const app = express();
  app.disable('x-powered-by');
  app.use(express.json());
  app.post('/v1/orders', async (req, res) => {
    const body = req.body as { merchant_order_id?: unknown; amount?: unknown };
    const client = await pool.connect();
    let id: string;
    try {
      await client.query('begin');
      const { rows } = await client.query<{ id: string }>({
        name: 'insert-order',
        text: `insert into ${TABLE} (merchant_order_id, amount) values ($1, $2) returning id::text`,
        values: [String(body.merchant_order_id), Number(body.amount)],
      });
      id = rows[0].id;
      await boss.send(QUEUE, { id }, { db: { executeSql: (text: string, values?: unknown[]) => client.query(text, values) } });
      await client.query('commit');
    } catch (err) {
      await client.query('rollback').catch(() => undefined);
      client.release();
      return void res.status(500).json({ success: false, error: String(err) });
    }
    client.release();
    const result = early.has(id)
      ? early.get(id)!
      : await new Promise<string | null>((resolve) => {
          const timer = setTimeout(() => resolve(null), ANSWER_TIMEOUT_MS);
          waiting.set(id, (r) => {
            clearTimeout(timer);
            resolve(r);
          });
        });
    waiting.delete(id);
    early.delete(id);
    if (result === null) return void res.status(504).json({ success: false });
    res.status(201).json({ success: true, data: { id, merchant_order_id: body.merchant_order_id, result } });
  });
  const server = createServer(app);
  server.keepAliveTimeout = 65_000;
  stops.push(() => {
    server.close();
    server.closeAllConnections();
  });
  server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
    const address = server.address();
    process.send?.({ listening: true, port: typeof address === 'object' && address ? address.port : 0 });
  });
} else if (role === 'worker') {
  const pool = new pg.Pool({ connectionString: url, max: Number(process.env.DB_POOL_SIZE ?? 10) });
  pool.on('error', () => undefined);
  stops.push(() => pool.end());
  const agent = new Agent({ keepAlive: true, maxSockets: 100 });
  const stub = new URL(process.env.STUB_URL ?? 'http://127.0.0.1:9');
  const callStub = (id: string) =>
    new Promise<string>((resolve, reject) => {
      const req = httpRequest({ host: stub.hostname, port: stub.port, path: '/create', method: 'POST', agent, headers: { 'content-type': 'application/json' } }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve(text));
      });
      req.on('error', reject);
      req.end(JSON.stringify({ reference: id }));
    });
  const boss = await startBoss(true);
  await boss.work<{ id: string }>(
    QUEUE,
    { batchSize: 50, localConcurrency: 2, burstWhenBatchFull: true, pollingIntervalSeconds: 1, notifyPollingIntervalSeconds: 1 },
    async (jobs) => {
      const results = await Promise.all(jobs.map((job) => callStub(job.data.id)));
      await pool.query({
        name: 'confirm-orders',
        text: `with d as (update ${TABLE} t set status = 'done', result = r.result
                          from unnest($1::bigint[], $2::text[]) as r(id, result) where t.id = r.id returning t.id, t.result)
               select pg_notify('${DONE}', d.id || ':' || d.result) from d`,
        values: [jobs.map((j) => j.data.id), results],
      });
    },
  );
  process.send?.({ ready: true });
} else {
  process.stderr.write('usage: pgboss-ceiling.ts web|worker\n');
  process.exit(64);
}
