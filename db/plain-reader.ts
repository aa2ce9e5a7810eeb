// A read-only session on node-postgres alone, for a process that reads a few rows and exits:
// the ops CLI's list commands (scripts/ops/lists.ts). slonik's pool, with its tag, tracing and
// zod row schemas, costs about 250 ms of CPU to load, most of a short command's budget; pg
// alone costs about 45. One connection, no pool, values parsed as the pool parses them
// (db/pool.ts), and the queries live with their callers in db/operator-lists.ts.
import pg from 'pg';
import { newClient } from './database-hosts.ts';

/** What the list queries need of a database: rows of one statement, positional values. */
export interface Reader {
  rows<T>(text: string, values?: readonly unknown[]): Promise<T[]>;
}

/** int8 as a number (money is whole Rupiah), refusing what a number cannot hold exactly. */
export function parseInt8(value: string): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n)) throw new RangeError(`int8 value ${value} is outside the safe integer range`);
  return n;
}

// The pool's parsers by type OID (pg_type): int8 20, timestamp 1114, timestamptz 1184, date
// 1082, numeric 1700. Everything else keeps node-postgres's own parsing.
const PARSERS: Record<number, (v: string) => unknown> = {
  20: parseInt8,
  1114: (v) => new Date(`${v}Z`),
  1184: (v) => new Date(v),
  1082: (v) => v,
  1700: (v) => v,
};

const types = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    (format ?? 'text') === 'text' && PARSERS[oid] ? PARSERS[oid] : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
};

/**
 * One connection to `url` (a multi-host URL finds its node as every connection does,
 * db/database-hosts.ts), each statement bounded by `statementTimeoutMs`. End it when done.
 */
export async function openReader(url: string, options: { statementTimeoutMs: number; applicationName: string }): Promise<Reader & { end(): Promise<void> }> {
  const client = newClient(url, { types, statement_timeout: options.statementTimeoutMs, application_name: options.applicationName });
  await client.connect();
  return {
    rows: async <T>(text: string, values: readonly unknown[] = []) => (await client.query(text, values as unknown[])).rows as T[],
    end: () => client.end(),
  };
}
