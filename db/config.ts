// Process configuration: environment variables parsed once with zod at start-up. A bad value
// stops the process with a message naming the variable, before anything touches the database.
// The master-key settings may also come from a file (NAME_FILE, e.g. a mounted secret), which
// keeps them out of the environment that `ps e` and crash reports show.
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { isMultiHost, parseDatabaseUrl } from './database-url.ts';

const ms = (fallback: number) => z.coerce.number().int().min(0).default(fallback);

const schedule = z
  .string()
  .regex(/^\d+(,\d+)*$/, 'a comma-separated list of whole seconds')
  .transform((s) => s.split(',').map(Number));

const postgresUrl = z.string().regex(/^postgres(ql)?:\/\//, 'a postgres:// connection URL').superRefine((url, ctx) => {
  try {
    parseDatabaseUrl(url);
  } catch (err) {
    ctx.addIssue({ code: 'custom', message: (err as Error).message });
  }
});

/**
 * A URL that writes: a libpq host list must say which node to take (target_session_attrs
 * read-write or primary), or a connection could land on a standby and every write there fail.
 */
const writableUrl = postgresUrl.superRefine((url, ctx) => {
  if (!isMultiHost(url)) return;
  const attrs = parseDatabaseUrl(url).targetSessionAttrs;
  if (attrs !== 'read-write' && attrs !== 'primary') {
    ctx.addIssue({ code: 'custom', message: 'a URL with several hosts needs target_session_attrs=read-write (or primary), so only the primary is written to' });
  }
});

/** Unset and empty both mean "not set" (an env file's `NAME=` line). */
const optional = <T extends z.ZodType>(schema: T) => z.preprocess((v) => (v === '' ? undefined : v), schema.optional());

const masterKey = z
  .string()
  .regex(/^[0-9a-f]{64}$/i, '64 hex characters (32 bytes)');

/** Settings that also read NAME_FILE: the file's content, surrounding whitespace dropped. */
const FROM_FILE = ['KASIR_MASTER_KEY', 'KASIR_MASTER_KEYS_PREVIOUS'] as const;

/** Master keys are needed by every process that opens secrets, and by the ops CLI without the rest. */
const masterKeySettings = {
  /** Seals every new secret, and opens what was sealed under it. */
  KASIR_MASTER_KEY: masterKey,
  /**
   * Keys that open sealed values but never seal: the key before KASIR_MASTER_KEY while
   * `ops secrets:reseal` moves values off it, or the next key while it reaches every process
   * (docs/deploy.md, "The master key"). Separated by commas or whitespace.
   */
  KASIR_MASTER_KEYS_PREVIOUS: z
    .string()
    .default('')
    .transform((s) => s.split(/[\s,]+/).filter(Boolean))
    // The message never echoes the value: it is a key.
    .pipe(z.array(z.string().regex(/^[0-9a-f]{64}$/i, 'keys of 64 hex characters (32 bytes), separated by commas'))),
  /**
   * Refuse sealed values from before row binding (version 1) instead of opening them: set once
   * `ops secrets:reseal --check` reports none unbound, so no such value (a copy from a backup
   * into another row, say) opens anywhere.
   */
  KASIR_SEALED_REQUIRE_BOUND: optional(z.enum(['true', 'false'], 'true or false').transform((v) => v === 'true')).transform((v) => v ?? false),
};

/**
 * How long operational records are kept (db/retention.ts, docs/deploy.md "Retention"); the
 * scheduler retires older ones, and so does `ops retention:run`, which reads only these.
 * Financial records (orders, the ledger, disbursements, refunds, settlements) are never retired.
 */
