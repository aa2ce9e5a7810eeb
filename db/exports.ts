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
import { randomUUID } from 'node:crypto';
import type { PgBoss } from 'pg-boss';
import { ApiError } from './errors.ts';
import { insertExport, type ExportRow, type ExportType } from './exports.sql.ts';
import type { Db } from './pool.ts';
import { inTransaction, sendJob } from './queue.ts';

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
