// Reports (spec 4.8, DESIGN 6): the profits summary, computed in one statement
// (db/reports.sql.ts), and CSV exports, built by the csv worker group and downloaded from
// Postgres one stored chunk at a time (the file is never held whole by the API). An export
// answers its download_url on the merchant's brand's domain (the key only works there).
//
// Dates are WIB calendar days (YYYY-MM-DD), inclusive at both ends. A missing date_from is the
// first day of the current WIB month and a missing date_to its last day (profits); an export
// without them is open-ended on that side.
import type { Request, Response } from 'express';
import { brandBaseUrl } from '../../db/brands.ts';
import { publicBaseUrl } from '../../db/config.ts';
import { Router } from 'express';
import { z } from 'zod';
import type { AppContext } from '../context.ts';
import { ApiError } from '../../db/errors.ts';
import { exportFileName, requestExport } from '../../db/exports.ts';
import { exportType, findMerchantExport, listMerchantExports, readExportChunk } from '../../db/exports.sql.ts';
import { sumProfits } from '../../db/reports.sql.ts';
import { drained, pageMeta, sendData, sendPage, sendStored } from '../http/envelope.ts';
import { calendarDate as dateParam, knownQuery } from '../http/list-filters.ts';
import { pagination } from '../http/pagination.ts';
import { idempotentRequest, parseBody } from '../http/validate.ts';
import { idempotent } from '../../db/idempotency.ts';
import { toJson } from '../../db/present/json-text.ts';
import { uuidParam } from '../http/wallet.ts';
import { presentExport } from '../../db/present/exports.ts';

const WIB_OFFSET_MS = 7 * 60 * 60 * 1000;

function checkOrder(from: string | undefined, to: string | undefined) {
  if (from !== undefined && to !== undefined && from > to) throw new ApiError('INVALID_BODY', `date_from: must not be after date_to; got ${from} and ${to}`);
}

/** The first and last day of the current month in WIB (UTC+7, no DST). */
export function currentWibMonth(now = new Date()): { first: string; last: string } {
  const wib = new Date(now.getTime() + WIB_OFFSET_MS);
  const [y, m] = [wib.getUTCFullYear(), wib.getUTCMonth()];
  const day = (d: Date) => d.toISOString().slice(0, 10);
  return { first: day(new Date(Date.UTC(y, m, 1))), last: day(new Date(Date.UTC(y, m + 1, 0))) };
}

export const exportBody = z.strictObject({
  type: z.enum(exportType.options),
  date_from: z.unknown().optional(),
  date_to: z.unknown().optional(),
});

/** A period's end under either of its names; both at once is a question with two answers. */
function periodEnd(req: Request, name: string, alias: string): string | undefined {
  if (req.query[name] !== undefined && req.query[alias] !== undefined) throw new ApiError('INVALID_BODY', `${alias}: is ${name} under another name; send one of them`);
  return req.query[name] !== undefined ? dateParam(req.query[name], name) : dateParam(req.query[alias], alias);
}

export function reportRoutes(ctx: AppContext): Router {
  const router = Router();
  const publicBase = publicBaseUrl(ctx.config);
  const baseUrlOf = (req: Request) => brandBaseUrl(publicBase, req.brand);

  router.get('/v1/reports/profits', knownQuery('date_from', 'date_to', 'from', 'to'), async (req, res) => {
    // `from` and `to` are the words a report's period is often asked with: the same days.
    const from = periodEnd(req, 'date_from', 'from');
    const to = periodEnd(req, 'date_to', 'to');
    const month = currentWibMonth();
    const dateFrom = from ?? month.first;
    const dateTo = to ?? month.last;
    checkOrder(dateFrom, dateTo);
    const totals = await sumProfits(ctx.replica.reads(), req.merchant.id, dateFrom, dateTo);
    sendData(res, { date_from: dateFrom, date_to: dateTo, ...totals });
  });

  router.post('/v1/reports/export', async (req, res) => {
    const body = parseBody(exportBody, req.body);
    const dateFrom = dateParam(body.date_from, 'date_from') ?? null;
    const dateTo = dateParam(body.date_to, 'date_to') ?? null;
    checkOrder(dateFrom ?? undefined, dateTo ?? undefined);
    const answer = await idempotent(ctx.pool, idempotentRequest(req, 'export'), async (tx) => {
      const created = await requestExport(tx, ctx.boss, req.merchant, { type: body.type, dateFrom, dateTo });
      return { status: 201, body: toJson({ success: true, data: presentExport(created, baseUrlOf(req)) }) };
    });
    sendStored(res, answer.status, answer.body, answer.replayed);
  });

  router.get('/v1/reports/exports', knownQuery('page', 'limit'), async (req, res) => {
    const { page, limit } = pagination(req);
    const [rows, total] = await listMerchantExports(ctx.replica.reads(), req.merchant.id, page, limit);
    const baseUrl = baseUrlOf(req);
    sendPage(res, rows.map((e) => presentExport(e, baseUrl)), pageMeta(page, limit, total));
  });

  // By id, from the primary: a client polling the export it just asked for never gets a 404.
  router.get('/v1/reports/exports/:id', async (req, res) => {
    const found = await findMerchantExport(ctx.pool, req.merchant.id, uuidParam(req, 'id'));
    if (!found) throw new ApiError('NOT_FOUND', 'Export not found');
    sendData(res, presentExport(found, baseUrlOf(req)));
  });

  /** The Retry-After of a download asked for too early: exports of a month take seconds. */
  const EXPORT_POLL_SECONDS = 5;

  router.get('/v1/reports/exports/:id/download', async (req: Request, res: Response) => {
    const found = await findMerchantExport(ctx.pool, req.merchant.id, uuidParam(req, 'id'));
    if (!found) throw new ApiError('NOT_FOUND', 'Export not found');
    // The contract's download answers 200 or 404; an export that exists without its file is a 404
    // under a code of its own, so a client can tell "wait" and "ask again" from "no such export".
    if (found.status === 'FAILED') throw new ApiError('EXPORT_FAILED', `The export failed (${found.error ?? 'no file'}); request a new one`);
    if (found.status !== 'COMPLETED') {
      const notReady = new ApiError('EXPORT_NOT_READY', `The export is still being built (${found.status}); poll GET /v1/reports/exports/${found.id} or wait for export.completed, then download`);
      notReady.retryAfterSeconds = EXPORT_POLL_SECONDS;
      throw notReady;
    }
    const size = found.byte_count!;
    res.status(200);
    res.setHeader('Content-Type', 'text/csv; charset=utf-8');
    res.setHeader('Content-Disposition', `attachment; filename="${exportFileName(found)}"`);
    res.setHeader('Content-Length', String(size));
    res.setHeader('Cache-Control', 'private, no-store');
    if (req.method === 'HEAD') {
      res.end();
      return;
    }
    try {
      let sent = 0;
      for (let seq = 0; sent < size && !res.destroyed; seq++) {
        const data = await readExportChunk(ctx.pool, found.id, seq);
        // Deleted meanwhile (retention): cut the response short rather than end it as if whole.
        if (!data) throw new Error(`export ${found.id} lost chunk ${seq} while downloading`);
        sent += data.length;
        if (!res.write(data)) await drained(res);
      }
      res.end();
    } catch (err) {
      res.destroy();
      throw err;
    }
  });

  return router;
}
