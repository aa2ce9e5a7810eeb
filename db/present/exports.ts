// Export jobs as the V1 API shows them (DESIGN 6: export job record), with the absolute URL the
// file downloads from once COMPLETED (null before, and for a FAILED one), and the webhook body
// of an export event: the record plus `event`. The URL is on the merchant's brand's base URL,
// as an order's checkout_url is (db/brands.ts brandBaseUrl).
import type { ExportRow } from '../exports.sql.ts';
import { iso } from './time.ts';

export function exportDownloadUrl(baseUrl: string, e: Pick<ExportRow, 'id' | 'status'>): string | null {
  return e.status === 'COMPLETED' ? `${baseUrl}/v1/reports/exports/${e.id}/download` : null;
}

export function presentExport(e: ExportRow, baseUrl: string) {
  return {
    id: e.id,
    type: e.type,
    status: e.status,
    date_from: e.date_from,
    date_to: e.date_to,
    row_count: e.row_count,
    download_url: exportDownloadUrl(baseUrl, e),
    created_at: iso(e.created_at),
    completed_at: iso(e.completed_at),
    error: e.error,
  };
}

export type ExportEvent = 'export.completed' | 'export.failed';

export function exportWebhookBody(e: ExportRow, baseUrl: string, event: ExportEvent): Record<string, unknown> {
  return { ...presentExport(e, baseUrl), event };
}
