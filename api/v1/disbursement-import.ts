// POST /v1/disbursements/import (spec 4.3; WALLET merchants only): a CSV of disbursements as
// multipart/form-data (`file`, `idempotency_prefix`). The file is parsed in a worker thread
// (workers/csv), each row is read exactly as POST /v1/disbursements reads a body (the same zod
// shape, phone normalisation and notify_url check, then the same rules in db/), and the file is
// decided as a whole in one transaction (db/disbursement-imports.ts). Row n (n = 1 for the first
// data row after the header) is keyed `<idempotency_prefix>-<n>`, so a retry with the same
// prefix creates nothing twice. The answer is 200 with an outcome per row; a file that cannot
// be read as a whole is 400 INVALID_FILE (413 when too large) and writes nothing.
//
// GET /v1/disbursements/imports (a page, newest first) and GET /v1/disbursements/imports/{id}
// (one, with its refused rows' reasons) read the record every import leaves.
import { createHash } from 'node:crypto';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { Router, type Response } from 'express';
import type { AppContext } from '../context.ts';
import { importDisbursements, type ImportResult, type ImportRow, type RowOutcome } from '../../db/disbursement-imports.ts';
import { findMerchantImport, listImportRefusals, listMerchantImports } from '../../db/disbursement-imports.sql.ts';
import { presentImport, presentRefusal } from '../../db/present/disbursement-imports.ts';
import { ApiError } from '../../db/errors.ts';
import { logger } from '../../db/logger.ts';
import { getMoneySettings } from '../../db/merchants.ts';
import { IMPORT_COLUMNS, rowCells, type PackedRows } from '../csv/parse-import.ts';
import { parseImportFile } from '../csv/pool.ts';
import { pageMeta, sendDataWithList, sendPage } from '../http/envelope.ts';
import { pagination } from '../http/pagination.ts';
import { readUpload } from '../http/multipart.ts';
import { parseBody } from '../http/validate.ts';
import { requireWalletMerchant, uuidParam } from '../http/wallet.ts';
import { checkContactFields, createBody } from './disbursements.ts';
import { knownQuery } from '../http/list-filters.ts';

// The JSON body's own field rules, for the fields a CSV row has.
const rowShape = createBody.pick({
  channel: true,
  bank_short_code: true,
  account_number: true,
  account_name: true,
  ewallet_provider: true,
  ewallet_phone: true,
  amount: true,
  notify_url: true,
});

/** Keys are `<prefix>-<row>` and must fit the 255 characters of an idempotency_key. */
const PREFIX_MAX = 200;
const YIELD_EVERY = 1_000;

/** A CSV amount is digits only: "1.5", "1,000", "1e3" or "-5" stay text and fail the amount rule. */
function amountOf(cell: string): unknown {
  return /^\d+$/.test(cell) ? Number(cell) : cell;
}

/** One row as POST /v1/disbursements reads a body, in the same order; throws ApiError. */
function readRow(cells: string[], merchantId: string, key: string, allowlist: readonly string[]) {
  // An empty cell is a field not given (absent, as from a JSON body).
  const fields: Record<string, unknown> = {};
  for (const [i, name] of IMPORT_COLUMNS.entries()) {
    if (cells[i] !== '') fields[name] = name === 'amount' ? amountOf(cells[i]) : cells[i];
  }
  const body = parseBody(rowShape, fields);
  const phone = checkContactFields(body, allowlist);
  if (!body.channel) throw new ApiError('INVALID_BODY', 'channel: is required without beneficiary_id (BANK or EWALLET)');
  return {
    merchantId,
    api: 'V1' as const,
    source: 'IMPORT',
    idempotencyKey: key,
    channel: body.channel,
    bankShortCode: body.bank_short_code,
    accountNumber: body.account_number,
    accountName: body.account_name,
    ewalletProvider: body.ewallet_provider,
    ewalletPhone: phone,
    amount: body.amount,
    notifyUrl: body.notify_url ?? null,
    beneficiaryId: null,
  };
}

async function readRows(packed: PackedRows, merchantId: string, prefix: string, allowlist: readonly string[], columns: number): Promise<ImportRow[]> {
  const rows: ImportRow[] = new Array(packed.count);
  for (let index = 0; index < packed.count; index++) {
    if (index % YIELD_EVERY === YIELD_EVERY - 1) await nextTurn();
    const n = index + 1;
    const key = `${prefix}-${n}`;
    const cells = rowCells(packed, index);
    if (cells === null) rows[index] = { row: n, key, blank: true };
    else if (!Array.isArray(cells)) rows[index] = { row: n, key, error: new ApiError('INVALID_BODY', `row has ${cells.fields} fields; the header has ${columns}`) };
    else {
      try {
        rows[index] = { row: n, key, request: readRow(cells, merchantId, key, allowlist) };
      } catch (err) {
        if (!(err instanceof ApiError)) throw err;
        rows[index] = { row: n, key, error: err };
      }
    }
  }
  return rows;
}