const retentionSettings = {
  /**
   * Webhook deliveries (with their signed bodies) are deleted this many days after they ended
   * (delivered, or failed for good), and a month of attempts once it ended this long ago.
   * GET /v1/webhook-deliveries says how far back it reaches (meta.retained_since).
   */
  WEBHOOK_RETENTION_DAYS: z.coerce.number().int().min(7, 'at least 7 (days)').max(3650).default(90),
  /** A vendor callback's payload is dropped this many days after it came (its key stays). */
  VENDOR_CALLBACK_PAYLOAD_DAYS: z.coerce.number().int().min(1).max(3650).default(30),
  /**
   * A vendor callback's key (vendor and event id, which recognises a repeated callback) is
   * deleted this many days after it came: far past any vendor's retries (a day at most,
   * docs/callbacks.md).
   */
  VENDOR_CALLBACK_KEY_DAYS: z.coerce.number().int().min(7, 'at least 7 (days)').max(3650).default(90),
  /**
   * Completed jobs of the high-volume queues (order-create, webhook-deliver) are deleted by
   * pg-boss this many hours after they completed; other queues keep theirs 7 days. Their
   * outcome is in Kasir's own tables; the job row is only for diagnosis (ops jobs:list).
   */
  QUEUE_HIGH_VOLUME_DELETE_AFTER_HOURS: z.coerce.number().int().min(1).max(24 * 30).default(6),
};

