// page/limit as spec 8: integers, page ≥ 1, 1 ≤ limit ≤ max. Anything else is 400 INVALID_BODY
// naming the parameter (a silently clamped limit hides client bugs).
import type { Request } from 'express';
import { ApiError, describeReceived } from '../../db/errors.ts';

export function pagination(req: Request, defaults: { limit: number; max: number } = { limit: 20, max: 100 }) {
  const read = (name: 'page' | 'limit', fallback: number, min: number, max: number): number => {
    const raw = req.query[name];
    if (raw === undefined) return fallback;
    if (typeof raw !== 'string' || !/^\d+$/.test(raw)) throw new ApiError('INVALID_BODY', `${name}: must be an integer from ${min} to ${max}; got ${describeReceived(raw)}`);
    const value = Number(raw);
    if (value < min || value > max) throw new ApiError('INVALID_BODY', `${name}: must be an integer from ${min} to ${max}; got ${raw}`);
    return value;
  };
  return { page: read('page', 1, 1, 1_000_000), limit: read('limit', defaults.limit, 1, defaults.max) };
}

/**
 * A list's cursor (`cursor`, `meta.next_cursor`, beside spec 8's page and limit): opaque to clients, base64url of the page number
 * it leads to and the last row's sort key (created_at in microseconds, id). Anything that does
 * not decode to exactly that is INVALID_BODY, never a statement Postgres refuses.
 */
export interface Cursor {
  page: number;
  micros: string;
  id: string;
}

const CURSOR = /^([1-9]\d{0,9}):(-?\d{1,17}):([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/;

export function encodeCursor(cursor: Cursor): string {
  return Buffer.from(`${cursor.page}:${cursor.micros}:${cursor.id}`).toString('base64url');
}

/**
 * The request's `cursor`: undefined without one (a page-numbered request, whose meta is spec 8's
 * alone), 'start' for an empty one (a walk's first page), else where the walk goes on.
 */
export function cursorOf(req: Request): Cursor | 'start' | undefined {
  const raw = req.query.cursor;
  if (raw === undefined) return undefined;
  if (raw === '') return 'start';
  const match = typeof raw === 'string' && /^[A-Za-z0-9_-]{1,200}$/.test(raw) ? CURSOR.exec(Buffer.from(raw, 'base64url').toString('latin1')) : null;
  if (!match) throw new ApiError('INVALID_BODY', `cursor: must be a meta.next_cursor this list returned; got ${describeReceived(raw)}`);
  return { page: Number(match[1]), micros: match[2], id: match[3] };
}
