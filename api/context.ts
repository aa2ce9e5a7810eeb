// What the API's handlers share: built once per process by api/server.ts (or by a test).
import type { PgBoss } from 'pg-boss';
import { directDatabaseUrl, pooledConnections, type Config } from '../db/config.ts';
import { MASTER_DATA_CHANNEL, createMasterDataCache, type MasterDataCache } from '../db/master-data.ts';
import { ORDER_OUTCOME_CHANNEL, parseOutcome } from '../db/orders.ts';
import { createPool, type Pool } from '../db/pool.ts';
import { startBoss } from '../db/queue.ts';
import { openReplica, type Replica } from '../db/replica.ts';
import { createSealer, type Sealer } from '../db/secrets.ts';
import type { BrandRow } from '../db/brands.ts';
import type { MerchantRow } from '../db/merchants.ts';
import { createAuthThrottle, type AuthThrottle } from './http/auth-throttle.ts';
import { startListener } from './http/listener.ts';
import { createOutcomeWaiter, type OutcomeWaiter } from './http/outcome-waiter.ts';

export interface AppContext {
  config: Config;
  pool: Pool;
  /** Reads that may lag (history lists, reports): the replica while it is fresh, else `pool`. */
  replica: Replica;
  sealer: Sealer;
  boss: PgBoss;
  /** Wakes requests waiting on a worker's outcome (order creation, fetch-status). */
  waiter: OutcomeWaiter;
  /** Enabled banks and e-wallets, dropped whenever the tables change (any process). */
  masterData: MasterDataCache;
  /** Failed-authentication and per-key request limits of this process. */
  throttle: AuthThrottle;
}

declare module 'express-serve-static-core' {
  interface Request {
    brand: BrandRow;
    merchant: MerchantRow;
    requestId: string;
  }
}

/** Opens what an API process needs; `close` releases it in reverse order. */
export async function openContext(config: Config, options: { poolSize?: number; bossPoolSize?: number } = {}) {
  const pool = await createPool(config.DATABASE_URL, { size: options.poolSize ?? config.DB_POOL_SIZE, name: 'api', statementTimeoutMs: config.API_STATEMENT_TIMEOUT_MS, ...pooledConnections(config) });
  const replica = await openReplica(config, pool, options.poolSize ?? config.DB_POOL_SIZE, 'api', config.API_STATEMENT_TIMEOUT_MS);
  const boss = await startBoss(config.DATABASE_URL, { role: 'sender', poolSize: options.bossPoolSize });
  const waiter = createOutcomeWaiter();
  const masterData = createMasterDataCache(pool);
  // The process's one listening connection; after a reconnect, missed changes drop the cache.
  const listener = await startListener(
    directDatabaseUrl(config),
    {
      [ORDER_OUTCOME_CHANNEL]: (payload) => {
        const { orderId, storedAnswer } = parseOutcome(payload);
        waiter.wake(orderId, storedAnswer);
      },
      [MASTER_DATA_CHANNEL]: () => masterData.clear(),
    },
    () => masterData.clear(),
  );
  const ctx: AppContext = { config, pool, replica, boss, waiter, masterData, sealer: createSealer(config), throttle: createAuthThrottle(config) };
  return {
    ctx,
    async close() {
      await listener.close();
      await boss.stop({ graceful: false });
      await replica.close();
      await pool.end();
    },
  };
}
