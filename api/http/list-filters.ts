// Query filters of the V1 lists: WIB calendar days (YYYY-MM-DD) as the reports take them
// (docs/decisions.md, Reports and exports) and enumerated values. A value that is not one of
// these, or a repeated parameter, is 400 INVALID_BODY naming the parameter: a filter silently
// ignored would answer a list the client did not ask for.
import type { Request } from 'express';
import { z } from 'zod';
import { ApiError, describeReceived } from '../../db/errors.ts';
import { closestName } from './validate.ts';

const DATE = /^(19|[2-9]\d)\d{2}-\d{2}-\d{2}$/;

/**
 * The days calendarDate accepts, as the OpenAPI document shows them (its `Day`): one pattern
 * (years 1900-9999, months 01-12, days 01-31) with the date format; calendarDate also refuses
 * days a month does not have.
 */
export const DAY_PATTERN = /^(19|[2-9]\d)\d{2}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$/;
export function calendarDay() {
  return z.string().regex(DAY_PATTERN).meta({ format: 'date' });
}

/** A YYYY-MM-DD calendar date (1900–9999), or undefined when absent; anything else is INVALID_BODY naming it. */
export function calendarDate(value: unknown, name: string): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'string' && DATE.test(value)) {
    // Date.UTC rolls 2026-02-30 over into March: a real calendar date round-trips unchanged.
    const [y, m, d] = value.split('-').map(Number);
    if (new Date(Date.UTC(y, m - 1, d)).toISOString().startsWith(value)) return value;
  }
  throw new ApiError('INVALID_BODY', `${name}: must be a date as YYYY-MM-DD from 1900-01-01 to 9999-12-31; got ${describeReceived(value)}`);
}

/** `date_from` and `date_to`: WIB days, inclusive, each optional, in order. */
export function dayRange(req: Request): { dateFrom?: string; dateTo?: string } {
  const dateFrom = calendarDate(req.query.date_from, 'date_from');
  const dateTo = calendarDate(req.query.date_to, 'date_to');
  if (dateFrom !== undefined && dateTo !== undefined && dateFrom > dateTo) throw new ApiError('INVALID_BODY', `date_from: must not be after date_to; got ${dateFrom} and ${dateTo}`);
  return { dateFrom, dateTo };
}

/** An optional query parameter that must be one of `values`. */
export function oneOf<T extends string>(req: Request, name: string, values: readonly T[]): T | undefined {
  const raw = req.query[name];
  if (raw === undefined) return undefined;
  if (typeof raw === 'string' && (values as readonly string[]).includes(raw)) return raw as T;
  throw new ApiError('INVALID_BODY', `${name}: must be one of ${values.join(', ')}; got ${describeReceived(raw)}`);
}

/**
 * Refuses what a list or report cannot have meant: a query parameter it does not know (named,
 * with the known name it was probably meant to be, as unknown body fields are), and a NUL
 * character in any value (Postgres text cannot hold one: it would be a 500).
 */
export function knownQuery(...names: string[]) {
  return (req: Request, _res: unknown, next: () => void) => {
    const query = req.query as Record<string, unknown>;
    const unknown = Object.keys(query).filter((name) => !names.includes(name));
    if (unknown.length) {
      const named = unknown.map((name) => {
        const near = closestName(name, names);
        return near ? `${name} (did you mean ${near}?)` : name;
      });
      const known = names.length ? `; known: ${names.join(', ')}` : '; this takes no query parameters';
      throw new ApiError('INVALID_BODY', `Received unknown query parameter${unknown.length > 1 ? 's' : ''}: ${named.join(', ')}${known}`);
    }
    for (const [name, value] of Object.entries(query)) {
      if ((Array.isArray(value) ? value : [value]).some((v) => typeof v === 'string' && v.includes('\u0000'))) {
        throw new ApiError('INVALID_BODY', `${name}: must not contain a NUL character`);
      }
    }
    next();
  };
}
