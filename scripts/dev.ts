// npm start: the whole of Kasir on one machine. Without DATABASE_URL it starts the embedded
// Postgres kept under .data/, migrates, then runs every Procfile line as a child process (so
// development runs exactly what production runs). Ctrl-C or SIGTERM stops the children first,
// waits for them, then stops Postgres. If any child dies, everything stops (as foreman does):
// a half-running stack hides bugs.
import { spawn, type ChildProcess } from 'node:child_process';
import { directDatabaseUrl, parseConfig, publicBaseUrl, type Config } from '../db/config.ts';
import { prepareDatabase } from '../db/migrate.ts';
import { stopChild, type Cluster } from './lib/cluster.ts';
import { createPool, isDatabaseUnavailable } from '../db/pool.ts';
import { createSealer } from '../db/secrets.ts';
import { PUBLISHED_SECRETS } from '../db/published-secrets.ts';
import { getVendor, setRoute, updateVendorConnection, upsertVendor } from '../db/vendors.ts';
import { clearRunning, databaseUnreachable, localState, recordRunning, ROOT, startLocalCluster } from './lib/local.ts';
import { isSimulator, readProcfile, servesMetrics, simulatorEnv } from './lib/procfile.ts';
import { Secret } from 'otpauth';
import { ensureSimulatorVendor, newSimulatorSecret } from './lib/simulator-vendor.ts';

const started = Date.now();
let cluster: Cluster | null = null;
const env: Record<string, string | undefined> = { ...process.env };

// The simulator is registered as a vendor only in a database that belongs to this stack: the
// embedded one, or one DEV_REGISTER_SIMULATOR=true vouches for. In any other database a vendor
// at 127.0.0.1 would take real merchants' orders to whatever listens there.
const ownDatabase = !env.DATABASE_URL || env.DEV_REGISTER_SIMULATOR === 'true';
if (!env.DATABASE_URL) {
  const state = await localState();
  const local = await startLocalCluster();
  cluster = local.cluster;
  env.DATABASE_URL = local.url;
  // The local key, unless the operator gave one (KASIR_MASTER_KEY or KASIR_MASTER_KEY_FILE).
  if (!env.KASIR_MASTER_KEY_FILE) env.KASIR_MASTER_KEY ??= state.master_key;
  await recordRunning(local.url);
}
env.NOTIFY_URL_ALLOWLIST ??= '127.0.0.1,localhost';

// Fail here, with the variable's name, rather than in seven children at once.
let config: Config;
try {
  config = parseConfig(env);
} catch (err) {
  process.stderr.write(`${(err as Error).message}\n`);
  await cluster?.stop();
  await clearRunning();
  process.exit(78);
}

let applied: string[];
try {
  applied = await prepareDatabase(directDatabaseUrl(config));
} catch (err) {
  if (!isDatabaseUnavailable(err)) throw err;
  // A DATABASE_URL pointing where nothing listens: one line saying so, not a stack trace.
  process.stderr.write(`${databaseUnreachable(directDatabaseUrl(config), err)}\n`);
  if (cluster) {
    await cluster.stop();
    await clearRunning();
  }
  process.exit(1);
}
if (applied.length) process.stdout.write(`migrations applied: ${applied.join(', ')}\n`);

