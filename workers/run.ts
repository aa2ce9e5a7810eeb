// Process entry of every worker Procfile line: `node workers/run.ts <group>`.
// On SIGTERM/SIGINT the queue loops (workers/work.ts) stop fetching and wait for in-flight jobs; a
// job cut off by a SIGKILL is retried once its heartbeat is stale, and handlers are idempotent.
// With METRICS_PORT set the process serves GET /metrics there (one port per process).
import { directDatabaseUrl, loadConfig, pooledConnections } from '../db/config.ts';
import { logger } from '../db/logger.ts';
import { startMetricsServer } from '../db/metrics.ts';
import { createPool } from '../db/pool.ts';
import { HIGH_VOLUME_QUEUES, startBoss } from '../db/queue.ts';
import { openReplica, primaryOnly } from '../db/replica.ts';
import { createSealer } from '../db/secrets.ts';
import { startOutcomeRecorder } from '../db/vendor-outcomes.ts';
import { waitForDatabaseOrExit } from '../db/wait-for-database.ts';
import { groupNames, groups } from './groups.ts';
import { stopWork } from './work.ts';

const name = process.argv[2] ?? '';
const group = groups[name];
if (!group) {
  process.stderr.write(`usage: node workers/run.ts <group>  (groups: ${groupNames.join(', ')})\n`);
  process.exit(64);
}

const config = loadConfig();
logger.level = config.LOG_LEVEL;
await waitForDatabaseOrExit([config.DATABASE_URL, directDatabaseUrl(config)], config.DATABASE_WAIT_SECONDS, `worker-${name}`);
const pool = await createPool(config.DATABASE_URL, { size: config.DB_POOL_SIZE, name: `worker-${name}`, statementTimeoutMs: config.WORKER_STATEMENT_TIMEOUT_MS, ...pooledConnections(config) });
const replica = group.replicaPoolSize ? await openReplica(config, pool, group.replicaPoolSize, `worker-${name}`, config.WORKER_STATEMENT_TIMEOUT_MS) : primaryOnly(pool);
const boss = await startBoss(config.DATABASE_URL, {
  role: 'worker',
  listenUrl: directDatabaseUrl(config),
  preparedStatements: pooledConnections(config).preparedStatements,
  monitorIntervalSeconds: config.QUEUE_MONITOR_INTERVAL_SECONDS,
  expireInSeconds: { 'order-create': config.ORDER_CREATE_JOB_EXPIRE_SECONDS },
  deleteAfterSeconds: Object.fromEntries(HIGH_VOLUME_QUEUES.map((q) => [q, config.QUEUE_HIGH_VOLUME_DELETE_AFTER_HOURS * 3600])),
});
await group.start({ config, pool, replica, boss, sealer: createSealer(config) });
// Vendor call outcomes counted in this process reach vendor_outcomes (adaptive routing) once a second.
const outcomes = startOutcomeRecorder(pool);
const metrics = await startMetricsServer(config, pool);
logger.info({ group: name }, 'worker group started');
process.send?.({ ready: true, group: name, metricsPort: metrics?.port ?? null });

let stopping = false;
async function stop(signal: string) {
  if (stopping) return;
  stopping = true;
  logger.info({ group: name, signal }, 'worker group stopping');
  await group!.stop?.();
  await stopWork();
  await boss.stop({ graceful: true, timeout: 20_000 });
  await outcomes.stop();
  await metrics?.close();
  await replica.close();
  await pool.end();
  process.exit(0);
}
process.on('SIGTERM', () => void stop('SIGTERM'));
process.on('SIGINT', () => void stop('SIGINT'));
process.on('disconnect', () => void stop('parent gone'));
