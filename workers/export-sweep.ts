// The export sweep (csv group): exports are kept EXPORT_RETENTION_HOURS, then deleted with
// their files. Chunks go first, CHUNK_BATCH per statement (each ~1 MiB, so one statement never
// holds more than ~50 MiB of deletes), then the export rows, ROW_BATCH per statement; each
// statement is its own transaction. A build still running holds its export row and is skipped
// until it ends. Exports still QUEUED or PROCESSING ABANDONED_HOURS after they were asked for
// lost their job (a worker died on the last attempt) and are marked FAILED. Several csv
// processes may sweep at once (SKIP LOCKED; a chunk deleted twice is deleted once); a pass that
// fails is retried on the next one (workers/periodic.ts).
import { logger } from '../db/logger.ts';
import { publicBaseUrl } from '../db/config.ts';
import { failAbandonedExports } from '../db/exports.ts';
import { deleteExpiredChunks, deleteExpiredExports } from '../db/exports.sql.ts';
import type { WorkerContext } from './context.ts';
import { every, type Periodic } from './periodic.ts';

const CHUNK_BATCH = 50;
const ROW_BATCH = 1_000;
// Far beyond a build's longest run (three attempts of at most an hour each, with backoff).
const ABANDONED_HOURS = 6;
// A file lives for days: a pass every 10 minutes keeps none much past its retention.
const INTERVAL_MS = 10 * 60_000;

/** One pass: fails abandoned exports, deletes expired ones; returns what it did. */
export async function sweepExports(ctx: WorkerContext, stopped: () => boolean = () => false) {
  const hours = ctx.config.EXPORT_RETENTION_HOURS;
  // Each one announced (export.failed) in the transaction that fails it.
  const abandoned = await failAbandonedExports(ctx.pool, ctx.boss, publicBaseUrl(ctx.config), ABANDONED_HOURS);
  let chunks = 0;
  for (;;) {
    const n = await deleteExpiredChunks(ctx.pool, hours, CHUNK_BATCH);
    chunks += n;
    if (n < CHUNK_BATCH || stopped()) break;
  }
  let exports = 0;
  for (;;) {
    const n = await deleteExpiredExports(ctx.pool, hours, ROW_BATCH);
    exports += n;
    if (n < ROW_BATCH || stopped()) break;
  }
  return { abandoned, chunks, exports };
}

/** Runs a pass at start and every INTERVAL_MS until stopped; passes never overlap. */
export function startExportSweep(ctx: WorkerContext): Periodic {
  return every(ctx.pool, 'exports', INTERVAL_MS, async (stopped) => {
    const done = await sweepExports(ctx, stopped);
    if (done.abandoned || done.exports) logger.info({ ...done, retentionHours: ctx.config.EXPORT_RETENTION_HOURS }, 'export sweep');
  });
}
