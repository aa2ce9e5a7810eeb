// What job handlers share inside one worker process.
import type { PgBoss } from 'pg-boss';
import type { Config } from '../db/config.ts';
import type { Pool } from '../db/pool.ts';
import type { Sealer } from '../db/secrets.ts';

export interface WorkerContext {
  config: Config;
  pool: Pool;
  boss: PgBoss;
  sealer: Sealer;
}

