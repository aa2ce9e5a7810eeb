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
