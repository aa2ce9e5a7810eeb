// export-build (csv group): writes a report export's CSV into export_chunks.
//
// Invariants and why they hold:
// - Constant memory, whatever the row count: rows come through a server-side cursor, 2,000 per
//   FETCH, through csv-stringify, and leave as ~1 MiB chunks as soon as that much is written.
//   One export per process at a time (batchSize 1 in workers/groups.ts): at most one batch of
//   rows and one chunk are held, and the heap settings below keep V8 from growing the heap
//   with the garbage the rows leave (the process's peak RSS is flat in the row count).
// - The file is whole or absent: the cursor, the chunks and COMPLETED are one transaction, run
//   under the export row's lock. A crash rolls everything back; the retry (or a duplicate job)
//   claims the export again, queueing behind that lock, and finds it done or starts over.
// - One header row, then one line per row; amounts are whole Rupiah, timestamps ISO 8601 UTC
//   (formatted by the export queries in db/exports.sql.ts); cells a spreadsheet would run as a
//   formula (=, +, -, @ first) are prefixed with ' (numbers are not touched).
// - Failure: more rows than EXPORT_MAX_ROWS fails at once (narrowing the range is the only fix);
//   anything else is retried, and FAILED only once the last retry failed.
// - The merchant hears of it once: export.completed is queued in the build transaction with
//   COMPLETED, export.failed in the transaction that marks it FAILED (db/exports.ts).
// - With a replica (DATABASE_REPLICA_URL) the rows are read there, in a transaction of its own,
//   once it has replayed everything the primary had committed when the build started; the
//   chunks and COMPLETED still go to the primary in the locked transaction. A replica that does
//   not catch up within DATABASE_REPLICA_MAX_LAG_MS leaves the build on the primary.
import type { Job } from 'pg-boss';
import { stringify } from 'csv-stringify';
import { once } from 'node:events';
import v8 from 'node:v8';
import { logger } from '../db/logger.ts';
import { exportBuilds } from '../db/metrics.ts';
import { publicBaseUrl } from '../db/config.ts';
import { abandonExport, finishExport } from '../db/exports.ts';
import {
  claimExport,
  declareExportCursor,
  exportColumns,
  fetchExportRows,
  insertExportChunk,
  lockExportAttempt,
  type ExportRow,
} from '../db/exports.sql.ts';
import type { Db } from '../db/pool.ts';
import { queues } from '../db/queue.ts';
import type { WorkerContext } from './context.ts';

/** Bytes per stored chunk: few enough rows per download read, small enough to hold one. */
const CHUNK_BYTES = 1 << 20;

class ExportTooLarge extends Error {}

/**
 * Heap growth settings for a csv process, applied when the group starts. An export allocates a
 * few kilobytes of garbage per row (row objects, strings, csv-stringify's per-cell records), and
 * V8 answers such an allocation rate by growing the young generation towards its maximum (64
 * MiB semi-spaces on Node 24) and letting the old generation reach ~4x its live size between
 * full collections: a 1M-row export took the worker from 135 MB to over 300 MB. These keep the
 * young generation at the size start-up left it and the old one within 1.5x of live, at about
 * 12% of the build's speed (measured: docs/performance.md, Exports). Both flags only change
 * growth heuristics that V8 reads at each collection, so setting them at run time is safe.
 */
export function tuneHeapForExports(): void {
  v8.setFlagsFromString('--semi-space-growth-factor=1');
  v8.setFlagsFromString('--heap-growing-percent=50');
}

export async function handleExportBuild(ctx: WorkerContext, payload: { export_id: string }, job: Job<unknown>) {
  const claimed = await claimExport(ctx.pool, payload.export_id);
  if (!claimed) return { skipped: 'finished or gone' };
  const started = performance.now();
  try {
    const fromReplica = ctx.replica.pool !== null && (await ctx.replica.caughtUp(ctx.config.DATABASE_REPLICA_MAX_LAG_MS));
    const counts = await ctx.pool.transaction(async (tx) => {
      // A later attempt claimed it after us: that one builds it.
      if (!(await lockExportAttempt(tx, claimed.id, claimed.attempt))) return null;
      const written = fromReplica
        ? await ctx.replica.readTransaction((rtx) => writeCsv(rtx, tx, claimed, ctx.config.EXPORT_MAX_ROWS, job.signal))
        : await writeCsv(tx, tx, claimed, ctx.config.EXPORT_MAX_ROWS, job.signal);
      await finishExport(tx, ctx.boss, publicBaseUrl(ctx.config), claimed.id, written);
      return { ...written, source: fromReplica ? 'replica' : 'primary' };
    });
    if (!counts) return { skipped: 'overtaken by a later attempt' };
    exportBuilds.inc({ source: counts.source });
    const ms = Math.round(performance.now() - started);
    logger.info({ exportId: claimed.id, type: claimed.type, ...counts, ms }, 'export built');
    return counts;
  } catch (err) {
    const final = err instanceof ExportTooLarge || job.retryCount >= queues['export-build'].options.retryLimit;
    if (!final) throw err;
    logger.error({ err, exportId: claimed.id, attempt: claimed.attempt }, 'export failed');
    const message = err instanceof ExportTooLarge ? err.message : 'The export could not be built; please request it again';
    await abandonExport(ctx.pool, ctx.boss, publicBaseUrl(ctx.config), claimed.id, claimed.attempt, message);
    return { failed: message };
  }
}

/**
 * Streams the export's rows, read in `source`, into chunks written in `tx` (the same transaction
 * unless the rows come from the replica); returns the data rows and bytes written.
 */
async function writeCsv(source: Db, tx: Db, e: ExportRow, maxRows: number, signal: AbortSignal): Promise<{ rows: number; bytes: number }> {
  await declareExportCursor(source, e.type, { merchantId: e.merchant_id, dateFrom: e.date_from, dateTo: e.date_to });
  const csv = stringify({
    header: true,
    columns: exportColumns(e.type),
    escape_formulas: true,
    cast: { boolean: (value) => (value ? 'true' : 'false') },
  });
  const pending: Buffer[] = [];
  let pendingBytes = 0;
  csv.on('data', (chunk: Buffer) => {
    pending.push(chunk);
    pendingBytes += chunk.length;
  });
  let seq = 0;
  let bytes = 0;
  const flush = async () => {
    const data = Buffer.concat(pending, pendingBytes);
    pending.length = 0;
    pendingBytes = 0;
    await insertExportChunk(tx, e.id, seq++, data);
    bytes += data.length;
  };

  let rows = 0;
  for (;;) {
    // The heartbeat found the job's claim gone (expired, or failed by the monitor): stop.
    signal.throwIfAborted();
    const batch = await fetchExportRows(source);
    if (batch.length === 0) break;
    rows += batch.length;
    if (rows > maxRows) {
      throw new ExportTooLarge(`The export has more than ${maxRows} rows; request a narrower date range`);
    }
    for (const row of batch) csv.write(row);
    // The batch's CSV has been emitted by now (csv-stringify pushes as it is written).
    if (pendingBytes >= CHUNK_BYTES) await flush();
  }
  csv.end();
  await once(csv, 'end');
  if (pendingBytes > 0) await flush();
  return { rows, bytes };
}
