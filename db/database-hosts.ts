// Multi-host connection URLs, as libpq writes them:
//   postgres://user:pw@db1:5432,db2:5432,db3:5432/kasir?target_session_attrs=read-write
// so a deployment can reach whichever node is the primary without a proxy in front (HAProxy,
// a VIP). node-postgres and slonik parse a URL with `new URL`, which refuses a host list: every
// connection Kasir opens (slonik's pool, pg-boss's pool, the LISTEN clients, migrations, the ops
// CLI, COPY) goes through this module instead, which picks the node at connect time.
//
// How a node is chosen, per URL and process: the node that answered last is tried first, then
// each in the URL's order; a node counts when it accepts the connection and its state fits
// target_session_attrs (libpq's values; `any` when absent). Every new connection is checked on
// the same session before it is handed out, so a demoted primary that came back as a standby
// is never written to; a connection that fails forgets the remembered node. A single-host URL
// takes none of this: it goes to the drivers as it is.
import pg from 'pg';
import type { DriverFactory, Driver } from '@slonik/driver';
import { isMultiHost, parseDatabaseUrl, type DatabaseHost, type ParsedDatabaseUrl, type TargetSessionAttrs } from './database-url.ts';

export { isMultiHost, parseDatabaseUrl };

/** The state a connected session reports, enough to judge every target_session_attrs. */
interface SessionState {
  inRecovery: boolean;
  readOnly: boolean;
}

type Querier = (text: string) => Promise<{ rows: Array<Record<string, unknown>> }>;

async function sessionState(query: Querier): Promise<SessionState> {
  const { rows } = await query(
    `select pg_is_in_recovery() as in_recovery, current_setting('transaction_read_only') = 'on' as read_only`);
  return { inRecovery: rows[0]!.in_recovery === true, readOnly: rows[0]!.read_only === true };
}

function fits(attrs: TargetSessionAttrs, state: SessionState): boolean {
  switch (attrs) {
    case 'any':
    case 'prefer-standby':
      return true;
    case 'read-write':
      return !state.readOnly;
    case 'read-only':
      return state.readOnly;
    case 'primary':
      return !state.inRecovery;
    case 'standby':
      return state.inRecovery;
  }
}

/** An error of the "could not connect" class, so callers answer 503 and retry as for a down server. */
export class NoSuitableHostError extends Error {
  readonly code = '08001';
  constructor(url: ParsedDatabaseUrl, reasons: string[]) {
    super(`no database host fits target_session_attrs=${url.targetSessionAttrs} (${reasons.join('; ')})`);
  }
}

// Which node answered last, per URL: shared by every pool and client of the process.
const remembered = new Map<string, number>();

/**
 * Opens a connection for a multi-host URL: `open(host)` connects to one node and returns a way
 * to query it and to close it. Nodes are tried as the header says; the first that fits wins.
 */
async function connectToFittingHost<C>(
  url: string,
  open: (host: DatabaseHost, index: number) => Promise<{ client: C; query: Querier; close: () => Promise<void> }>,
): Promise<C> {
  const parsed = parseDatabaseUrl(url);
  const start = remembered.get(url) ?? 0;
  const order = parsed.hosts.map((_, i) => (start + i) % parsed.hosts.length);
  // prefer-standby: a standby first; the first node that connects only when no standby does.
  let fallback: { index: number; client: C; close: () => Promise<void> } | null = null;
  const reasons: string[] = [];
  for (const index of order) {
    const host = parsed.hosts[index]!;
    let opened;
    try {
      opened = await open(host, index);
    } catch (err) {
      reasons.push(`${host.host}:${host.port}: ${(err as Error).message}`);
      continue;
    }
    let state: SessionState;
    try {
      state = await sessionState(opened.query);
    } catch (err) {
      reasons.push(`${host.host}:${host.port}: ${(err as Error).message}`);
      await opened.close().catch(() => undefined);
      continue;
    }
    if (parsed.targetSessionAttrs === 'prefer-standby' && !state.inRecovery) {
      if (fallback) await opened.close().catch(() => undefined);
      else fallback = { index, client: opened.client, close: opened.close };
      continue;
    }
    if (fits(parsed.targetSessionAttrs, state)) {
      await fallback?.close().catch(() => undefined);
      remembered.set(url, index);
      return opened.client;
    }
    reasons.push(`${host.host}:${host.port}: ${state.inRecovery ? 'a standby' : 'a primary'}${state.readOnly ? ', read-only' : ''}`);
    await opened.close().catch(() => undefined);
  }
  if (fallback) {
    remembered.set(url, fallback.index);
    return fallback.client;
  }
  remembered.delete(url);
  throw new NoSuitableHostError(parsed, reasons);
}

