// The statistics sweep (scheduler group): analyzes the tables a burst has changed within
// seconds instead of autovacuum's minute (db/table-statistics.ts says why). One pass every
// INTERVAL_MS across all scheduler processes; a pass that fails is retried on the next.
import { logger } from '../db/logger.ts';
import { analyzeTable, staleTables } from '../db/table-statistics.ts';
import type { WorkerContext } from './context.ts';
import { every, type Periodic } from './periodic.ts';

// A burst of 20,000 webhooks queues in about 10 s: statistics a couple of seconds behind it are
// as good as current. A pass with nothing to do is one read of pg_stat_user_tables.
const INTERVAL_MS = 2_000;

export function startStatisticsSweep(ctx: WorkerContext): Periodic {
  return every(ctx.pool, 'table-statistics', INTERVAL_MS, async (stopped) => {
    for (const table of await staleTables(ctx.pool)) {
      if (stopped()) return;
      const started = Date.now();
      await analyzeTable(ctx.pool, table);
      logger.debug({ table: `${table.schema}.${table.name}`, changed: table.changed, rows: table.rows, ms: Date.now() - started }, 'statistics refreshed');
    }
  });
}
