// The whole of Kasir for an integration test: a fresh database, the simulator gateway as a
// real process (routed as the platform's default QRIS vendor), the API on a known port, and
// real worker processes. Nothing of Kasir's own is mocked.
import { freePort } from '../../scripts/lib/cluster.ts';
import { setRoute, upsertVendor } from '../../db/vendors.ts';
import { startApi, type TestApi } from './api.ts';
import { testConfig, testEnv } from './config.ts';
import { testDatabase } from './db.ts';
import { startWorkerGroup } from './processes.ts';
import { startSimulatorProcess, type SimulatorProcess } from './simulator.ts';

interface Teardown {
  teardown(fn: () => unknown): void;
}

export interface Stack {
  api: TestApi;
  env: Record<string, string>;
  sims: SimulatorProcess[];
  sim: SimulatorProcess;
}

export interface StackOptions {
  /** Simulator codes to start, in default-route priority order. */
  vendors?: string[];
  /** Worker groups to run as processes. */
  groups?: string[];
  env?: Record<string, string>;
  simulatorEnv?: Record<string, string>;
  /** A migrated database to run on instead of a fresh clone (a test that runs its own server). */
  databaseUrl?: string;
  /**
   * Variables derived from the database's URL, applied over `env`: DATABASE_URL through
   * PgBouncer with DATABASE_DIRECT_URL the database itself, a replica's URL.
   */
  databaseEnv?: (databaseUrl: string) => Record<string, string>;
}

export async function startStack(t: Teardown, options: StackOptions = {}): Promise<Stack> {
  const databaseUrl = options.databaseUrl ?? (await testDatabase(t));
  const port = await freePort();
  const env = testEnv(databaseUrl, { PORT: String(port), PUBLIC_BASE_URL: `http://127.0.0.1:${port}`, ...options.env, ...options.databaseEnv?.(databaseUrl) });
  const api = await startApi(t, testConfig(databaseUrl, env));

  const sims: SimulatorProcess[] = [];
  for (const [index, code] of (options.vendors ?? ['sim']).entries()) {
    const sim = await startSimulatorProcess({ SIMULATOR_CODE: code, SIMULATOR_DISBURSE_DELAY_MS: '100', ...options.simulatorEnv });
    t.teardown(() => sim.stop());
    sims.push(sim);
    await upsertVendor(api.ctx.pool, api.ctx.sealer, { code, kind: 'simulator', baseUrl: sim.url, credentials: { secret: sim.secret } });
    for (const method of ['QRIS', 'BANK', 'EWALLET'] as const) {
      await setRoute(api.ctx.pool, { merchantId: null, method, vendorCode: code, priority: (index + 1) * 10 });
    }
  }
  await Promise.all((options.groups ?? ['vendor', 'webhook', 'scheduler']).map((group) => startWorkerGroup(t, group, env)));
  return { api, env, sims, sim: sims[0] };
}
