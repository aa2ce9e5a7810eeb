// V1 success envelopes (spec 2.1). Errors are written only by the error middleware. Bodies are
// serialised with toJson so merchant JSON kept as text (order metadata) goes out as sent.
import type { Response } from 'express';
import { toJson } from '../../db/present/json-text.ts';

export interface PageMeta {
  page: number;
  limit: number;
  total: number;
  total_pages: number;
}

export function sendData(res: Response, data: unknown, status = 200): void {
  res.status(status).type('application/json').send(toJson({ success: true, data }));
}

/** Sends an answer stored as bytes (an Idempotency-Key's); a replay says so in a header. */
export function sendStored(res: Response, status: number, body: string, replayed: boolean): void {
  if (replayed) res.setHeader('Idempotent-Replayed', 'true');
  res.status(status).type('application/json').send(body);
}

export function sendPage(res: Response, data: unknown[], meta: PageMeta): void {
  res.status(200).type('application/json').send(toJson({ success: true, data, meta }));
}

export function pageMeta(page: number, limit: number, total: number): PageMeta {
  return { page, limit, total, total_pages: Math.ceil(total / limit) };
}

/**
 * For streamed answers (exports, import results): resolves once `res` has taken what was
 * written and can take more, or has closed because the client went away.
 */
export function drained(res: Response): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}
