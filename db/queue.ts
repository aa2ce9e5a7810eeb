// The job contracts: every pg-boss queue Kasir uses, with its payload schema and options.
// Payloads carry ids only; a handler reloads and locks the row, so a stale or duplicated job
// is harmless. Every queue has notify on, so an idle worker is woken by NOTIFY in
// milliseconds instead of waiting out a polling interval.
import { PgBoss, type ConstructorOptions, type Job, type QueueOptions, type SendOptions, type StopOptions } from 'pg-boss';
import { z } from 'zod';
import { isMultiHost } from './database-hosts.ts';
import { logger } from './logger.ts';
import { rawQuery, type Db } from './pool.ts';
import { QueueConnections } from './queue-connections.ts';

const uuid = z.uuid();

/**
 * How stale a running job's heartbeat may grow before the supervisor fails it for a retry
 * (pg-boss's minimum). A worker refreshes it every half of this while a handler runs. Expiry
 * alone would leave a job whose worker died, or whose database went away under it (the handler
 * threw and could not record that), "active" for its whole expireInSeconds: an order would
 * stay CREATING for minutes after a Postgres crash. With the heartbeat it is retried within
 * this plus one supervision pass (QUEUE_MONITOR_INTERVAL_SECONDS) of the database returning.
 */
const HEARTBEAT_SECONDS = 10;

/**
 * Completed jobs of the queues that take one or more jobs per order are kept hours, not pg-boss's
 * default 7 days: at 100 orders/s that is 60 million job rows a week, and the job table's size
 * is what every fetch pays for. What a job did is in Kasir's own tables; the row is only for
 * diagnosis. Workers apply QUEUE_HIGH_VOLUME_DELETE_AFTER_HOURS (db/config.ts) over this.
 */
export const HIGH_VOLUME_DELETE_AFTER_SECONDS = 6 * 3600;
export const HIGH_VOLUME_QUEUES = ['order-create', 'webhook-deliver'] as const;

export const queues = {
  /** Diagnostic: proves a job reaches a worker (ops jobs:ping, tests). */
  ping: {
    schema: z.object({ sent_at: z.number().int() }),
    options: { retryLimit: 0, expireInSeconds: 60, deleteAfterSeconds: 3600 },
  },
  'order-create': {
    // merchant_id (absent from jobs the stale sweep re-queues) lets the worker pick the first
    // vendor from its routing cache and load the attempt and mark it pending in one statement.
    schema: z.object({ order_id: uuid, merchant_id: uuid.optional() }),
    options: { retryLimit: 5, retryDelay: 1, retryBackoff: true, expireInSeconds: 120, heartbeatSeconds: HEARTBEAT_SECONDS, deleteAfterSeconds: HIGH_VOLUME_DELETE_AFTER_SECONDS },
  },
  'order-reconcile': {
    schema: z.object({ order_id: uuid }),
    options: { retryLimit: 20, retryDelay: 5, retryBackoff: true, retryDelayMax: 600, expireInSeconds: 120, heartbeatSeconds: HEARTBEAT_SECONDS },
  },
  'disbursement-execute': {
    schema: z.object({ disbursement_id: uuid }),
    options: { retryLimit: 10, retryDelay: 5, retryBackoff: true, retryDelayMax: 300, expireInSeconds: 120, heartbeatSeconds: HEARTBEAT_SECONDS },
  },
  // Asks the vendor what became of a sent disbursement (a lost callback, an unknown send
  // outcome). Throws while the vendor says "processing", so pg-boss's backoff is its clock.
  'disbursement-reconcile': {
    schema: z.object({ disbursement_id: uuid }),
    options: { retryLimit: 30, retryDelay: 10, retryBackoff: true, retryDelayMax: 1800, expireInSeconds: 120, heartbeatSeconds: HEARTBEAT_SECONDS },
  },
  // Account-name inquiry for a new beneficiary. Throws while no vendor gives a definite answer.
  'beneficiary-verify': {
    schema: z.object({ beneficiary_id: uuid }),
    options: { retryLimit: 10, retryDelay: 5, retryBackoff: true, retryDelayMax: 600, expireInSeconds: 120, heartbeatSeconds: HEARTBEAT_SECONDS },
  },
  // Sends a refund to the vendor that took the payment. Unknown outcomes and "pending" answers
  // throw, so pg-boss retries; a retry reads the vendor (queryRefund) and sends again only when
  // the read proves the vendor never took it (workers/refund-execute.ts).
  'refund-execute': {
    schema: z.object({ refund_id: uuid }),
    options: { retryLimit: 20, retryDelay: 5, retryBackoff: true, retryDelayMax: 1800, expireInSeconds: 120, heartbeatSeconds: HEARTBEAT_SECONDS },
  },
  'webhook-deliver': {
    schema: z.object({ delivery_id: uuid }),
    // Webhook retries follow their own schedule (WEBHOOK_RETRY_SCHEDULE), recorded per attempt;
    // pg-boss retries only cover a worker dying mid-delivery.
    options: { retryLimit: 3, retryDelay: 5, expireInSeconds: 120, heartbeatSeconds: HEARTBEAT_SECONDS, deleteAfterSeconds: HIGH_VOLUME_DELETE_AFTER_SECONDS },
  },
  // A day's settlement build over every MANUAL merchant (pg-boss schedule, or ops). Each
  // merchant is its own transaction and reruns are idempotent, so a run cut off by a crash is
  // simply run again: the heartbeat notices a dead worker within seconds, not an hour.
  'settlement-run': {
    schema: z.object({ settlement_date: z.iso.date().optional(), merchant_id: uuid.optional() }),
    options: { retryLimit: 5, retryDelay: 10, retryBackoff: true, expireInSeconds: 3600, heartbeatSeconds: HEARTBEAT_SECONDS },
  },
  'settlement-payout': {
    schema: z.object({ settlement_id: uuid }),
    options: { retryLimit: 10, retryDelay: 5, retryBackoff: true, retryDelayMax: 300, expireInSeconds: 120, heartbeatSeconds: HEARTBEAT_SECONDS },
  },
  // Asks the vendor what became of a sent payout; throws while it says "processing".
  'settlement-reconcile': {
    schema: z.object({ settlement_id: uuid }),
    options: { retryLimit: 30, retryDelay: 10, retryBackoff: true, retryDelayMax: 1800, expireInSeconds: 120, heartbeatSeconds: HEARTBEAT_SECONDS },
  },
  // Reconciles a WIB day with the vendors (one, or every enabled one): the daily schedule, or
  // sent by hand. A run is idempotent (a rerun replaces the day's open differences), so a retry
  // after a crash simply runs again; vendors already reconciled by this job are skipped.
  'recon-run': {
    schema: z.object({ day: z.iso.date().optional(), vendor_code: z.string().min(1).optional() }),
    options: { retryLimit: 3, retryDelay: 300, retryBackoff: true, expireInSeconds: 3600, heartbeatSeconds: HEARTBEAT_SECONDS },
  },
  // Builds a report export's CSV (csv group). A build is one transaction, so a retry starts
  // over; the heartbeat notices a dead worker within seconds while a long build may run an hour.
  'export-build': {
    schema: z.object({ export_id: uuid }),
    options: { retryLimit: 2, retryDelay: 30, retryBackoff: true, expireInSeconds: 3600, heartbeatSeconds: HEARTBEAT_SECONDS },
  },
} satisfies Record<string, { schema: z.ZodType; options: QueueOptions }>;

