// Kasir scaled out for a test: two of every Procfile line (web and each worker group) as real
// processes on one database, the simulator gateway as a process behind a recording proxy, and
// what the test needs to judge the run afterwards: every call Kasir made to the vendor, each
// process's log lines (JSON, as pino writes them) and its metrics port. Nothing of Kasir's own
// is mocked; the test process only holds a pool, a sealer and a pg-boss sender for factories,
// direct reads and the jobs an operator would send.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { openContext, type AppContext } from '../../api/context.ts';
import { setRoute, upsertVendor } from '../../db/vendors.ts';
import { freePort } from '../../scripts/lib/cluster.ts';
import { testConfig, testEnv } from './config.ts';
import { testDatabase } from './db.ts';
import { readRequest } from './http.ts';
import { startSimulatorProcess, type SimulatorProcess } from './simulator.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

interface Teardown {
  teardown(fn: () => unknown): void;
}

export interface LoggedProcess {
  name: string;
  child: ChildProcess;
  /** What the process sent when it was ready (port, metricsPort, ...). */
  message: { port?: number; metricsPort?: number | null };
  /** Every JSON line the process wrote to stdout so far. */
  logs: Array<Record<string, unknown>>;
  alive(): boolean;
}

/**
 * Spawns `node <entry> ...args` with stdout piped and parsed line by line (pino's JSON), and
 * resolves once the process sends its ready/listening message. SIGKILLed at teardown.
 */
export async function startLoggedProcess(t: Teardown, name: string, entry: string, args: string[], env: Record<string, string>): Promise<LoggedProcess> {
  const child = spawn(process.execPath, [`${ROOT}${entry}`, ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env, KASIR_PROCESS: name },
    stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
  });
  const logs: Array<Record<string, unknown>> = [];
  createInterface({ input: child.stdout! }).on('line', (line) => {
    try {
      logs.push(JSON.parse(line));
    } catch {
      logs.push({ msg: line });
    }
  });
  const alive = () => child.exitCode === null && child.signalCode === null;
  t.teardown(async () => {
    if (!alive()) return;
    const exited = once(child, 'exit');
    child.kill('SIGKILL');
    await exited;
  });
  const message = await new Promise<LoggedProcess['message']>((resolve, reject) => {
    child.once('message', (m) => resolve(m as LoggedProcess['message']));
    child.once('exit', (code) => reject(new Error(`${name} (${entry} ${args.join(' ')}) exited with ${code} before it was ready`)));
  });
  return { name, child, message, logs, alive };
}

export interface VendorCall {
  method: string;
  path: string;
  body: any;
}

export interface VendorTap {
  url: string;
  calls: VendorCall[];
  close(): Promise<void>;
}

/**
 * A recording HTTP proxy in front of a vendor: Kasir's vendor record points here, every request
 * is recorded (method, path, JSON body) and forwarded byte for byte, headers included (the
 * simulator's signatures cover timestamp and body, not the host), and the answer is relayed.
 * It shows what reached the vendor, from every worker process at once.
 */
