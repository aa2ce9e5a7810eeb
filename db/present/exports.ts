// Export jobs as the V1 API shows them (DESIGN 6: export job record).
import type { ExportRow } from '../exports.sql.ts';
import { iso } from './time.ts';

export function presentExport(e: ExportRow) {
  return {
    id: e.id,
    type: e.type,
    status: e.status,
    date_from: e.date_from,
    date_to: e.date_to,
    row_count: e.row_count,
    created_at: iso(e.created_at),
    completed_at: iso(e.completed_at),
    error: e.error,
  };
}
