// The design ceiling of the orders bench: the smallest program of Kasir's shape, so the orders
// figure can be read against what this design (a web process, a queue in Postgres, a worker
// calling a vendor over HTTP, the answer woken by a notification) could do at best here.
//
//   node scripts/bench/design-ceiling.ts web|worker|stub    (DATABASE_URL, PORT, DB_POOL_SIZE,
//                                                            STUB_URL for the worker)
//
// - web: POST /v1/orders inserts a row and NOTIFYs, in one statement; the answer waits for the
//   row's "done" notification on the process's one LISTEN connection (504 after 10 s).
// - worker: LISTENs; on each notification (and once at start) claims batches with
//   FOR UPDATE SKIP LOCKED, calls the stub once per row (all of a batch at once, keep-alive),
//   marks the batch done and NOTIFYs each row, until a claim finds nothing.
// - stub: answers every POST with a small JSON body, like a vendor's create.
// Each sends {listening, port} (or {ready}) over IPC, and stops on SIGTERM or when the parent goes.
import { createServer, Agent, request as httpRequest } from 'node:http';
import express from 'express';
import pg from 'pg';

const TABLE = 'bench_design_orders';
const NEW = 'bench_design_new';
const DONE = 'bench_design_done';
const BATCH = 50;
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

function listen(server: ReturnType<typeof createServer>) {
  server.keepAliveTimeout = 65_000;
  stops.push(() => {
    server.close();
    server.closeAllConnections();
  });
  server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
    const address = server.address();
    process.send?.({ listening: true, port: typeof address === 'object' && address ? address.port : 0 });
  });
}

async function listener(channel: string, onNotify: (payload: string) => void): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => undefined);
  await client.connect();
  client.on('notification', (n) => onNotify(n.payload ?? ''));
  await client.query(`listen ${channel}`);
  stops.push(() => client.end());
  return client;
}

if (role === 'stub') {
  listen(
    createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(201, { 'content-type': 'application/json' });
        res.end('{"id":"qr_stub","qris_string":"000201010212"}');
      });
    }),
  );
} else if (role === 'web') {
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
  await pool.query(`create index if not exists ${TABLE}_new_idx on ${TABLE} (id) where status = 'new'`);
  const waiting = new Map<string, (result: string) => void>();
  // A "done" that arrives before its request got back from the insert waits here for it.
  const early = new Map<string, string>();
  await listener(DONE, (payload) => {
    const [id, ...rest] = payload.split(':');
    const wake = waiting.get(id);
    if (wake) wake(rest.join(':'));
    else early.set(id, rest.join(':'));
  });
  const app = express();
  app.disable('x-powered-by');
  app.use(express.json());
  app.post('/v1/orders', async (req, res) => {
    const body = req.body as { merchant_order_id?: unknown; amount?: unknown };
    const { rows } = await pool.query<{ id: string }>(
      `with i as (insert into ${TABLE} (merchant_order_id, amount) values ($1, $2) returning id)
       select id::text, pg_notify('${NEW}', '') from i`,
      [String(body.merchant_order_id), Number(body.amount)],
    );
    const id = rows[0].id;
    const result = early.has(id) ? early.get(id)! : await new Promise<string | null>((resolve) => {
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
  listen(createServer(app));
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
  let running = false;
  let again = false;
  async function drain() {
    if (running) return void (again = true);
    running = true;
    try {
      do {
        again = false;
        for (;;) {
          const { rows } = await pool.query<{ id: string }>(
            `update ${TABLE} set status = 'claimed' where id in (
               select id from ${TABLE} where status = 'new' order by id limit ${BATCH} for update skip locked)
             returning id::text`,
          );
          if (rows.length === 0) break;
          const results = await Promise.all(rows.map((r) => callStub(r.id)));
          const ids = rows.map((r) => r.id);
          await pool.query(
            `with d as (update ${TABLE} t set status = 'done', result = r.result
                        from unnest($1::bigint[], $2::text[]) as r(id, result) where t.id = r.id returning t.id, t.result)
             select pg_notify('${DONE}', d.id || ':' || d.result) from d`,
            [ids, results],
          );
        }
      } while (again);
    } finally {
      running = false;
    }
  }
  await listener(NEW, () => void drain());
  await drain();
  process.send?.({ ready: true });
} else {
  process.stderr.write('usage: design-ceiling.ts web|worker|stub\n');
  process.exit(64);
}