export type QueueName = keyof typeof queues;
export type Payload<Q extends QueueName> = z.infer<(typeof queues)[Q]['schema']>;

export const queueNames = Object.keys(queues) as QueueName[];

export interface BossOptions {
  /** Workers need the LISTEN connection and supervision; a sender does not. */
  role: 'worker' | 'sender';
  /**
   * Postgres itself, when `url` is a transaction pooler: the worker's LISTEN connection goes
   * here (a LISTEN through PgBouncer lands on whatever server connection the pooler picked and
   * is never heard again). Everything else pg-boss runs is a single statement or a transaction
   * (its maintenance locks are pg_advisory_xact_lock), so it stays on `url`.
   */
  listenUrl?: string;
  poolSize?: number;
  /** Name pg-boss's statements (db/queue-connections.ts); off behind PgBouncer < 1.21, as for Kasir's own pool. */
  preparedStatements?: boolean;
  /** Worker role: how often this process fails jobs whose worker died (pg-boss default 60 s). */
  monitorIntervalSeconds?: number;
  /** Expiry overrides, applied to existing queues too (jobs take the queue's value when sent). */
  expireInSeconds?: Partial<Record<QueueName, number>>;
  /** Completed jobs' retention overrides (seconds), applied to existing queues too. */
  deleteAfterSeconds?: Partial<Record<QueueName, number>>;
}

export async function startBoss(url: string, options: BossOptions): Promise<PgBoss> {
  const worker = options.role === 'worker';
  const max = options.poolSize ?? (worker ? 6 : 4);
  const split = worker && options.listenUrl !== undefined && options.listenUrl !== url;
  const preparedStatements = options.preparedStatements ?? false;
  const config: ConstructorOptions = {
    schema: 'pgboss',
    max,
    useListenNotify: worker,
    supervise: worker,
    ...(options.monitorIntervalSeconds
      ? { superviseIntervalSeconds: options.monitorIntervalSeconds, monitorIntervalSeconds: options.monitorIntervalSeconds }
      : {}),
    schedule: worker,
    migrate: true,
  };
  const boss = split || preparedStatements || isMultiHost(url)
    ? new OwnConnectionsBoss(config, new QueueConnections({ url, max, preparedStatements, listenUrl: split ? options.listenUrl : undefined }))
    : new PgBoss({ ...config, connectionString: url });
  boss.on('error', (err) => logger.error({ err }, 'pg-boss error'));
  boss.on('warning', (warning) => logger.warn({ warning }, 'pg-boss warning'));
  await boss.start();
  await createQueues(boss, options.expireInSeconds, options.deleteAfterSeconds);
  return boss;
}

