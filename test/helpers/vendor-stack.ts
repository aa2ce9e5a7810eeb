// A whole stack routed to real-gateway dialects of the simulator (Xendit, SNAP, ...): a fresh
// database, the API, one simulator process per vendor configured to call Kasir back, each
// vendor registered and routed as a platform default in the order given, then the worker
// groups as processes. Nothing of Kasir's own is mocked.
import { freePort } from '../../scripts/lib/cluster.ts';
import type { VendorRecord } from '../../gateways/gateway.ts';
import { setRoute, upsertVendor } from '../../db/vendors.ts';
import { startApi } from './api.ts';
import { testConfig, testEnv } from './config.ts';
import { testDatabase } from './db.ts';
import { startWorkerGroup } from './processes.ts';
import { startSimulatorProcess, type SimulatorProcess } from './simulator.ts';
import type { Stack } from './stack.ts';

interface Teardown {
  teardown(fn: () => unknown): void;
}

export interface DialectVendor {
  code: string;
  /** The simulator's settings, given Kasir's public base URL (for callback URLs). */
  simulatorEnv(publicBase: string, code: string): Record<string, string>;
  /** Kasir's vendor record for the simulator at `simulatorUrl`. */
  vendor(simulatorUrl: string, code: string): VendorRecord;
  /** Methods to route to it; all three by default. */
  methods?: ('QRIS' | 'BANK' | 'EWALLET')[];
}

/** The shared secret of nativeSimulatorVendor's simulator (its callbacks' HMAC key). */
export const NATIVE_SIMULATOR_SECRET = 'kasir-test-native-simulator-secret';

/** The built-in simulator in its own dialect, beside vendor dialects on one stack. */
export function nativeSimulatorVendor(code: string): DialectVendor {
  return {
    code,
    simulatorEnv: () => ({ SIMULATOR_SECRET: NATIVE_SIMULATOR_SECRET }),
    vendor: (url, c) => ({ code: c, kind: 'simulator', baseUrl: url, credentials: { secret: NATIVE_SIMULATOR_SECRET } }),
  };
}

export interface VendorStack extends Stack {
  /** The first vendor's code and record. */
  code: string;
  vendor: VendorRecord;
  vendors: VendorRecord[];
}

export async function startVendorStack(t: Teardown, vendors: DialectVendor[], options: { groups?: string[]; env?: Record<string, string> } = {}): Promise<VendorStack> {
  const databaseUrl = await testDatabase(t);
  const port = await freePort();
  const publicBase = `http://127.0.0.1:${port}`;
  const env = testEnv(databaseUrl, { PORT: String(port), PUBLIC_BASE_URL: publicBase, DISBURSEMENT_RECONCILE_DELAY_SECONDS: '1', ...options.env });
  const api = await startApi(t, testConfig(databaseUrl, env));
  const sims: SimulatorProcess[] = [];
  const records: VendorRecord[] = [];
  for (const [index, v] of vendors.entries()) {
    const sim = await startSimulatorProcess({ SIMULATOR_CODE: v.code, SIMULATOR_DISBURSE_DELAY_MS: '100', ...v.simulatorEnv(publicBase, v.code) });
    t.teardown(() => sim.stop());
    sims.push(sim);
    const record = v.vendor(sim.url, v.code);
    records.push(record);
    await upsertVendor(api.ctx.pool, api.ctx.sealer, { code: v.code, kind: record.kind, baseUrl: record.baseUrl, credentials: record.credentials });
    for (const method of v.methods ?? (['QRIS', 'BANK', 'EWALLET'] as const)) {
      await setRoute(api.ctx.pool, { merchantId: null, method, vendorCode: v.code, priority: (index + 1) * 10 });
    }
  }
  await Promise.all((options.groups ?? ['vendor', 'disbursement', 'webhook']).map((group) => startWorkerGroup(t, group, env)));
  return { api, env, sims, sim: sims[0], code: vendors[0].code, vendor: records[0], vendors: records };
}
