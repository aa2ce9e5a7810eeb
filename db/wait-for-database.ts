// A process that starts while Postgres cannot be reached (a host booting, a failover, the
// database restarting) waits for it, instead of exiting with a stack trace and leaving its
// supervisor to restart it in a loop. Every Procfile process that uses the database calls this
// before it opens its pools.
//
// Only "cannot reach it" is waited out (isDatabaseUnavailable: refused, reset, the server
// starting up or shutting down); a wrong password or database name fails at once, and so does a
// database still unreachable after `waitSeconds`: then the process exits 1 with one log line.
import { setTimeout as pause } from 'node:timers/promises';
import { newClient } from './database-hosts.ts';
import { logger } from './logger.ts';
import { isDatabaseUnavailable } from './pool.ts';

/** Time between two connection attempts. */
const RETRY_MS = 1_000;

/** Resolves once a connection to each of `urls` answers `select 1`; throws as described above. */
export async function waitForDatabase(urls: readonly string[], waitSeconds: number, processName: string): Promise<void> {
  const deadline = Date.now() + waitSeconds * 1_000;
  for (const url of new Set(urls)) {
    for (let attempt = 1; ; attempt++) {
      const error = await reach(url, processName);
      if (error === null) {
        if (attempt > 1) logger.info({ process: processName, attempts: attempt }, 'database reachable');
        break;
      }
      const left = deadline - Date.now();
      if (!isDatabaseUnavailable(error) || left <= 0) throw error;
      if (attempt === 1) logger.warn({ process: processName, err: error, waitSeconds }, 'database unreachable; waiting for it');
      await pause(Math.min(RETRY_MS, left));
    }
  }
}

/** One connection attempt: null when it answered, else why not. */
async function reach(url: string, processName: string): Promise<unknown> {
  const client = newClient(url, { connectionTimeoutMillis: 5_000, application_name: `${processName}-start` });
  // A socket error after connect() has settled would otherwise be an unhandled 'error' event.
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('select 1');
    return null;
  } catch (err) {
    return err;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * The entries' use: wait, or log why not and exit 1 (a supervisor restarts the process; the
 * log says what it could not reach, without a stack trace).
 */
export async function waitForDatabaseOrExit(urls: readonly string[], waitSeconds: number, processName: string): Promise<void> {
  try {
    await waitForDatabase(urls, waitSeconds, processName);
  } catch (err) {
    logger.fatal({ process: processName, err: { message: (err as Error).message, code: (err as { code?: unknown }).code } }, 'database unreachable; exiting');
    process.exit(1);
  }
}
