// The slonik pool every process uses (the ops CLI's lists read through db/plain-reader.ts
// instead), with type parsers that keep money exact:
// int8 → number (refusing anything past 2^53 rather than rounding it), timestamptz → Date,
// numeric left as text (Kasir never stores money as numeric).
import { createHash } from 'node:crypto';
import { QueryToken } from '@slonik/sql-tag';
import {
  createPool as createSlonikPool,
  sql,
  type DatabasePool,
  type DatabaseTransactionConnection,
  type CommonQueryMethods,
  type Interceptor,
  type QuerySqlToken,
  BackendTerminatedError,
  BackendTerminatedUnexpectedlyError,
  ConnectionError,
  SchemaValidationError,
  SlonikError,
} from 'slonik';
import { z } from 'zod';
import { isMultiHost, multiHostDriverFactory, parseDatabaseUrl } from './database-hosts.ts';
import { parseInt8, type Reader } from './plain-reader.ts';

export { sql };
export type Pool = DatabasePool;
export type Tx = DatabaseTransactionConnection;
/** Anything that runs queries: the pool or an open transaction. */
export type Db = CommonQueryMethods;

const typeParsers = [
  { name: 'int8', parse: parseInt8 },
  { name: 'timestamptz', parse: (v: string) => new Date(v) },
  { name: 'timestamp', parse: (v: string) => new Date(`${v}Z`) },
  { name: 'date', parse: (v: string) => v },
  { name: 'numeric', parse: (v: string) => v },
];

type RowSchema = {
  '~standard': { validate(v: unknown): { value?: unknown; issues?: readonly any[] } | Promise<unknown> };
};

// Rows are validated against the query's zod schema when it has one (sql.type(schema)):
// a column renamed in a migration fails loudly at the query, not later as `undefined` in JSON.
const validateRows: Interceptor = {
  name: 'validate-rows',
  transformRow: (context, query, row) => {
    const parser = context.resultParser as RowSchema | undefined;
    if (!parser) return row;
    const result = parser['~standard'].validate(row);
    if (result instanceof Promise) throw new TypeError('async row schemas are not supported');
    if ('issues' in result && result.issues) throw new SchemaValidationError(query, row, result.issues);
    return result.value as typeof row;
  },
};

// Every statement is a named prepared statement, named after its text: each connection parses,
// rewrites and plans a statement once, then only binds and executes it (Postgres switches to a
// generic plan after five executions when it costs no more). Parse + plan were about 40% of
// Postgres's CPU per order create. Kasir's statement texts are a bounded set (values are always
// parameters; fragments choose among a few variants), so each connection holds a bounded number.
// Behind PgBouncer before 1.21 a name prepared on one server connection is unknown on the next,
// so createPool leaves this interceptor out there (DATABASE_PREPARED_STATEMENTS, db/config.ts).
const statementNames = new Map<string, string>();
const prepareStatements: Interceptor = {
  name: 'prepare-statements',
  transformQuery: (_context, query) => {
    let name = statementNames.get(query.sql);
    if (!name) {
      name = `k${createHash('sha1').update(query.sql).digest('base64url').slice(0, 20)}`;
      statementNames.set(query.sql, name);
    }
    return { ...query, name };
  },
};

const refusedTransactions = new WeakSet<object>();

/**
 * Whether `tx` ended in a refusal that keepRefusalsPooled rolled back: slonik still reports a
 * commit for it, so after-commit work (db/metrics.ts afterCommit) must check this first.
 */
// SQLSTATEs of a server that is gone or not there yet: class 08 (connection exceptions),
// admin/crash shutdown and "the database system is starting up" (57P01-57P03).
// 25006 (read-only transaction): a connection still open to a node that came back as a standby
// after a failover; the next connection finds the new primary (db/database-hosts.ts).
const SERVER_GONE = /^(08...|57P0[123]|25006)$/;
const SOCKET_GONE = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ENOTFOUND', 'EAI_AGAIN']);

/**
 * Whether an error means the database could not be reached (down, restarting, the connection
 * cut), as opposed to a bug or a refused statement: the API answers 503 and the client retries,
 * instead of a 500 that reads as Kasir's fault. Walks the cause chain slonik and pg build.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (e instanceof ConnectionError || e instanceof BackendTerminatedError || e instanceof BackendTerminatedUnexpectedlyError) return true;
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && (SERVER_GONE.test(code) || SOCKET_GONE.has(code))) return true;
    if (/Connection terminated|connection timeout|timeout exceeded when trying to connect/i.test(e.message)) return true;
  }
  return false;
}

export function wasRefused(tx: object): boolean {
  return refusedTransactions.has(tx);
}

/**
 * A refusal (ApiError, InsufficientFunds, an ops or legacy refusal: any error that is not
 * slonik's own) thrown inside `pool.transaction` rolls back, and the connection goes back to
 * the pool before the error reaches the caller. slonik destroys a connection whenever a
 * transaction's handler rejects: the 1,000-way disbursement race opened 892 Postgres sessions.
 * Here the handler's refusal is caught, ROLLBACK runs on the same connection, and the handler
 * returns normally (slonik's COMMIT then finds no transaction: a warning, no round trip saved or
 * added on the happy path). Database errors (SlonikError: constraint violations, serialisation
 * failures that slonik retries, a dead backend) keep slonik's handling. If the ROLLBACK itself
 * fails, the connection is broken and the original error goes to slonik, which destroys it.
 */