export async function startVendorTap(target: string): Promise<VendorTap> {
  const calls: VendorCall[] = [];
  const upstream = new URL(target);
  const server = createServer((req, res) => {
    void readRequest(req).then(({ body, json }) => {
      calls.push({ method: req.method ?? 'GET', path: (req.url ?? '/').split('?')[0], body: json });
      const forward = httpRequest(
        { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: { ...req.headers, host: upstream.host }, agent: false },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      forward.on('error', () => {
        res.statusCode = 502;
        res.end();
      });
      forward.end(body);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    calls,
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}

export const WORKER_GROUPS = ['vendor', 'disbursement', 'webhook', 'scheduler', 'csv'] as const;
export type WorkerGroup = (typeof WORKER_GROUPS)[number];

export interface Replicas {
  env: Record<string, string>;
  /** The test's own handle on the database (factories, direct reads, an operator's jobs). */
  ctx: AppContext;
  /** Two `web` processes; vendor callbacks (PUBLIC_BASE_URL) reach the second. */
  apis: [LoggedProcess & { url: string }, LoggedProcess & { url: string }];
  workers: Record<WorkerGroup, [LoggedProcess, LoggedProcess]>;
  sim: SimulatorProcess;
  tap: VendorTap;
}

/**
 * Starts the whole topology with `copies` of every line (2 by default). Worker groups log at
 * debug level (each sweep pass is a debug line, workers/periodic.ts); the APIs stay silent.
 */
export async function startReplicas(t: Teardown, options: { env?: Record<string, string> } = {}): Promise<Replicas> {
  const databaseUrl = await testDatabase(t);
  const ports = [await freePort(), await freePort()];
  const urls = ports.map((p) => `http://127.0.0.1:${p}`);
  const env = testEnv(databaseUrl, {
    PUBLIC_BASE_URL: urls[1],
    METRICS_PORT: '0',
    DISBURSEMENT_RECONCILE_DELAY_SECONDS: '1',
    ...options.env,
  });
  const { ctx, close } = await openContext(testConfig(databaseUrl, env), { poolSize: 4, bossPoolSize: 2 });
  t.teardown(close);

  const sim = await startSimulatorProcess({ SIMULATOR_CODE: 'sim', SIMULATOR_DISBURSE_DELAY_MS: '100' });
  t.teardown(() => sim.stop());
  const tap = await startVendorTap(sim.url);
  t.teardown(() => tap.close());
  // Before any Kasir process starts, so none caches a routing table without it.
  await upsertVendor(ctx.pool, ctx.sealer, { code: sim.code, kind: 'simulator', baseUrl: tap.url, credentials: { secret: sim.secret } });
  for (const method of ['QRIS', 'BANK', 'EWALLET'] as const) await setRoute(ctx.pool, { merchantId: null, method, vendorCode: sim.code, priority: 10 });

  const web = (i: number) =>
    startLoggedProcess(t, `web-${'ab'[i]}`, 'api/server.ts', [], { ...env, PORT: String(ports[i]) }).then((p) => ({ ...p, url: urls[i] }));
  const worker = (group: WorkerGroup, i: number) => startLoggedProcess(t, `${group}-${i + 1}`, 'workers/run.ts', [group], { ...env, LOG_LEVEL: 'debug' });
  const [a, b, ...started] = await Promise.all([web(0), web(1), ...WORKER_GROUPS.flatMap((g) => [worker(g, 0), worker(g, 1)])]);
  const workers = Object.fromEntries(WORKER_GROUPS.map((g, i) => [g, [started[2 * i], started[2 * i + 1]]])) as Replicas['workers'];
  return { env, ctx, apis: [a, b], workers, sim, tap };
}

export interface SweepPass {
  process: string;
  sweep: string;
  startedAt: number;
}

/** The 'sweep pass' lines (workers/periodic.ts) that the processes logged, oldest first. */
export function sweepPasses(processes: LoggedProcess[]): SweepPass[] {
  return processes
    .flatMap((p) => p.logs.filter((l) => l.msg === 'sweep pass').map((l) => ({ process: p.name, sweep: String(l.sweep), startedAt: Number(l.started_at) })))
    .sort((x, y) => x.startedAt - y.startedAt);
}

/** One process's /metrics text (its METRICS_PORT listener). */
export async function metricsOf(p: LoggedProcess): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${p.message.metricsPort}/metrics`);
  return res.text();
}

/** The sum of a metric's samples whose line matches `labels` (e.g. 'operation="createQris"'). */
export function metricSum(text: string, name: string, labels = ''): number {
  return text
    .split('\n')
    .filter((line) => line.startsWith(name) && (line[name.length] === '{' || line[name.length] === ' ') && line.includes(labels))
    .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
}
