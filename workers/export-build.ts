// export-build (csv group): writes a report export's CSV into export_chunks.
//
// Invariants and why they hold:
// - Postgres writes the CSV: one `COPY (select …) TO STDOUT WITH (FORMAT csv, HEADER)`
//   (db/exports.sql.ts exportCsvCopy), read on a connection of its own (db/copy-out.ts); the
//   worker only cuts the stream into 1 MiB chunks and inserts them.
// - Constant memory, whatever the row count: the stream is read only while no chunk insert
//   runs (Postgres waits on its send meanwhile), into one chunk buffer reused for every chunk,
//   and a minor collection after each insert frees the buffers the bytes passed through
//   (tuneHeapForExports). One export per process at a time (batchSize 1 in workers/groups.ts).
// - One snapshot: the rows are one statement's, committed before the COPY started.
// - The file is whole or absent: the chunks and COMPLETED are one transaction on the primary,
//   run under the export row's lock, while the COPY reads on its own connection. A crash (or
//   any failure) rolls the chunks back and drops the COPY's connection; the retry (or a duplicate
//   job) claims the export again, queueing behind that lock, and finds it done or starts over.
// - The file is the one the cursor build wrote with csv-stringify, byte for byte (the export
//   tests hold it to that): one header row, then one line per row ending in '\n'; amounts are
//   whole Rupiah, timestamps ISO 8601 UTC, booleans true/false, NULL and '' an empty cell; text
//   a spreadsheet would run as a formula (=, +, -, @, tab, CR and their full-width forms first)
//   is prefixed with ' (numbers are not touched). Each column's kind in db/exports.sql.ts says how.
// - Failure: more rows than EXPORT_MAX_ROWS fails at once (narrowing the range is the only fix):
//   the COPY reads one row past the limit and its row count decides, then the transaction rolls
//   back what was written. Anything else is retried, and FAILED only once the last retry failed.
// - The merchant hears of it once: export.completed is queued in the build transaction with
//   COMPLETED, export.failed in the transaction that marks it FAILED (db/exports.ts).
// - With a replica (DATABASE_REPLICA_URL) the COPY runs there, once it has replayed everything
//   the primary had committed when the build started; the chunks and COMPLETED still go to the
//   primary in the locked transaction. A replica that does not catch up within
//   DATABASE_REPLICA_MAX_LAG_MS leaves the COPY on the primary (DATABASE_URL).
import type { Job } from 'pg-boss';
import type { Readable } from 'node:stream';
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import { logger } from '../db/logger.ts';
import { exportBuilds } from '../db/metrics.ts';
import { publicBaseUrl } from '../db/config.ts';
import { copyOut } from '../db/copy-out.ts';
import { abandonExport, finishExport } from '../db/exports.ts';
import { allowExportReadWaits, claimExport, exportCsvCopy, insertExportChunk, lockExportAttempt, type ExportRow } from '../db/exports.sql.ts';
import type { Db } from '../db/pool.ts';
import { queues } from '../db/queue.ts';
import type { WorkerContext } from './context.ts';

/** Bytes per stored chunk: few enough rows per download read, small enough to hold one. */
const CHUNK_BYTES = 1 << 20;

/**
 * The COPY's statement_timeout, and how long the build transaction may wait on it: as long as
 * the job may run. The role's 30 s and 60 s guard requests; a build whose worker lost its claim
 * is stopped by the heartbeat (job.signal) long before.
 */
const COPY_TIMEOUT_MS = queues['export-build'].options.expireInSeconds * 1000;

class ExportTooLarge extends Error {}

/** A young-generation collection, once tuneHeapForExports has made one callable. */
let collectYoung: () => void = () => {};

/**
 * Heap settings for a csv process, applied when the group starts. The CSV passes through the
 * worker as Buffers (the socket's reads, pg-copy-streams' pieces, each chunk's bind message)
 * whose memory lives outside V8's heap and is freed only once a collection finds their small
 * heap handles dead. Those handles fill the young generation slowly, so dead buffers piled up
 * between collections: a 1M-row export took the worker from 125 to 190 MB (153 MB with the
 * heap-growth flags the cursor build used). A minor collection after each stored chunk frees
 * them: 133 MB, at no measurable cost in speed (under 1 ms each, 240 per 1M rows; measured:
 * docs/performance.md, Exports). V8's gc function is exposed by setting its flag at run time
 * and taken from a new context; where a Node does not expose it so, builds run without.
 */
export function tuneHeapForExports(): void {
  v8.setFlagsFromString('--expose-gc');
  const gc = runInNewContext('typeof gc === "function" ? gc : null') as ((options: { type: 'minor' }) => void) | null;
  if (gc) collectYoung = () => gc({ type: 'minor' });
}

export async function handleExportBuild(ctx: WorkerContext, payload: { export_id: string }, job: Job<unknown>) {
  const claimed = await claimExport(ctx.pool, payload.export_id);
  if (!claimed) return { skipped: 'finished or gone' };
  const started = performance.now();
  try {
    const fromReplica = ctx.replica.pool !== null && (await ctx.replica.caughtUp(ctx.config.DATABASE_REPLICA_MAX_LAG_MS));
    const source = fromReplica ? ctx.config.DATABASE_REPLICA_URL! : ctx.config.DATABASE_URL;
    const counts = await ctx.pool.transaction(async (tx) => {
      // A later attempt claimed it after us: that one builds it.
      if (!(await lockExportAttempt(tx, claimed.id, claimed.attempt))) return null;
      await allowExportReadWaits(tx, COPY_TIMEOUT_MS);
      const written = await writeCsv(source, tx, claimed, ctx.config.EXPORT_MAX_ROWS, job.signal);
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
 * Runs the export's COPY on `url` and stores its output as chunks in `tx`; returns the data rows
 * and bytes written.
 */
async function writeCsv(url: string, tx: Db, e: ExportRow, maxRows: number, signal: AbortSignal): Promise<{ rows: number; bytes: number }> {
  // One row past the limit is enough to know the export is too large.
  const statement = exportCsvCopy(e.type, { merchantId: e.merchant_id, dateFrom: e.date_from, dateTo: e.date_to, reconRunId: e.recon_run_id }, maxRows + 1);
  // One buffer, filled and stored again and again: an insert has sent its bytes when it returns.
  const chunk = Buffer.allocUnsafe(CHUNK_BYTES);
  let filled = 0;
  let seq = 0;
  let bytes = 0;
  const store = async () => {
    await insertExportChunk(tx, e.id, seq++, chunk.subarray(0, filled));
    bytes += filled;
    filled = 0;
    collectYoung();
  };
  const cut = async (csv: Readable) => {
    // The next piece is read only once the insert before it is done: meanwhile Postgres waits.
    for await (const piece of csv as AsyncIterable<Buffer>) {
      for (let at = 0; at < piece.length; ) {
        const n = piece.copy(chunk, filled, at);
        filled += n;
        at += n;
        if (filled === CHUNK_BYTES) await store();
      }
    }
    if (filled > 0) await store();
  };
  // The heartbeat found the job's claim gone (expired, or failed by the monitor): the signal stops the COPY.
  const rows = await copyOut(statement, { url, applicationName: 'kasir-export-build', statementTimeoutMs: COPY_TIMEOUT_MS, signal }, cut);
  if (rows > maxRows) throw new ExportTooLarge(`The export has more than ${maxRows} rows; request a narrower date range`);
  return { rows, bytes };
}
