// The ceiling the orders and disbursements benches compare Kasir against: the least an HTTP create
// endpoint on this stack can do. A minimal Express 5 app whose POST handler does ONE INSERT (one
// round trip, autocommit) into a scratch table of the same database and answers JSON. Run as a
// child process by scripts/bench/orders.ts and disbursements.ts, like the API it is compared with:
//
//   DATABASE_URL=postgres://… PORT=0 DB_POOL_SIZE=10 node scripts/bench/ceiling.ts
//
// It sends {listening, port} over IPC once it listens, and stops on SIGTERM/SIGINT or when the
// parent goes.
import { createServer } from 'node:http';
import express from 'express';
import pg from 'pg';

const CEILING_TABLE = 'bench_ceiling';

const url = process.env.DATABASE_URL;
if (!url) {
  process.stderr.write('ceiling: DATABASE_URL is required\n');
  process.exit(64);
}
const pool = new pg.Pool({ connectionString: url, max: Number(process.env.DB_POOL_SIZE ?? 10) });
pool.on('error', () => undefined); // a backend dropped at shutdown is not a crash
await pool.query(`
  create table if not exists ${CEILING_TABLE} (
    id bigint generated always as identity primary key,
    merchant_order_id text not null,
    amount bigint not null,
    created_at timestamptz not null default now()
  )`);

const app = express();
app.disable('x-powered-by');
app.use(express.json());
// The same handler for both paths: a disbursement's idempotency_key goes where an order's
// merchant_order_id does.
app.post(['/v1/orders', '/v1/disbursements'], async (req, res) => {
  const body = req.body as { merchant_order_id?: unknown; idempotency_key?: unknown; amount?: unknown };
  const key = body.merchant_order_id ?? body.idempotency_key;
  const { rows } = await pool.query<{ id: string; created_at: Date }>(
    `insert into ${CEILING_TABLE} (merchant_order_id, amount) values ($1, $2) returning id, created_at`,
    [String(key), Number(body.amount)],
  );
  res.status(201).json({ success: true, data: { id: rows[0].id, merchant_order_id: key, created_at: rows[0].created_at } });
});

const server = createServer(app);
server.keepAliveTimeout = 65_000;
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const address = server.address();
  process.send?.({ listening: true, port: typeof address === 'object' && address ? address.port : 0 });
});

let stopping = false;
async function stop() {
  if (stopping) return;
  stopping = true;
  server.close();
  server.closeAllConnections();
  await pool.end().catch(() => undefined);
  process.exit(0);
}
process.on('SIGTERM', () => void stop());
process.on('SIGINT', () => void stop());
process.on('disconnect', () => void stop());
