// The built-in simulator registered as the platform's default vendor for every payment method,
// as a development stack (npm start) and the crash soak run it.
import { createPool } from '../../db/pool.ts';
import { createSealer } from '../../db/secrets.ts';
import { getVendor, setRoute, upsertVendor } from '../../db/vendors.ts';

/**
 * Registers vendor `code` (kind simulator) at `baseUrl`, routed for QRIS, BANK and EWALLET,
 * unless a vendor with that code exists: later operator changes (vendor:disable, route:set)
 * are not undone by the next start. Resolves with whether it registered one.
 */
export async function registerSimulator(databaseUrl: string, masterKey: string, baseUrl: string, secret: string, code = 'sim'): Promise<boolean> {
  const pool = await createPool(databaseUrl, { size: 1, name: 'dev' });
  try {
    const sealer = createSealer(masterKey);
    if (await getVendor(pool, sealer, code)) return false;
    await upsertVendor(pool, sealer, { code, kind: 'simulator', baseUrl, credentials: { secret } });
    for (const method of ['QRIS', 'BANK', 'EWALLET'] as const) {
      await setRoute(pool, { merchantId: null, method, vendorCode: code, priority: 100 });
    }
    return true;
  } finally {
    await pool.end();
  }
}