function presentOutcome(o: RowOutcome) {
  if (o.status === 'REFUSED') return { row: o.row, idempotency_key: o.key, status: o.status, error: o.error };
  if (o.status === 'SKIPPED') return { row: o.row, idempotency_key: o.key, status: o.status };
  return {
    row: o.row,
    idempotency_key: o.key,
    status: o.status,
    disbursement_id: o.disbursement.id,
    ref_code: o.disbursement.refCode,
    disbursement_status: o.disbursement.status,
    total_debit: o.disbursement.totalDebit,
  };
}

/** The result with one outcome per row, streamed: 100,000 rows are ~15 MB of JSON. */
function sendImport(res: Response, r: ImportResult) {
  const head = {
    import_id: r.importId,
    idempotency_prefix: r.prefix,
    rows: r.rows,
    accepted: r.accepted,
    already_imported: r.alreadyImported,
    refused: r.refused,
    skipped: r.skipped,
    queued: r.queued,
    total_debit: r.totalDebit,
  };
  return sendDataWithList(res, head, 'results', r.outcomes, presentOutcome);
}

export function disbursementImportRoutes(ctx: AppContext): Router {
  const router = Router();

  // Mounted before disbursementRoutes, so its router.use(requireWalletMerchant) has not run yet.
  router.post('/v1/disbursements/import', requireWalletMerchant, async (req, res) => {
    const started = performance.now();
    const upload = await readUpload(req, { fileField: 'file', maxFileBytes: ctx.config.IMPORT_MAX_BYTES });
    const prefix = upload.fields.idempotency_prefix?.trim() ?? '';
    const problems = [
      upload.file ? null : 'file: is required (a multipart part named "file")',
      prefix ? null : 'idempotency_prefix: is required',
      prefix.length > PREFIX_MAX ? `idempotency_prefix: must be at most ${PREFIX_MAX} characters` : null,
      prefix.includes('\u0000') ? 'idempotency_prefix: must not contain NUL characters' : null,
      upload.file && upload.file.bytes.length === 0 ? 'file: is empty' : null,
    ].filter(Boolean);
    if (problems.length) throw new ApiError('INVALID_FILE', problems.join('; '));
    const file = upload.file!;

    const parsed = await parseImportFile(file.bytes, ctx.config.IMPORT_MAX_ROWS);
    const parsedAt = performance.now();
    if (!parsed.ok) throw new ApiError('INVALID_FILE', parsed.message);
    if (parsed.rows.count === 0) throw new ApiError('INVALID_FILE', 'file has a header row and no data rows');
    const rows = await readRows(parsed.rows, req.merchant.id, prefix, ctx.config.NOTIFY_URL_ALLOWLIST, parsed.columns);

    const settings = await getMoneySettings(ctx.pool, req.merchant.id);
    const result = await importDisbursements(ctx.pool, ctx.boss, settings, {
      merchantId: req.merchant.id,
      prefix,
      fileName: file.filename,
      fileSha256: createHash('sha256').update(file.bytes).digest('hex'),
      fileBytes: file.bytes.length,
      uploadedBy: { userId: req.userId, role: req.role },
      rows,
    });
    await sendImport(res, result);
    logger.info(
      { requestId: req.requestId, merchantId: req.merchant.id, importId: result.importId, rows: result.rows, accepted: result.accepted,
        alreadyImported: result.alreadyImported, refused: result.refused, readMs: Math.round(parsedAt - started), totalMs: Math.round(performance.now() - started) },
      'disbursement import',
    );
  });

  // Past imports. Mounted here, before disbursementRoutes, so GET /v1/disbursements/:id never
  // reads "imports" as a disbursement id. Reads are open to every role (api/http/roles.ts).
  router.get('/v1/disbursements/imports', requireWalletMerchant, knownQuery('page', 'limit'), async (req, res) => {
    const { page, limit } = pagination(req);
    const [rows, total] = await listMerchantImports(ctx.pool, req.merchant.id, page, limit);
    sendPage(res, rows.map(presentImport), pageMeta(page, limit, total));
  });

  router.get('/v1/disbursements/imports/:id', requireWalletMerchant, async (req, res) => {
    const found = await findMerchantImport(ctx.pool, req.merchant.id, uuidParam(req, 'id'));
    if (!found) throw new ApiError('NOT_FOUND', 'Import not found');
    const refusals = await listImportRefusals(ctx.pool, found.id);
    await sendDataWithList(res, presentImport(found), 'refused_rows', refusals, presentRefusal);
  });

  return router;
}