// The built-in simulator is the default vendor of a development stack, so a merchant made with
// merchant:create takes orders at once. Registered once, with a random secret of its own kept
// sealed in its vendor row (read back here on every start): later operator changes
// (vendor:disable, route:set, vendor:remove) are not undone by the next start.
// Derived from PORT (3000 -> 4010), so a second stack started with another PORT does not
// collide with the first one's simulator.
env.SIMULATOR_PORT ??= String(config.PORT === 0 ? 4010 : (config.PORT + 1010) % 65536);
// The simulator keeps its QRs, payouts and owed callbacks across restarts, as a gateway would.
env.SIMULATOR_STATE_FILE ??= `${ROOT}.data/simulator-state.jsonl`;
const simulatorUrl = `http://127.0.0.1:${env.SIMULATOR_PORT}`;
if (ownDatabase) {
  const registration = await ensureSimulatorVendor(directDatabaseUrl(config), config, simulatorUrl, { secret: env.SIMULATOR_SECRET || undefined });
  env.SIMULATOR_SECRET = registration.secret;
  const said = {
    registered: `registered the built-in simulator (${simulatorUrl}) as the default vendor, with a secret of its own`,
    rotated: 'gave the built-in simulator vendor a new secret (it held a published one)',
    kept: null,
    removed: 'the built-in simulator vendor was removed (vendor:remove): it runs, but nothing routes to it',
  }[registration.action];
  if (said) process.stdout.write(`${said}\n`);
} else {
  // Not this stack's database: the simulator runs for whoever registers it, under a secret of this run.
  env.SIMULATOR_SECRET ||= newSimulatorSecret();
  process.stdout.write('DATABASE_URL is set: the simulator is not registered as a vendor there (DEV_REGISTER_SIMULATOR=true to register it)\n');
}

// The simulator also speaks Xendit and Midtrans (docs/simulator.md); their callbacks go to the
// URLs their dashboards would hold. DEV_GATEWAY=xendit|midtrans puts that dialect in front of the
// built-in one, so the real adapter runs end to end offline.
const callbacks = `${publicBaseUrl(config)}/callbacks`;
env.SIMULATOR_XENDIT_CALLBACK_URL ??= `${callbacks}/xendit`;
env.SIMULATOR_IRIS_NOTIFY_URL ??= `${callbacks}/midtrans`;
if (env.DEV_GATEWAY && env.DEV_GATEWAY !== 'xendit' && env.DEV_GATEWAY !== 'midtrans') {
  process.stderr.write(`DEV_GATEWAY must be xendit or midtrans, not ${env.DEV_GATEWAY}\n`);
  await cluster?.stop();
  await clearRunning();
  process.exit(78);
}
// A dialect registered by an earlier start keeps getting its keys, even without DEV_GATEWAY.
if (ownDatabase) for (const kind of ['xendit', 'midtrans'] as const) await registerDialect(config, kind, simulatorUrl, env.DEV_GATEWAY === kind);

const children = new Map<string, ChildProcess>();
let stopping = false;

async function stopAll(code: number) {
  if (stopping) return;
  stopping = true;
  process.stdout.write('stopping kasir...\n');
  await Promise.all([...children.values()].map((child) => stopChild(child)));
  await cluster?.stop();
  if (cluster) await clearRunning();
  process.exit(code);
}

// A METRICS_PORT given to npm start is the first of a range: one port per Kasir process, in
// Procfile order (one shared port would let only the first bind it; the simulator serves none).
const metricsPorts: string[] = [];
for (const line of await readProcfile()) {
  const [command, ...args] = line.argv;
  const served = config.METRICS_PORT && servesMetrics(line);
  const metrics = served ? { METRICS_PORT: String(config.METRICS_PORT! + metricsPorts.length) } : {};
  if (metrics.METRICS_PORT) metricsPorts.push(`${line.name} :${metrics.METRICS_PORT}`);
  const child = spawn(`${ROOT}${command}`, args, {
    cwd: ROOT,
    env: { ...(isSimulator(line) ? simulatorEnv(env) : env), KASIR_PROCESS: line.name, ...metrics },
    // Own process group: a terminal Ctrl-C reaches only this supervisor, which stops the
    // children in order. The IPC channel lets each child notice if the supervisor is killed.
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    detached: true,
  });
  children.set(line.name, child);
  child.on('exit', (code, signal) => {
    if (stopping) return;
    process.stderr.write(`${line.name} exited (${signal ?? code}); stopping everything\n`);
    void stopAll(1);
  });
}

process.on('SIGINT', () => void stopAll(0));
process.on('SIGTERM', () => void stopAll(0));

// Wait for the API to listen before announcing it.
const web = children.get('web');
if (web) await new Promise<void>((resolve) => web.on('message', (m: { listening?: boolean }) => m.listening && resolve()));

