// What job handlers share inside one worker process.
import type { PgBoss } from 'pg-boss';
import type { Config } from '../db/config.ts';
import type { Pool } from '../db/pool.ts';
import type { Sealer } from '../db/secrets.ts';
import type { Gateway, VendorRecord } from '../db/gateways/gateway.ts';
import { gatewayFor } from '../db/gateways/registry.ts';

export interface WorkerContext {
  config: Config;
  pool: Pool;
  boss: PgBoss;
  sealer: Sealer;
}

/** The adapter for a vendor, with the process's configured vendor timeout. */
export function gatewayOf(ctx: WorkerContext, vendor: VendorRecord): Gateway {
  return gatewayFor(vendor, { timeoutMs: ctx.config.VENDOR_TIMEOUT_MS });
}
