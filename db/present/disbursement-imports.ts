// Past CSV imports as GET /v1/disbursements/imports shows them: the counts and total_debit under
// the names the import's own answer uses (POST /v1/disbursements/import), who uploaded the file,
// and for one import its refused rows as the answer listed them. The uploader is the team user
// (user_id and name; emails stay on the owner-only team endpoints) or, with user_id null, the
// merchant's own key; null for imports recorded before uploaders were.
import type { ImportRecord, RefusalRow } from '../disbursement-imports.sql.ts';
import { iso } from './time.ts';

export function presentImport(i: ImportRecord) {
  return {
    id: i.id,
    idempotency_prefix: i.idempotency_prefix,
    file_name: i.file_name,
    file_sha256: i.file_sha256,
    file_bytes: i.file_bytes,
    uploaded_by: i.uploaded_by_role === null ? null : { user_id: i.uploaded_by_user_id, full_name: i.uploaded_by_name, role: i.uploaded_by_role },
    rows: i.row_count,
    accepted: i.accepted_count,
    already_imported: i.already_imported_count,
    refused: i.refused_count,
    skipped: i.skipped_count,
    total_debit: i.total_debit,
    created_at: iso(i.created_at),
  };
}

export function presentRefusal(r: RefusalRow) {
  return { row: r.row_number, idempotency_key: r.idempotency_key, error: { code: r.code, message: r.message } };
}