const url = publicBaseUrl(config);
process.stdout.write(`
Kasir is running at ${url}  (started in ${Date.now() - started} ms; ${children.size} processes: ${[...children.keys()].join(', ')})
Database: ${cluster ? 'embedded Postgres in .data/pg' : 'DATABASE_URL'}${metricsPorts.length ? `\nMetrics (GET /metrics): ${metricsPorts.join(', ')}` : ''}

Create a first merchant:
  npm run --silent ops -- merchant:create --name "Toko Contoh" --settlement WALLET --json
Then call the API with the api_key it prints:
  curl -H "X-API-Key: <api_key>" ${url}/v1/orders

Press Ctrl-C to stop.
`);

/**
 * Registers (once) the simulator's Xendit or Midtrans dialect, routed first, with keys of its
 * own: random per installation and sealed in the vendor row like the simulator's secret, then
 * handed to the simulator on every start (never the dialects' published defaults).
 */
async function registerDialect(config: Config, kind: 'xendit' | 'midtrans', simulatorUrl: string, wanted: boolean) {
  // Which credential feeds which simulator setting.
  const dialects: Record<string, { baseUrl: string; fixed: Record<string, string>; keys: Record<string, string> }> = {
    xendit: {
      baseUrl: `${simulatorUrl}/xendit`,
      fixed: {},
      keys: { secretKey: 'SIMULATOR_XENDIT_SECRET_KEY', callbackToken: 'SIMULATOR_XENDIT_CALLBACK_TOKEN' },
    },
    midtrans: {
      baseUrl: `${simulatorUrl}/midtrans`,
      fixed: { qrisAcquirer: 'gopay', irisBaseUrl: `${simulatorUrl}/iris` },
      keys: {
        serverKey: 'SIMULATOR_MIDTRANS_SERVER_KEY',
        irisCreatorKey: 'SIMULATOR_IRIS_CREATOR_KEY',
        irisApproverKey: 'SIMULATOR_IRIS_APPROVER_KEY',
        irisMerchantKey: 'SIMULATOR_IRIS_MERCHANT_KEY',
        irisApproverTotpSecret: 'SIMULATOR_IRIS_APPROVER_TOTP_SECRET',
      },
    },
  };
  const dialect = dialects[kind];
  const pool = await createPool(directDatabaseUrl(config), { size: 1, name: 'dev' });
  try {
    const sealer = createSealer(config);
    const existing = await getVendor(pool, sealer, kind);
    // Only this simulator's own dialect vendor: a vendor of that code elsewhere is the operator's.
    const ours = existing?.kind === kind && existing.baseUrl === dialect.baseUrl;
    if (existing ? !ours : !wanted) return;
    const credentials: Record<string, string> = { ...dialect.fixed };
    let changed = !existing;
    for (const [name, setting] of Object.entries(dialect.keys)) {
      const stored = existing?.credentials[name];
      // An authenticator secret is base32 (RFC 4648), as Iris's approver apps take it.
      const fresh = name === 'irisApproverTotpSecret' ? new Secret({ size: 20 }).base32 : newSimulatorSecret();
      const key = env[setting] || (stored && !PUBLISHED_SECRETS.has(stored) ? stored : fresh);
      if (key !== stored) changed = true;
      credentials[name] = key;
      env[setting] = key;
    }
    if (!existing) {
      await upsertVendor(pool, sealer, { code: kind, kind, baseUrl: dialect.baseUrl, credentials });
      for (const method of ['QRIS', 'BANK', 'EWALLET'] as const) await setRoute(pool, { merchantId: null, method, vendorCode: kind, priority: 50 });
      process.stdout.write(`registered the simulator's ${kind} dialect (${dialect.baseUrl}) in front of the built-in one, with keys of its own\n`);
    } else if (changed) {
      await updateVendorConnection(pool, sealer, kind, existing.baseUrl, { ...existing.credentials, ...credentials });
      process.stdout.write(`gave the simulator's ${kind} dialect vendor new keys\n`);
    }
  } finally {
    await pool.end();
  }
}
