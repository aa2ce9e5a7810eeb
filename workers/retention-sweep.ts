// The retention sweep (scheduler group): retires operational records past their settings'
// age every INTERVAL_MS (db/retention.ts holds the rules). One pass per interval across every
// scheduler copy (workers/periodic.ts); a pass cut off mid-way has retired whole batches only.
import { logger } from '../db/logger.ts';
import { runRetention } from '../db/retention.ts';
import type { WorkerContext } from './context.ts';
import { every, type Periodic } from './periodic.ts';

// Settings are in days; hourly keeps each table within an hour of its setting, and a pass with
// nothing to retire costs a few index probes.
const INTERVAL_MS = 60 * 60_000;

export function startRetentionSweep(ctx: WorkerContext): Periodic {
  return every(ctx.pool, 'retention', INTERVAL_MS, async (stopped) => {
    const report = await runRetention(ctx.pool, ctx.config, { stopped });
    logger.info(report, 'retention pass');
  });
}
