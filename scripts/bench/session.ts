// What the load benches (orders, disbursements) share around their own measurements: the flags
// every load run takes, the session (database, a pool and a client for the bench's own reads,
// the sealer, the processes it starts, torn down in order), the simulator registered as a
// vendor, the CPU probes of every process, and the small helpers their reports use.
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import pg from 'pg';
import { createPool, type Pool } from '../../db/pool.ts';
import { createSealer, newMasterKey, type Sealer } from '../../db/secrets.ts';
import { upsertVendor } from '../../db/vendors.ts';
import { freePort } from '../lib/cluster.ts';
import { parentPid, processTicks, selfTicks, treeTicks, type Probe } from './cpu.ts';
import { benchDatabase, databaseOptions, durableFrom, type BenchDatabase } from './database.ts';
import { startProcess, type BenchProcess } from './processes.ts';
import { statsDatabase } from './stats-database.ts';

/** The vendor code the benches register their simulator under. */
export const VENDOR = 'bench-sim';
/** Marks the bench's own statements, so pg_stat_statements figures leave them out. */
export const MARK = '/* bench */';

/** parseArgs options every load bench takes. */
export const loadOptions = {
  connections: { type: 'string', default: '10,25,50' },
  duration: { type: 'string', default: '15' },
  warmup: { type: 'string', default: '3' },
  pool: { type: 'string', default: '10' },
  'worker-pool': { type: 'string', default: '20' },
  ...databaseOptions,
  stats: { type: 'boolean', default: false },
  json: { type: 'boolean', default: false },
} as const;

/** The load flags as numbers; `connections` empty when the caller measures no throughput. */
export function loadSettings(values: { connections: string; duration: string; warmup: string; pool: string; 'worker-pool': string }, measureThroughput = true) {
  return {
    connections: measureThroughput ? values.connections.split(',').map((c) => positive('connections', c)) : [],
    duration: positive('duration', values.duration),
    warmup: positive('warmup', values.warmup),
    apiPool: positive('pool', values.pool),
    workerPool: positive('worker-pool', values['worker-pool']),
  };
}

export interface Session {
  loadBefore: number;
  db: BenchDatabase & { logFile?: string | null };
  masterKey: string;
  sealer: Sealer;
  /** The bench's own writes (merchants, vendors, routes, funds) and the audit. */
  pool: Pool;
  /** The bench's own reads, marked with MARK. */
  client: pg.Client;
  /** Everything a Kasir process needs to reach this database. */
  common: Record<string, string>;
  processes: BenchProcess[];
}

export async function openSession(options: { ephemeral?: boolean; durable?: boolean; stats: boolean; explainMs?: number }): Promise<Session> {
  const loadBefore = Number(os.loadavg()[0].toFixed(2));
  const durable = durableFrom(options);
  const db =
    options.stats || options.explainMs !== undefined
      ? await statsDatabase({ durable, explainMs: options.explainMs })
      : await benchDatabase({ durable });
  const masterKey = newMasterKey();
  const pool = await createPool(db.url, { size: 2, name: 'bench' });
  const client = new pg.Client({ connectionString: db.url });
  client.on('error', () => undefined); // the cluster may stop under it on Ctrl-C
  await client.connect();
  return {
    loadBefore,
    db,
    masterKey,
    sealer: createSealer(masterKey),
    pool,
    client,
    common: { DATABASE_URL: db.url, KASIR_MASTER_KEY: masterKey, LOG_LEVEL: 'warn' },
    processes: [],
  };
}

/** The web processes first (no new requests), then the workers finish, then the rest. */
export async function closeSession(s: Session): Promise<void> {
  const front = (p: BenchProcess) => ['api', 'ceiling', 'design web', 'pgboss web'].includes(p.name);
  for (const p of s.processes.filter(front)) await p.stop();
  for (const p of s.processes.filter((p) => !front(p))) await p.stop();
  await s.pool.end();
  await s.client.end().catch(() => undefined);
  await s.db.release();
}

/** Starts a Kasir process (or the ceiling) of the session, ready when it says so over IPC. */
export async function startChild(s: Session, name: string, entry: string, args: string[], env: Record<string, string>): Promise<BenchProcess> {
  const p = await startProcess(name, entry, args, env, 'ipc');
  s.processes.push(p);
  return p;
}

/** The simulator as a process, registered as VENDOR; `env` adds simulator settings. */
export async function startSimulatorVendor(s: Session, env: Record<string, string> = {}, stderrLogs = false): Promise<BenchProcess> {
  const secret = randomBytes(18).toString('base64url');
  const sim = await startProcess(
    'simulator',
    'gateways/simulator/server.ts',
    [],
    { LOG_LEVEL: 'warn', SIMULATOR_HOST: '127.0.0.1', SIMULATOR_PORT: String(await freePort()), SIMULATOR_CODE: VENDOR, SIMULATOR_SECRET: secret, ...env },
    /^simulator listening on (http:\/\/\S+)$/,
    30_000,
    stderrLogs,
  );
  s.processes.push(sim);
  await upsertVendor(s.pool, s.sealer, { code: VENDOR, kind: 'simulator', baseUrl: (sim.ready as RegExpExecArray)[1], credentials: { secret } });
  return sim;
}

/** CPU probes of every process of the session, of Postgres (postmaster and backends) and of this one (the load). */
export async function cpuProbes(s: Session, names: Record<string, string>): Promise<Record<string, Probe>> {
  const { rows } = await s.client.query<{ pid: number }>(`${MARK} select pg_backend_pid() as pid`);
  const postmaster = parentPid(rows[0].pid);
  const probes: Record<string, Probe> = {};
  for (const [label, name] of Object.entries(names)) {
    const p = s.processes.find((q) => q.name === name);
    if (p) probes[label] = () => processTicks(p.pid);
  }
  // Every backend of the cluster (all clients), and the postmaster's own processes.
  probes.postgres = () => (postmaster === null ? null : treeTicks(postmaster));
  probes.autocannon = () => selfTicks();
  return probes;
}

/** Whether the server counts statements (--stats, or a DATABASE_URL server preloading pg_stat_statements). */
export async function countsStatements(client: pg.Client): Promise<boolean> {
  const { rowCount } = await client.query(
    `${MARK} select 1 from pg_extension where extname = 'pg_stat_statements' and current_setting('shared_preload_libraries') like '%pg_stat_statements%'`,
  );
  return Boolean(rowCount);
}

export function logCounts(processes: BenchProcess[]): Record<string, number> {
  return Object.fromEntries(processes.map((p) => [p.name, p.logLines()]));
}

export function diff(after: Record<string, number>, before: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(after).map(([k, v]) => [k, v - (before[k] ?? 0)]).filter(([, v]) => v !== 0));
}

export function omit<T extends Record<string, unknown>>(o: T, ...keys: string[]): T {
  return Object.fromEntries(Object.entries(o).filter(([k]) => !keys.includes(k))) as T;
}

export function positive(flag: string, value: string): number {
  const n = Number(value);
  // Node's own code for a bad flag value: scripts/bench.ts prints these as usage errors.
  if (!Number.isInteger(n) || n < 1) throw Object.assign(new Error(`--${flag} must be a positive integer`), { code: 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' });
  return n;
}