/** pg-boss on Kasir's QueueConnections: pg-boss closes only a pool it made, so stop() closes these. */
class OwnConnectionsBoss extends PgBoss {
  readonly #connections: QueueConnections;

  constructor(config: ConstructorOptions, connections: QueueConnections) {
    super({ ...config, db: connections });
    this.#connections = connections;
  }

  override async stop(options: StopOptions = {}): Promise<void> {
    await super.stop(options);
    if (options.close ?? true) await this.#connections.close();
  }
}

/**
 * Creates every missing queue, applies expiry overrides, and brings an existing queue's
 * heartbeat and retry timing to the contract's (queues made by an older Kasir). Idempotent;
 * run at every process start.
 */
export async function createQueues(
  boss: PgBoss,
  expireInSeconds: Partial<Record<QueueName, number>> = {},
  deleteAfterSeconds: Partial<Record<QueueName, number>> = {},
): Promise<void> {
  const existing = new Map((await boss.getQueues()).map((q) => [q.name, q]));
  for (const name of queueNames) {
    const expire = expireInSeconds[name];
    const deleteAfter = deleteAfterSeconds[name];
    const options = { ...queues[name].options, ...(expire ? { expireInSeconds: expire } : {}), ...(deleteAfter ? { deleteAfterSeconds: deleteAfter } : {}), notify: true };
    const queue = existing.get(name);
    if (!queue) {
      await boss.createQueue(name, options);
      continue;
    }
    const contract = queues[name].options as QueueOptions;
    const heartbeat = contract.heartbeatSeconds ?? null;
    const changes = {
      ...(expire && queue.expireInSeconds !== expire ? { expireInSeconds: expire } : {}),
      ...(deleteAfter && queue.deleteAfterSeconds !== deleteAfter ? { deleteAfterSeconds: deleteAfter } : {}),
      ...(queue.heartbeatSeconds !== heartbeat ? { heartbeatSeconds: heartbeat } : {}),
      // Retry timing changes with the code (jobs take the queue's values when sent).
      ...(contract.retryLimit !== undefined && queue.retryLimit !== contract.retryLimit ? { retryLimit: contract.retryLimit } : {}),
      ...(contract.retryDelay !== undefined && queue.retryDelay !== contract.retryDelay ? { retryDelay: contract.retryDelay } : {}),
      ...(contract.retryBackoff !== undefined && queue.retryBackoff !== contract.retryBackoff ? { retryBackoff: contract.retryBackoff } : {}),
    };
    if (Object.keys(changes).length) await boss.updateQueue(name, changes);
  }
}

/** Sends a job, validating its payload against the contract. */
export async function sendJob<Q extends QueueName>(
  boss: PgBoss,
  name: Q,
  payload: Payload<Q>,
  options: SendOptions = {},
): Promise<string | null> {
  return boss.send(name, queues[name].schema.parse(payload) as object, options);
}

/**
 * pg-boss's `db` option bound to an open slonik transaction: a job sent with it commits or
 * rolls back together with the caller's rows (the transactional outbox, without a second table).
 */
export function inTransaction(tx: Db): SendOptions['db'] {
  return {
    executeSql: async (text: string, values?: unknown[]) => {
      const result = await tx.query(rawQuery(text, values ?? []));
      return { rows: result.rows as unknown[] as any[] };
    },
  };
}

/**
 * A value derived once per pg-boss instance and queue, such as a statement built from the
 * queue's table (db/job-insert.ts, db/job-complete.ts). A derivation that fails is forgotten, so
 * the next call tries again.
 */
export function perQueue<T>(derive: (boss: PgBoss, name: QueueName) => Promise<T>): (boss: PgBoss, name: QueueName) => Promise<T> {
  const built = new WeakMap<PgBoss, Map<QueueName, Promise<T>>>();
  return (boss, name) => {
    let byName = built.get(boss);
    if (!byName) built.set(boss, (byName = new Map()));
    let ready = byName.get(name);
    if (!ready) {
      const forget = byName;
      ready = derive(boss, name).catch((err: unknown) => {
        forget.delete(name);
        throw err;
      });
      byName.set(name, ready);
    }
    return ready;
  };
}

export function parsePayload<Q extends QueueName>(name: Q, job: Job<unknown>): Payload<Q> {
  return queues[name].schema.parse(job.data) as Payload<Q>;
}