export const configSchema = z.object({
  ...retentionSettings,
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  HOST: z.string().min(1).default('127.0.0.1'),
  /**
   * Where the pooled queries go: Postgres itself, or a pooler in front of it (PgBouncer in
   * transaction pooling mode). Through a pooler, set DATABASE_DIRECT_URL too.
   */
  DATABASE_URL: writableUrl,
  /**
   * Postgres itself, for everything that needs a session of its own: the API's LISTEN
   * connection, pg-boss's LISTEN connection, migrations (a session advisory lock) and the ops
   * CLI. Unset: DATABASE_URL. Set to anything else, DATABASE_URL counts as a transaction
   * pooler: its connections then carry no startup parameters (statement_timeout and
   * idle_in_transaction_session_timeout come from the role: README, PgBouncer) and, by
   * default, no named prepared statements.
   */
  DATABASE_DIRECT_URL: optional(writableUrl),
  /**
   * Whether pooled connections use named prepared statements (parse and plan once per
   * connection). Unset: on when DATABASE_URL is Postgres itself, off behind a pooler, since
   * PgBouncer before 1.21 (Debian 12 ships 1.18) hands a statement prepared on one server
   * connection to a client on another. PgBouncer 1.21+ with max_prepared_statements > 0 keeps
   * them: set true there.
   */
  DATABASE_PREPARED_STATEMENTS: optional(z.enum(['true', 'false'], 'true or false').transform((v) => v === 'true')),
  /**
   * A streaming replica of DATABASE_URL's database (or a pooler in front of it) for reads that
   * may lag: list endpoints, the profits report and export builds. A resource read by id, and
   * everything a write reads, stays on the primary (docs/architecture.md, Reads from a replica).
   */
  DATABASE_REPLICA_URL: optional(postgresUrl),
  /**
   * How far the replica may fall behind before its reads go to the primary instead, in ms.
   * Export builds wait for the replica to reach the primary's position instead (up to this long).
   */
  DATABASE_REPLICA_MAX_LAG_MS: z.coerce.number().int().min(0).default(5_000),
  ...masterKeySettings,
  PUBLIC_BASE_URL: z.url({ protocol: /^https?$/ }).optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /**
   * Port of this process's operator-only Prometheus listener (GET /metrics); unset or empty:
   * none. 0 picks a free port (tests; the process reports it in its ready message).
   */
  METRICS_PORT: z.preprocess((v) => (v === '' ? undefined : v), z.coerce.number().int().min(0).max(65535).optional()),
  /** Interface of that listener; HOST when unset. Never one the merchant-facing load balancer forwards. */
  METRICS_HOST: z.string().min(1).optional(),
  DB_POOL_SIZE: z.coerce.number().int().min(1).max(200).default(20),
  /**
   * statement_timeout of the API's pooled connections, in ms: a request's statement that runs
   * longer has failed its client anyway. Through a pooler the role's setting applies instead.
   */
  API_STATEMENT_TIMEOUT_MS: z.coerce.number().int().min(100).default(30_000),
  /**
   * statement_timeout of the workers' pooled connections, in ms: a year's export is one
   * transaction, a vendor's day of reconciliation scans a day of orders, the retention sweep
   * drops a month. Longer than a request's, short enough that a runaway plan is cut off.
   */
  WORKER_STATEMENT_TIMEOUT_MS: z.coerce.number().int().min(100).default(300_000),
  BODY_LIMIT: z.string().default('100kb'),
  /**
   * Slow-client limits of the API's HTTP server (api/server.ts). A request's headers must arrive
   * within HEADERS_TIMEOUT_MS and the whole request, body included, within REQUEST_TIMEOUT_MS,
   * else the server answers 408 and closes the socket: a client trickling bytes cannot hold a
   * socket for long. REQUEST_TIMEOUT_MS must cover the largest upload (IMPORT_MAX_BYTES: 20 MiB
   * in 60 s needs ~3 Mbit/s). No 0: Node reads 0 as "no limit".
   */
  HEADERS_TIMEOUT_MS: z.coerce.number().int().min(100).default(10_000),
  REQUEST_TIMEOUT_MS: z.coerce.number().int().min(100).default(60_000),
  /** Open sockets one API process accepts; past it new ones are closed at accept (per process). */
  MAX_CONNECTIONS: z.coerce.number().int().min(1).default(1_000),
  /**
   * Failed authentications (a wrong API key, legacy signature, RSA signature or vendor callback
   * signature) one client address may make per AUTH_FAILURE_WINDOW_SECONDS; past it, its
   * authenticated requests are answered 429 with Retry-After until the window ends. Counted per
   * API process: with N replicas a client gets up to N times as many tries.
   */
  AUTH_FAILURE_LIMIT: z.coerce.number().int().min(1).default(20),
  AUTH_FAILURE_WINDOW_SECONDS: z.coerce.number().int().min(1).max(86_400).default(60),
  /** Requests one API key may make per minute (per API process); 0: no limit. */
  API_KEY_REQUESTS_PER_MINUTE: z.coerce.number().int().min(0).default(0),
  /**
   * Which proxies' X-Forwarded-For to believe for the client address (logs, throttling): unset
   * or "false" none (the socket's address); a number of hops in front of Kasir; or a
   * comma-separated list of addresses, CIDRs or loopback/linklocal/uniquelocal.
   */
  TRUST_PROXY: z
    .string()
    .optional()
    .transform((v): boolean | number | string[] => {
      const text = v?.trim() ?? '';
      if (text === '' || text === 'false') return false;
      if (/^\d+$/.test(text)) return Number(text);
      return text.split(',').map((x) => x.trim()).filter(Boolean);
    }),
  /**
   * `true` lets the web process start while a vendor holds a secret published with Kasir (the
   * simulator's defaults: db/published-secrets.ts). Only for a development stack nobody else
   * can reach: anyone who has read the repository can sign that vendor's callbacks.
   */
  ALLOW_DEVELOPMENT_SECRETS: optional(z.enum(['true', 'false'], 'true or false').transform((v) => v === 'true')).transform((v) => v ?? false),
  /** Largest CSV POST /v1/disbursements/import takes, in bytes (20 MiB holds ~200,000 rows). */
  IMPORT_MAX_BYTES: z.coerce.number().int().min(1).default(20 * 1024 * 1024),
  /** Most data rows one import may hold (one transaction holds the wallet lock for all of them). */
  IMPORT_MAX_ROWS: z.coerce.number().int().min(1).max(1_000_000).default(100_000),
  /** How long POST /v1/orders waits for the vendor worker before answering 409. */
  ORDER_CREATE_DEADLINE_MS: ms(10_000),
  /** Per-request timeout of calls to vendors. */
  VENDOR_TIMEOUT_MS: ms(8_000),
  /**
   * Adaptive routing (db/routing.ts, docs/architecture.md "Routing modes"): the sliding window
   * vendors are judged over; the share of requests sent first to a demoted vendor so that its
   * recovery shows; the calls a vendor needs in the window to be judged at all; and the part of
   * them failed or unknown past which it is demoted. 30 s reacts to a brownout within the
   * half-minute a merchant notices and forgets it as soon; longer windows are steadier.
   */
  ROUTING_WINDOW_SECONDS: z.coerce.number().int().min(5).max(3600).default(30),
  ROUTING_EXPLORE_PERCENT: z.coerce.number().min(0).max(50).default(2),
  ROUTING_MIN_CALLS: z.coerce.number().int().min(1).max(100_000).default(10),
  ROUTING_DEMOTE_PERCENT: z.coerce.number().min(1).max(100).default(10),
  /**
   * How long an order-create job may run before it counts as abandoned (its worker died) and is
   * retried elsewhere. Must exceed the longest run: the routed vendors × VENDOR_TIMEOUT_MS.
   */
  ORDER_CREATE_JOB_EXPIRE_SECONDS: z.coerce.number().int().min(1).default(120),
  /**
   * How often each worker process looks for abandoned jobs (pg-boss supervise/monitor interval):
   * a job whose heartbeat went stale (db/queue.ts) is retried at the next pass. One process per
   * queue does the pass each interval (pg-boss claims it), so more replicas cost nothing more.
   */
  QUEUE_MONITOR_INTERVAL_SECONDS: z.coerce.number().int().min(1).max(3600).default(3),
  /**
   * How long a process that starts while Postgres cannot be reached waits for it before it
   * exits 1 (db/wait-for-database.ts). 0 exits at once.
   */
  DATABASE_WAIT_SECONDS: z.coerce.number().int().min(0).max(3600).default(60),
  /** Delay before order-reconcile asks the vendor about an unresolved create. */
  ORDER_RECONCILE_DELAY_SECONDS: z.coerce.number().int().min(0).default(5),
  /** Delay before a sent disbursement whose callback has not come is queried at its vendor. */
  DISBURSEMENT_RECONCILE_DELAY_SECONDS: z.coerce.number().int().min(0).default(30),
  /** Interval of the expiry sweep; must stay well under the 30 s the spec allows. */
  EXPIRY_SWEEP_INTERVAL_MS: ms(5_000),
  /**
   * How long an Idempotency-Key (and its stored response) is kept; the scheduler deletes older
   * ones. At least 24 h: clients retry with the same key for a day (DESIGN 6).
   */
  IDEMPOTENCY_KEY_TTL_HOURS: z.coerce.number().int().min(24, 'at least 24 (hours)').max(87_600).default(48),
  /** When the scheduler builds the settlements of the day that just closed (cron, WIB). */
  SETTLEMENT_CRON: z
    .string()
    .trim()
    .regex(/^\S+( \S+){4}$/, 'a five-field cron expression (minute hour day month weekday), read in WIB')
    .default('0 0 * * *'),
  /** The hour of the WIB day at which a settlement period closes (0: midnight, the day before). */
  SETTLEMENT_CUTOFF_HOUR: z.coerce.number().int().min(0).max(23).default(0),
  /**
   * When the scheduler reconciles the WIB day before with every vendor not removed (cron, WIB):
   * after the settlement cut-off and its run, and after late callbacks have had time to land.
   */
  RECON_CRON: z
    .string()
    .trim()
    .regex(/^\S+( \S+){4}$/, 'a five-field cron expression (minute hour day month weekday), read in WIB')
    .default('0 2 * * *'),
  /** How long a report export (job record and CSV file) is kept; the csv group deletes older ones. */
  EXPORT_RETENTION_HOURS: z.coerce.number().int().min(1).max(8_760).default(72),
  /** Most data rows one export may hold: a larger one fails, asking for a narrower date range. */
  EXPORT_MAX_ROWS: z.coerce.number().int().min(1).default(2_000_000),
  WEBHOOK_TIMEOUT_MS: ms(10_000),
  /** Delay before each webhook retry, in seconds (Stripe-like, about three days in all). */
  WEBHOOK_RETRY_SCHEDULE: schedule.default([5, 300, 1800, 7200, 18000, 36000, 50400, 72000, 86400]),
  /** Hosts or CIDRs webhooks may reach although they resolve to private ranges. */
  NOTIFY_URL_ALLOWLIST: z
    .string()
    .default('')
    .transform((s) => s.split(',').map((x) => x.trim()).filter(Boolean)),
}).refine((c) => c.HEADERS_TIMEOUT_MS <= c.REQUEST_TIMEOUT_MS, {
  // Headers are part of the request: a longer headers limit would never apply.
  message: 'at most REQUEST_TIMEOUT_MS',
  path: ['HEADERS_TIMEOUT_MS'],
});