function keepRefusalsPooled(pool: DatabasePool): DatabasePool {
  const transaction = pool.transaction.bind(pool);
  const refused = Symbol('refused');
  const keeping = (async (handler: (tx: Tx) => Promise<unknown>, retryLimit?: number) => {
    let refusal: unknown = refused;
    const result = await transaction(async (tx) => {
      try {
        return await handler(tx);
      } catch (error) {
        if (error instanceof SlonikError) throw error;
        try {
          await tx.query(sql.unsafe`rollback`);
        } catch {
          throw error;
        }
        refusedTransactions.add(tx);
        refusal = error;
        return undefined;
      }
    }, retryLimit);
    if (refusal !== refused) throw refusal;
    return result;
  }) as DatabasePool['transaction'];
  // Everything else is the pool's own (a prototype, so its getters stay live).
  return Object.create(pool, { transaction: { value: keeping, enumerable: true } }) as DatabasePool;
}

/** A request's statements: past this the request has failed anyway (its client gave up). */
export const API_STATEMENT_TIMEOUT_MS = 30_000;

export interface PoolOptions {
  size?: number;
  name?: string;
  /** Named prepared statements (prepareStatements above); off behind PgBouncer < 1.21. */
  preparedStatements?: boolean;
  /**
   * The URL is a transaction pooler: send no startup parameters. PgBouncer refuses a client
   * whose startup packet sets statement_timeout or idle_in_transaction_session_timeout (it can
   * not restore them on the next server connection); the role's settings apply instead.
   */
  throughPooler?: boolean;
  /**
   * Lets this pool's connections run statements while the caller is inside another pool's
   * transaction (slonik refuses that by default, guarding against a statement meant for the
   * transaction going elsewhere). Only for the replica's read-only pool (db/replica.ts).
   */
  insideOtherTransactions?: boolean;
  /**
   * The longest one statement of this pool may run, in ms (its session's statement_timeout).
   * Each process's pool has the limit of its use (db/config.ts): a request's statement 30 s, a
   * worker's longer (a year's export, a day's reconciliation), an operator's command longer
   * still. A statement that needs more sets its own with SET LOCAL (ops ledger:audit --full).
   */
  statementTimeoutMs?: number;
}

export async function createPool(url: string, options: PoolOptions = {}): Promise<Pool> {
  // A multi-host URL (db/database-hosts.ts): slonik's own driver, pointed at the node that fits.
  const multiHost = isMultiHost(url);
  const pool = await createSlonikPool(multiHost ? parseDatabaseUrl(url).forHost(parseDatabaseUrl(url).hosts[0]!) : url, {
    ...(multiHost ? { driverFactory: multiHostDriverFactory(url) } : {}),
    maxPoolSize: options.size ?? 10,
    poolName: options.name,
    typeParsers,
    interceptors: options.preparedStatements === false ? [validateRows] : [prepareStatements, validateRows],
    captureStackTrace: false,
    dangerouslyAllowForeignConnections: options.insideOtherTransactions === true,
    statementTimeout: options.throughPooler ? 'DISABLE_TIMEOUT' : (options.statementTimeoutMs ?? API_STATEMENT_TIMEOUT_MS),
    idleInTransactionSessionTimeout: options.throughPooler ? 'DISABLE_TIMEOUT' : 60_000,
    idleTimeout: 60_000,
    connectionTimeout: 10_000,
    // slonik's default runs DISCARD ALL on every release: one more round trip per pooled query
    // (8 of a create's 22 statements). Kasir keeps no session state on pooled connections
    // (timeouts are startup parameters or the role's; SET LOCAL only; LISTEN and advisory locks
    // use their own clients on DATABASE_DIRECT_URL), which is also what a transaction pooler needs.
    resetConnection: async () => {},
  });
  return keepRefusalsPooled(pool);
}

/**
 * A query token from plain text and positional values, for code that speaks raw SQL
 * (pg-boss's `executeSql` adapter, poolReader below). Everything Kasir writes itself goes
 * through the `sql` tag.
 * The token's type is the one slonik's own tag package exports for this (QueryToken).
 */
export function rawQuery(text: string, values: readonly unknown[] = []): QuerySqlToken {
  return {
    type: QueryToken,
    sql: text,
    values: values as never,
    parser: z.any(),
  } as unknown as QuerySqlToken;
}

/** The pool as a Reader, for a list query (db/operator-lists.ts) called where a pool is at hand. */
export function poolReader(db: Db): Reader {
  return { rows: async <T>(text: string, values: readonly unknown[] = []) => (await db.any(rawQuery(text, values))) as unknown as T[] };
}