/** A pg.Client config for `url` (a single-host URL as it is, a multi-host URL through MultiHostClient). */
export function newClient(url: string, options: Omit<pg.ClientConfig, 'connectionString'> = {}): pg.Client {
  return isMultiHost(url) ? new MultiHostClient({ ...options, multiHostUrl: url }) : new pg.Client({ ...options, connectionString: url });
}

/** pg.Pool's connection settings for `url`: a multi-host URL gets MultiHostClient as its Client. */
export function poolConnection(url: string): pg.PoolConfig {
  if (!isMultiHost(url)) return { connectionString: url };
  return { Client: class extends MultiHostClient {
    constructor(config: pg.ClientConfig) {
      super({ ...config, multiHostUrl: url });
    }
  } as unknown as typeof pg.Client };
}

interface MultiHostClientConfig extends pg.ClientConfig {
  multiHostUrl: string;
}

/**
 * A pg.Client that, on connect, finds a fitting node of a multi-host URL: it probes with
 * throwaway clients of the same settings, then connects itself to the node found and checks it
 * again on its own session (the primary may move between the two). Usable as pg.Pool's Client.
 */
export class MultiHostClient extends pg.Client {
  readonly #url: string;
  readonly #settings: pg.ClientConfig;

  constructor(config: MultiHostClientConfig) {
    const { multiHostUrl, connectionString: _ignored, ...settings } = config;
    const first = parseDatabaseUrl(multiHostUrl);
    super({ ...settings, connectionString: first.forHost(first.hosts[0]!) });
    this.#url = multiHostUrl;
    this.#settings = settings;
  }

  override connect(): Promise<pg.Client>;
  override connect(callback: ((err: Error) => void) | ((err: null, c: pg.Client) => void)): void;
  override connect(callback?: ((err: Error) => void) | ((err: null, c: pg.Client) => void)): Promise<pg.Client> | void {
    const done = this.#connectToFittingHost().then(() => this as pg.Client);
    if (!callback) return done;
    done.then((client) => (callback as (err: null, c: pg.Client) => void)(null, client), callback as (err: Error) => void);
  }

  async #connectToFittingHost(): Promise<void> {
    const parsed = parseDatabaseUrl(this.#url);
    // Steady state: straight to the node that answered last, checked on this very session.
    // Otherwise (first connection, or the last one failed) throwaway probes find the node first:
    // a pg.Client connects once, so it cannot itself try one node after another.
    let index = remembered.get(this.#url);
    if (index === undefined) {
      const found = await connectToFittingHost(this.#url, async (candidate, at) => {
        const probe = new pg.Client({ ...this.#settings, connectionString: parsed.forHost(candidate) });
        await probe.connect();
        return { client: { at, probe }, query: (text) => probe.query(text), close: () => probe.end() };
      });
      await found.probe.end().catch(() => undefined);
      index = found.at;
    }
    const host = parsed.hosts[index]!;
    const self = this as unknown as { host: string; port: number };
    self.host = host.host;
    self.port = host.port;
    try {
      await super.connect();
      const state = await sessionState((text) => this.query(text));
      if (parsed.targetSessionAttrs !== 'prefer-standby' && !fits(parsed.targetSessionAttrs, state)) {
        await this.end().catch(() => undefined);
        throw new NoSuitableHostError(parsed, [`${host.host}:${host.port} is ${state.inRecovery ? 'a standby' : 'a primary'} now`]);
      }
    } catch (err) {
      remembered.delete(this.#url);
      throw err;
    }
  }
}

/**
 * slonik's driver for a multi-host URL: slonik's own pg driver, one per node, each new
 * connection made on the node that fits now (checked on the connection itself).
 */
export function multiHostDriverFactory(url: string): DriverFactory {
  const parsed = parseDatabaseUrl(url);
  return async ({ driverConfiguration }) => {
    // Loaded here, not at the top: a process that never makes a slonik pool (the ops CLI's
    // lists, migrations) connects through this module without paying for slonik's driver.
    const pgDriver = (await import('@slonik/pg-driver')).createPgDriverFactory();
    const drivers = new Map<number, Promise<Driver>>();
    const driverFor = (index: number) => {
      let driver = drivers.get(index);
      if (!driver) {
        driver = pgDriver({ driverConfiguration: { ...driverConfiguration, connectionUri: parsed.forHost(parsed.hosts[index]!) } });
        driver.catch(() => drivers.delete(index));
        drivers.set(index, driver);
      }
      return driver;
    };
    return {
      createClient: () =>
        connectToFittingHost(url, async (_host, index) => {
          const client = await (await driverFor(index)).createClient();
          return {
            client,
            // slonik's driver runs a query only on an acquired client: borrow it for the check.
            query: async (text) => {
              client.acquire();
              try {
                return await client.query(text);
              } finally {
                await client.release();
              }
            },
            close: () => client.destroy(),
          };
        }),
    };
  };
}