export type Config = z.infer<typeof configSchema>;

export class ConfigError extends Error {}

type Env = Record<string, string | undefined>;

function parseWith<T extends z.ZodType>(schema: T, env: Env): z.infer<T> {
  const { values, problems } = readSettingFiles(env);
  const result = schema.safeParse(values);
  const lines = [...problems, ...(result.success ? [] : result.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`))];
  if (!result.success || lines.length) throw new ConfigError(`invalid configuration:\n${lines.join('\n')}`);
  return result.data;
}

/** env with each NAME_FILE of FROM_FILE read into NAME; a file that cannot be read is a problem named after it. */
function readSettingFiles(env: Env): { values: Env; problems: string[] } {
  const values = { ...env };
  const problems: string[] = [];
  for (const name of FROM_FILE) {
    const path = env[`${name}_FILE`];
    if (!path) continue;
    if (env[name]) {
      problems.push(`  ${name}_FILE: give ${name} or ${name}_FILE, not both`);
      continue;
    }
    try {
      values[name] = readFileSync(path, 'utf8').trim();
    } catch (err) {
      problems.push(`  ${name}_FILE: cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
    }
  }
  return { values, problems };
}

export function parseConfig(env: Env = process.env): Config {
  return parseWith(configSchema, env);
}

export type MasterKeyConfig = Pick<Config, keyof typeof masterKeySettings>;

