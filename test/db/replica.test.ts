// Reads from a real streaming replica (test/helpers/replica.ts), directly and through PgBouncer
// in transaction mode (one PgBouncer in front of each server, as production pools both).
// Proves: an export is built from the replica (the csv worker's metrics say where) with every row the
// primary had; a replica whose replay is paused serves a lagging list while GET by id still
// answers from the primary; an export built while the replica lags past the bound reads the
// primary and misses nothing.
import t, { type Test } from 'tap';
import { parse } from 'csv-parse/sync';
import { prepareDatabase } from '../../db/migrate.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { call, eventually } from '../helpers/http.ts';
import { paidOrder } from '../helpers/money.ts';
import { startPgBouncer } from '../helpers/pgbouncer.ts';
import { startWorkerGroup, type Proc } from '../helpers/processes.ts';
import { replicatedDatabase, startReplicaPair, type ReplicaPair } from '../helpers/replica.ts';
import { startStack, type Stack } from '../helpers/stack.ts';

type M = Awaited<ReturnType<typeof makeMerchant>>;

const pair = await startReplicaPair(t);

const get = (stack: Stack, m: M, path: string) => call(stack.api.url, { path, headers: { 'x-api-key': m.api_key } });

/** Requests an orders export and returns its CSV's data rows, once the download answers. */
async function exportedOrders(stack: Stack, m: M): Promise<string[][]> {
  const res = await call(stack.api.url, { path: '/v1/reports/export', headers: { 'x-api-key': m.api_key }, body: { type: 'orders' } });
  if (res.status !== 201) throw new Error(`export: ${res.status} ${res.text}`);
  // The download reads the export by id (the primary): it answers once the build committed.
  const file = await eventually(async () => {
    const got = await get(stack, m, `/v1/reports/exports/${res.json.data.id}/download`);
    return got.status === 200 ? got : undefined;
  }, 'the export to be downloadable', 30_000);
  return (parse(file.text) as string[][]).slice(1);
}

const refsIn = (rows: string[][]) => rows.map((r) => r[1]).sort();

/** The csv worker's count of export builds read from `source` (its GET /metrics). */
async function builds(csv: Proc & { message: any }, source: 'replica' | 'primary'): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${csv.message.metricsPort}/metrics`)).text();
  return Number(text.match(new RegExp(`^kasir_export_builds_total\\{source="${source}"\\} (\\d+)$`, 'm'))?.[1] ?? 0);
}

const startCsv = (t: Test, env: Record<string, string>) => startWorkerGroup(t, 'csv', { ...env, METRICS_PORT: '0' });

async function scenario(t: Test, database: string, connect: (pair: ReplicaPair, database: string) => Promise<Record<string, string>>) {
  await replicatedDatabase(pair, database);
  await prepareDatabase(pair.primaryUrl(database));
  const env = await connect(pair, database);
  // A generous bound for the API: the paused replica below still counts as fresh for a minute.
  const stack = await startStack(t, { databaseUrl: pair.primaryUrl(database), groups: ['vendor'], databaseEnv: () => ({ ...env, DATABASE_REPLICA_MAX_LAG_MS: '60000' }) });
  let csv = await startCsv(t, stack.env);
  const merchant = await makeMerchant(stack.api.ctx);
  const first = [await paidOrder(stack, merchant, 100_000), await paidOrder(stack, merchant, 120_000)];

  const rows = await exportedOrders(stack, merchant);
  t.same(refsIn(rows), first.map((o) => o.ref_code).sort(), 'the export holds every paid order');
  t.ok(rows.every((r) => r[6] === 'PAID'), 'as PAID, as the primary has them');
  t.same([await builds(csv, 'replica'), await builds(csv, 'primary')], [1, 0], 'its rows were read on the replica');

  await pair.pauseReplay();
  const late = await paidOrder(stack, merchant, 130_000); // paidOrder polls GET by id: never 404
  t.equal((await get(stack, merchant, `/v1/orders/${late.ref_code}`)).status, 200, 'GET by id reads the primary');
  const listed = await get(stack, merchant, '/v1/orders?limit=100');
  t.notOk(listed.json.data.some((o: { ref_code: string }) => o.ref_code === late.ref_code), 'the list reads the paused replica: it lags');

  // An export must not lag: with a 300 ms bound the build gives up on the replica and reads the primary.
  await csv.stop();
  csv = await startCsv(t, { ...stack.env, DATABASE_REPLICA_MAX_LAG_MS: '300' });
  t.same(refsIn(await exportedOrders(stack, merchant)), [...first, late].map((o) => o.ref_code).sort(), 'an export while the replica lags holds the late order too');
  t.same([await builds(csv, 'replica'), await builds(csv, 'primary')], [0, 1], 'read on the primary');

  await pair.resumeReplay();
  t.equal((await exportedOrders(stack, merchant)).length, 3, 'once the replica caught up, the export has every order');
  t.same([await builds(csv, 'replica'), await builds(csv, 'primary')], [1, 1], 'read on the replica again');
  await eventually(async () => {
    const list = await get(stack, merchant, '/v1/orders?limit=100');
    return list.json.data.some((o: { ref_code: string }) => o.ref_code === late.ref_code) ? true : undefined;
  }, 'the list to show the late order once the replica replays it');
  await csv.stop();
}

t.test('directly: an export from the replica; lists lag, reads by id never do', (t) =>
  scenario(t, 'kasir_direct', async (pair, database) => ({ DATABASE_REPLICA_URL: pair.replicaUrl(database) })));

t.test('through PgBouncer (transaction mode) in front of both servers', (t) =>
  scenario(t, 'kasir_pooled', async (pair, database) => {
    const primary = await startPgBouncer(t, pair.primaryUrl());
    const replica = await startPgBouncer(t, pair.replicaUrl());
    return {
      DATABASE_URL: primary.through(pair.primaryUrl(database)),
      DATABASE_DIRECT_URL: pair.primaryUrl(database),
      DATABASE_REPLICA_URL: replica.through(pair.replicaUrl(database)),
    };
  }));
