// V1 success envelopes (spec 2.1). Errors are written only by the error middleware. Bodies are
// serialised with toJson so merchant JSON kept as text (order metadata) goes out as sent.
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Response } from 'express';
import { toJson } from '../../db/present/json-text.ts';

export interface PageMeta {
  page: number;
  limit: number;
  total: number;
  total_pages: number;
  /** A list that can be walked by cursor (GET /v1/orders): where the next page starts, null after the last. */
  next_cursor?: string | null;
}

export function sendData(res: Response, data: unknown, status = 200): void {
  res.status(status).type('application/json').send(toJson({ success: true, data }));
}

/** Sends an answer stored as bytes (an Idempotency-Key's); a replay says so in a header. */
export function sendStored(res: Response, status: number, body: string, replayed: boolean): void {
  if (replayed) res.setHeader('Idempotent-Replayed', 'true');
  res.status(status).type('application/json').send(body);
}

/** `meta` may carry more than the page (a log's retained_since). */
export function sendPage(res: Response, data: unknown[], meta: PageMeta & { retained_since?: string }): void {
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

const STREAM_CHUNK = 1_000;

/**
 * `{success: true, data: {...head, [field]: items}}` for a record with a long list (an import's
 * rows: 100,000 are ~15 MB of JSON, and one stringify would stall every other request for a few
 * hundred milliseconds): the list is written a thousand items at a time with the event loop let
 * through in between, waiting for the client to drain. `head` holds plain JSON values only.
 */
export async function sendDataWithList<T>(res: Response, head: Record<string, unknown>, field: string, items: readonly T[], present: (item: T) => unknown, status = 200): Promise<void> {
  const envelope = JSON.stringify({ success: true, data: { ...head, [field]: [] } });
  res.status(status).type('application/json');
  res.write(envelope.slice(0, -3)); // up to and including the list's '['
  for (let start = 0; start < items.length; start += STREAM_CHUNK) {
    const chunk = items.slice(start, start + STREAM_CHUNK).map((item) => JSON.stringify(present(item))).join(',');
    if (res.destroyed) return;
    if (!res.write(start === 0 ? chunk : `,${chunk}`)) await drained(res);
    else await nextTurn();
  }
  res.end(']}}');
}