/** Only the master-key settings: for the ops CLI, which opens secrets but runs no server. */
export function parseMasterKeys(env: Env = process.env): MasterKeyConfig {
  return parseWith(z.object(masterKeySettings), env);
}

export type RetentionConfig = Pick<Config, keyof typeof retentionSettings>;

/** Only the retention settings: for `ops retention:run`. */
export function parseRetention(env: Env = process.env): RetentionConfig {
  return parseWith(z.object(retentionSettings), env);
}

/** Parses the configuration or exits with the message; for process entry points. */
export function loadConfig(env: Env = process.env): Config {
  try {
    return parseConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(78);
    }
    throw err;
  }
}

export function publicBaseUrl(config: Config): string {
  return (config.PUBLIC_BASE_URL ?? `http://${config.HOST}:${config.PORT}`).replace(/\/$/, '');
}

/** The URL that reaches Postgres itself (sessions: LISTEN, advisory locks, migrations). */
export function directDatabaseUrl(config: Pick<Config, 'DATABASE_URL' | 'DATABASE_DIRECT_URL'>): string {
  return config.DATABASE_DIRECT_URL ?? config.DATABASE_URL;
}

/** How pooled connections to DATABASE_URL (and the replica) must behave (db/pool.ts createPool). */
export function pooledConnections(config: Pick<Config, 'DATABASE_URL' | 'DATABASE_DIRECT_URL' | 'DATABASE_PREPARED_STATEMENTS'>) {
  const throughPooler = directDatabaseUrl(config) !== config.DATABASE_URL;
  return { throughPooler, preparedStatements: config.DATABASE_PREPARED_STATEMENTS ?? !throughPooler };
}
