// Runs a `COPY … TO STDOUT` on a connection of its own and hands its output to the caller as a
// stream (the export build: Postgres writes the CSV, the worker stores it). A COPY holds its
// connection until it ends, so it cannot share a transaction that runs other statements meanwhile.
//
// Invariants and why they hold:
// - Through a transaction pooler too: the COPY runs inside begin … commit with its settings
//   made transaction-local, so PgBouncer keeps one server connection for all of it and no
//   setting outlives it; the client sends no startup parameter PgBouncer refuses
//   (application_name is one it carries).
// - Memory bounded by the consumer: the stream is read only as fast as `consume` takes it;
//   meanwhile the socket is not read and Postgres waits on its send (TCP backpressure).
// - The connection is closed on every path. Closed mid-COPY (the consumer failed, or `signal`
//   aborted), its socket is destroyed: the backend's next send fails and its transaction ends
//   (one still computing its first rows finds out at its first send, or at statement_timeout).
import { addAbortSignal, type Readable } from 'node:stream';
import { to as copyTo } from 'pg-copy-streams';
import { newClient } from './database-hosts.ts';

export interface CopyOutOptions {
  /** Postgres, or a transaction pooler in front of it. */
  url: string;
  /** What pg_stat_activity shows for the session. */
  applicationName: string;
  /** The COPY's statement_timeout (the role's and the pool's guard requests, not bulk reads). */
  statementTimeoutMs: number;
  /** Aborting destroys the stream (`consume` sees an AbortError) and the connection. */
  signal?: AbortSignal;
}

/**
 * Runs `statement`, a COPY … TO STDOUT, in a read-only transaction and awaits `consume` with its
 * output, which it must read to the end or throw; resolves to the COPY's row count (a header
 * line not counted) once the COPY has ended.
 */
export async function copyOut(statement: string, options: CopyOutOptions, consume: (data: Readable) => Promise<void>): Promise<number> {
  const client = newClient(options.url, { keepAlive: true, application_name: options.applicationName });
  // A socket error while no query runs is emitted on the client; the query in flight, if any,
  // fails with it, which is what the caller hears.
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('begin read only');
    await client.query(`select set_config('statement_timeout', $1, true)`, [`${options.statementTimeoutMs}ms`]);
    const copy = client.query(copyTo(statement));
    // pg reports a connection lost mid-COPY (as the finally below destroys it after a failed
    // consume) by emitting 'error' on the stream, possibly after its consumer has let go of it.
    copy.on('error', () => undefined);
    await consume(options.signal ? addAbortSignal(options.signal, copy) : copy);
    // Answered once the COPY's CommandComplete has been read, which sets its rowCount.
    await client.query('commit');
    return copy.rowCount;
  } finally {
    await client.end().catch(() => undefined);
  }
}
