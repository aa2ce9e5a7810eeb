// The built-in simulator registered as the platform's default vendor for every payment method,
// as a development stack (npm start) and the crash soak run it, with a secret of its own.
//
// The secret is random per installation and kept where every vendor's credentials are: sealed
// in its vendor row. npm start reads it back from there to start the simulator with, so no
// secret that anyone else knows (the simulator's published default) is ever registered.
import { randomBytes } from 'node:crypto';
import type { MasterKeyConfig } from '../../db/config.ts';
import { createPool, poolReader } from '../../db/pool.ts';
import { PUBLISHED_SECRETS } from '../../db/published-secrets.ts';
import { createSealer } from '../../db/secrets.ts';
import { listVendors } from '../../db/operator-lists.ts';
import { getVendor, setRoute, updateVendorConnection, upsertVendor } from '../../db/vendors.ts';

/** A new random secret for a simulator (or dialect) credential. */
export const newSimulatorSecret = () => randomBytes(24).toString('base64url');

/** How a registration went: `secret` is the one the simulator must be started with. */
export interface SimulatorRegistration {
  secret: string;
  /**
   * registered: new; rotated: it held a published secret (or another than `secret`), now the
   * new one; kept: as it was; removed: an operator removed it (vendor:remove), so it stays
   * removed and `secret` is a fresh one nobody holds.
   */
  action: 'registered' | 'rotated' | 'kept' | 'removed';
}

/**
 * Makes sure vendor `code` (kind simulator) exists at `baseUrl`, where the simulator runs, with a
 * secret of its own, and returns that secret. A new vendor is routed for QRIS, BANK and EWALLET;
 * an existing one is left as the operator made it (vendor:disable, route:set survive the next
 * start), except that it follows the simulator's URL and a published secret is replaced. `secret`: the one to use (SIMULATOR_SECRET set by hand);
 * unset, the stored one, else a new random one. Opens stored credentials with every configured
 * master key (KASIR_MASTER_KEYS_PREVIOUS included).
 */
export async function ensureSimulatorVendor(
  databaseUrl: string,
  keys: MasterKeyConfig | string,
  baseUrl: string,
  options: { code?: string; secret?: string } = {},
): Promise<SimulatorRegistration> {
  const code = options.code ?? 'sim';
  const pool = await createPool(databaseUrl, { size: 1, name: 'dev' });
  try {
    const sealer = createSealer(keys);
    const existing = await getVendor(pool, sealer, code);
    if (existing?.kind === 'simulator') {
      const stored = existing.credentials.secret;
      const wanted = options.secret ?? (stored && !PUBLISHED_SECRETS.has(stored) ? stored : newSimulatorSecret());
      if (wanted === stored && existing.baseUrl === baseUrl) return { secret: stored, action: 'kept' };
      // Where the simulator runs now (another PORT moves it), with the secret it runs with.
      await updateVendorConnection(pool, sealer, code, baseUrl, { ...existing.credentials, secret: wanted });
      return { secret: wanted, action: wanted === stored ? 'kept' : 'rotated' };
    }
    if (existing) throw new Error(`vendor ${code} exists and is ${existing.kind}, not the simulator`);
    if ((await listVendors(poolReader(pool))).some((v) => v.code === code && v.removed)) return { secret: newSimulatorSecret(), action: 'removed' };
    const secret = options.secret ?? newSimulatorSecret();
    await upsertVendor(pool, sealer, { code, kind: 'simulator', baseUrl, credentials: { secret } });
    for (const method of ['QRIS', 'BANK', 'EWALLET'] as const) {
      await setRoute(pool, { merchantId: null, method, vendorCode: code, priority: 100 });
    }
    return { secret, action: 'registered' };
  } finally {
    await pool.end();
  }
}

/**
 * Registers vendor `code` with the given secret unless it exists (the soak's fresh database).
 * Resolves with whether it registered one.
 */
export async function registerSimulator(databaseUrl: string, keys: MasterKeyConfig | string, baseUrl: string, secret: string, code = 'sim'): Promise<boolean> {
  return (await ensureSimulatorVendor(databaseUrl, keys, baseUrl, { code, secret })).action === 'registered';
}
