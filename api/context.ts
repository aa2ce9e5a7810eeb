// What the API's handlers share: built once per process by api/server.ts (or by a test).
import type { PgBoss } from 'pg-boss';
import type { Config } from '../db/config.ts';
import type { Pool } from '../db/pool.ts';
import type { Sealer } from '../db/secrets.ts';
import type { BrandRow } from '../db/brands.ts';
import type { MerchantRow } from '../db/merchants.ts';

export interface AppContext {
  config: Config;
  pool: Pool;
  sealer: Sealer;
  boss: PgBoss;
}

declare module 'express-serve-static-core' {
  interface Request {
    brand: BrandRow;
    merchant: MerchantRow;
    requestId: string;
  }
}
