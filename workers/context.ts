// What job handlers share inside one worker process.
import type { PgBoss } from 'pg-boss';
import type { Config } from '../db/config.ts';
import type { Pool } from '../db/pool.ts';
import type { Replica } from '../db/replica.ts';
import type { Sealer } from '../db/secrets.ts';

export interface WorkerContext {
  config: Config;
  pool: Pool;
  /** Reads that may lag (export builds): the replica, or none (db/replica.ts). */
  replica: Replica;
  boss: PgBoss;
  sealer: Sealer;
}

