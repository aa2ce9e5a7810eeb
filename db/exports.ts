// Report exports: a merchant asks for a CSV of one of its lists; the csv worker group builds it
// (workers/export-build.ts) into Postgres, where any API process can stream it back.
//
// Invariants and why they hold:
// - Only the merchant's rows: every export query filters on the export's merchant_id, and the
//   API finds an export (and its file) only together with the requesting merchant.
// - Every export is built: the row and its `export-build` job commit in one transaction.
// - A file is whole or absent: a build writes its chunks and COMPLETED in one transaction, so
//   the download (which serves COMPLETED exports only) never sees a partial file, and a retried
//   build never finds chunks of an earlier attempt.
// - Exports mirror the lists a merchant may read: balance history and disbursements are WALLET
//   merchants' (403 NOT_WALLET_MERCHANT otherwise, as GET /v1/balance-history and
//   /v1/disbursements answer); orders and settlements are anyone's.
// - A finished export is announced once: export.completed (or export.failed) is written to the
//   webhook outbox in the transaction that finishes it, to the merchant's default notify URL
//   (an export has no URL of its own; without a default nothing is sent).
import { randomUUID } from 'node:crypto';
import type { PgBoss } from 'pg-boss';
import { ApiError } from './errors.ts';
import { brandBaseUrl, findBrandById } from './brands.ts';
import {
  completeExport,
  failAbandonedExportRows,
  failExport,
  insertExport,
  type ExportRow,
  type ExportType,
} from './exports.sql.ts';
import { getMerchant } from './merchants.ts';
import type { Db } from './pool.ts';
import { exportWebhookBody, type ExportEvent } from './present/exports.ts';
import { inTransaction, sendJob } from './queue.ts';
import { enqueueWebhooks } from './webhooks.ts';

const WALLET_ONLY: ReadonlySet<ExportType> = new Set(['balance_history', 'disbursements']);

export async function requestExport(
  pool: Db,
  boss: PgBoss,
  merchant: { id: string; settlement_type: 'WALLET' | 'MANUAL' },
  input: { type: ExportType; dateFrom: string | null; dateTo: string | null },
): Promise<ExportRow> {
  if (WALLET_ONLY.has(input.type) && merchant.settlement_type !== 'WALLET') {
    throw new ApiError('NOT_WALLET_MERCHANT', `A ${input.type} export is for WALLET merchants only`);
  }
  return pool.transaction(async (tx) => {
    const row = await insertExport(tx, { id: randomUUID(), merchantId: merchant.id, ...input });
    await sendJob(boss, 'export-build', { export_id: row.id }, { db: inTransaction(tx) });
    return row;
  });
}

/** The file name a download is offered under: `<type>_<from>_<to>_<id prefix>.csv`. */
export function exportFileName(e: Pick<ExportRow, 'id' | 'type' | 'date_from' | 'date_to'>): string {
  return `${e.type}_${e.date_from ?? 'start'}_${e.date_to ?? 'latest'}_${e.id.slice(0, 8)}.csv`;
}

/** The base URL of the merchant's brand, where its export's download_url points. */
export async function merchantBaseUrl(db: Db, publicBaseUrl: string, merchantId: string): Promise<string> {
  const merchant = await getMerchant(db, merchantId);
  return brandBaseUrl(publicBaseUrl, await findBrandById(db, merchant.brand_id));
}

async function announce(tx: Db, boss: PgBoss, publicBaseUrl: string, e: ExportRow, event: ExportEvent) {
  // An operator's export (a reconciliation's differences) has no merchant to tell.
  if (e.merchant_id === null) return;
  const baseUrl = await merchantBaseUrl(tx, publicBaseUrl, e.merchant_id);
  await enqueueWebhooks(tx, boss, [{ merchantId: e.merchant_id, orderId: null, exportId: e.id, event, url: null, body: exportWebhookBody(e, baseUrl, event) }]);
}

/** Marks the build COMPLETED with its counts and queues export.completed; `tx` is the build's. */
export async function finishExport(tx: Db, boss: PgBoss, publicBaseUrl: string, id: string, counts: { rows: number; bytes: number }) {
  const done = await completeExport(tx, id, counts);
  await announce(tx, boss, publicBaseUrl, done, 'export.completed');
  return done;
}

/** Fails this attempt's export (unless a later attempt took it over) and queues export.failed. */
export function abandonExport(pool: Db, boss: PgBoss, publicBaseUrl: string, id: string, attempt: number, error: string) {
  return pool.transaction(async (tx) => {
    const failed = await failExport(tx, id, attempt, error);
    if (failed) await announce(tx, boss, publicBaseUrl, failed, 'export.failed');
    return failed;
  });
}

/**
 * Fails exports still QUEUED or PROCESSING `hours` after they were asked for (their jobs are
 * gone) and queues export.failed for each; returns how many.
 */
export function failAbandonedExports(pool: Db, boss: PgBoss, publicBaseUrl: string, hours: number) {
  return pool.transaction(async (tx) => {
    const failed = await failAbandonedExportRows(tx, hours);
    for (const e of failed) await announce(tx, boss, publicBaseUrl, e, 'export.failed');
    return failed.length;
  });
}
