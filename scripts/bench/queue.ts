// Job queue bench: what an idle worker's pickup latency is, and how fast one worker process
// drains a burst. Runs one real `scheduler` worker group process (every group answers `ping`,
// whose handler does nothing but return timestamps), so the figures are the queue's plumbing:
// pg-boss fetch + complete round trips, NOTIFY wake-ups, the batch settings in workers/work.ts.
//
//   npm run bench -- queue [--pings 200] [--jobs 10000] [--rounds 2] [--ephemeral] [--stale-stats] [--json]
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import { setTimeout as delay } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import pg from 'pg';
import type { PgBoss } from 'pg-boss';
import { sendJob, startBoss } from '../../db/queue.ts';
import { ROOT } from '../lib/local.ts';
import { benchDatabase, databaseOptions, durabilityNote, durableFrom } from './database.ts';
import { startWorker } from './worker.ts';

const WARMUP_PINGS = 10;
/** Pause after each ping completes, so the next one finds the worker idle, waiting on NOTIFY. */
const IDLE_GAP_MS = 10;
const TIMEOUT_MS = 120_000;
const POLL_MS = 100;

export async function run(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      pings: { type: 'string', default: '200' },
      jobs: { type: 'string', default: '10000' },
      rounds: { type: 'string', default: '2' },
      ...databaseOptions,
      'stale-stats': { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
    },
    strict: true,
  });
  const pings = positive('pings', values.pings);
  const jobs = positive('jobs', values.jobs);
  const rounds = positive('rounds', values.rounds);
  const analyze = !values['stale-stats'];

  // Benches share the machine with whatever else runs: a 1-minute load above the core count
  // at the start means the figures below are not the machine's.
  const loadBefore = Number(os.loadavg()[0].toFixed(2));
  const db = await benchDatabase({ durable: durableFrom(values) });
  let boss: PgBoss | null = null;
  const client = new pg.Client({ connectionString: db.url });
  // On Ctrl-C the cluster stops under this connection (scripts/bench/database.ts): not a crash.
  client.on('error', () => undefined);
  let worker: Awaited<ReturnType<typeof startWorker>> | null = null;
  try {
    await client.connect();
    boss = await startBoss(db.url, { role: 'sender', poolSize: 4 });
    worker = await startWorker('scheduler', db.url);

    // Warm-ups (not reported): JIT, pg-boss's queue cache, table pages in cache, and a job table
    // of a round's size, so the measured rounds do not start from an empty table.
    await pickupLatencies(boss, WARMUP_PINGS);
    await drain(boss, client, jobs);

    const latencies = summarize(await pickupLatencies(boss, pings));
    const drains = [];
    for (let i = 0; i < rounds; i++) {
      // Statistics as autovacuum keeps them on a live database. Without them (a fresh table that
      // just grew 10x: --stale-stats) the planner expects a handful of ping rows, and pg-boss's
      // completion UPDATE scans every ping row, finished ones included, instead of looking up its
      // batch by primary key: per-batch cost then grows with the table until autoanalyze runs.
      if (analyze) await client.query('analyze pgboss.job');
      drains.push(await drain(boss, client, jobs));
    }

    const report = {
      bench: 'queue',
      machine: { cores: os.availableParallelism(), load_before: loadBefore, node: process.version, postgres: db.settings.server_version },
      pg_boss: await packageVersion('pg-boss'),
      database: { source: db.source, fsync: db.settings.fsync, synchronous_commit: db.settings.synchronous_commit },
      analyze_before_rounds: analyze,
      worker: { group: 'scheduler', processes: 1 },
      pickup_ms: { samples: pings, ...latencies },
      drain: drains,
    };
    process.stdout.write(values.json ? `${JSON.stringify(report)}\n` : text(report));
  } finally {
    await worker?.stop();
    await boss?.stop({ graceful: false });
    await client.end().catch(() => undefined);
    await db.release();
  }
}

/**
 * Sends pings one at a time, each after the previous completed, and returns each one's pickup
 * latency as the handler saw it: received_at (in the worker) − sent_at (here, before the send).
 * That covers the INSERT, the NOTIFY, the worker's fetch and the handler start; how quickly this
 * loop then notices the completion does not enter the figure.
 */
async function pickupLatencies(boss: PgBoss, count: number): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i < count; i++) {
    const id = await sendJob(boss, 'ping', { sent_at: Date.now() });
    if (!id) throw new Error('ping job was not created');
    const output = await completedOutput(boss, id);
    samples.push(output.received_at - output.sent_at);
    await delay(IDLE_GAP_MS);
  }
  return samples;
}

async function completedOutput(boss: PgBoss, id: string): Promise<{ sent_at: number; received_at: number }> {
  const deadline = Date.now() + TIMEOUT_MS;
  for (let wait = 1; Date.now() < deadline; wait = Math.min(wait * 2, 20)) {
    const [job] = await boss.findJobs<unknown>('ping', { id });
    if (job?.state === 'completed') return job.output as { sent_at: number; received_at: number };
    if (job && job.state !== 'created' && job.state !== 'active') throw new Error(`ping ${id} ended ${job.state}`);
    await delay(wait);
  }
  throw new Error(`ping ${id} was not completed within ${TIMEOUT_MS} ms: is the worker running?`);
}

/**
 * Inserts `count` ping jobs in one statement and waits until none is left unfinished. The rate
 * comes from the jobs' own timestamps (first created_on → last completed_on, both on the
 * database clock), so the polling here does not blur it.
 */
async function drain(boss: PgBoss, client: pg.Client, count: number) {
  // One sent_at value tags this round's jobs, to find them again among earlier rounds'.
  const tag = Date.now();
  const started = performance.now();
  await boss.insert('ping', Array.from({ length: count }, () => ({ data: { sent_at: tag } })));
  const insertMs = performance.now() - started;
  // Polled sparingly and cheaply: on 2 cores a 10 ms count every 25 ms (a scan past every
  // finished ping row) measurably slowed the very drain it watched. The waiting count uses
  // pg-boss's fetch index; the full count (active jobs too) runs only once that reaches zero.
  for (;;) {
    await delay(POLL_MS);
    const { rows } = await client.query<{ left: number }>(
      `select count(*)::int as left from pgboss.job where name = 'ping' and state < 'active' and not blocked`,
    );
    if (rows[0].left === 0) {
      const { rows: all } = await client.query<{ left: number }>(
        `select count(*)::int as left from pgboss.job where name = 'ping' and state in ('created', 'retry', 'active')`,
      );
      if (all[0].left === 0) break;
    }
    if (performance.now() - started > TIMEOUT_MS) throw new Error(`ping jobs still unfinished after ${TIMEOUT_MS} ms`);
  }
  const wallMs = performance.now() - started;
  const { rows } = await client.query<{ completed: number; fetches: number; span_ms: string }>(
    `select count(*) filter (where state = 'completed')::int as completed,
            -- one fetch statement stamps its whole batch with the same started_on
            count(distinct started_on)::int as fetches,
            extract(epoch from max(completed_on) - min(created_on)) * 1000 as span_ms
       from pgboss.job where name = 'ping' and data @> $1::jsonb`,
    [JSON.stringify({ sent_at: tag })],
  );
  const { completed, fetches } = rows[0];
  if (completed !== count) throw new Error(`drain: ${completed} of ${count} jobs completed`);
  const spanMs = Number(rows[0].span_ms);
  return {
    jobs: count,
    insert_ms: Math.round(insertMs),
    drain_ms: Math.round(spanMs),
    wall_ms: Math.round(wallMs),
    jobs_per_s: Math.round(count / (spanMs / 1000)),
    fetches,
    mean_batch: Number((count / fetches).toFixed(1)),
  };
}

function summarize(samples: number[]) {
  const sorted = [...samples].sort((a, b) => a - b);
  // Nearest rank: the smallest sample with at least p% of the samples at or below it.
  const at = (p: number) => sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)];
  return { p50: at(50), p95: at(95), p99: at(99), max: sorted[sorted.length - 1] };
}

type Report = {
  machine: { cores: number; load_before: number; node: string; postgres: string };
  pg_boss: string;
  database: { source: string; fsync: string; synchronous_commit: string };
  analyze_before_rounds: boolean;
  pickup_ms: { samples: number; p50: number; p95: number; p99: number; max: number };
  drain: Awaited<ReturnType<typeof drain>>[];
};

function text(r: Report): string {
  const p = r.pickup_ms;
  return [
    `queue bench: one worker process (group scheduler), pg-boss ${r.pg_boss}`,
    `machine   ${r.machine.cores} cores (1-min load ${r.machine.load_before} at start` +
      `${r.machine.load_before > r.machine.cores ? ': BUSY, figures unreliable' : ''}), Node ${r.machine.node}, PostgreSQL ${r.machine.postgres}`,
    `database  ${r.database.source}: fsync=${r.database.fsync} synchronous_commit=${r.database.synchronous_commit}` +
      durabilityNote(r.database),
    `pickup    ${p.samples} pings one at a time, idle worker: p50 ${p.p50} ms  p95 ${p.p95} ms  p99 ${p.p99} ms  max ${p.max} ms`,
    `stats     ${r.analyze_before_rounds ? 'ANALYZE pgboss.job before each drain round' : 'stale (--stale-stats): no ANALYZE before the rounds'}`,
    ...r.drain.map(
      (d, i) =>
        `drain ${i + 1}   ${d.jobs} jobs inserted at once: ${d.jobs_per_s} jobs/s  ` +
        `(${d.drain_ms} ms insert→last completion; insert ${d.insert_ms} ms; ${d.fetches} fetches, mean batch ${d.mean_batch})`,
    ),
    '',
  ].join('\n');
}

function positive(flag: string, value: string): number {
  const n = Number(value);
  // Node's own code for a bad flag value: scripts/bench.ts prints these as usage errors.
  if (!Number.isInteger(n) || n < 1) throw Object.assign(new Error(`--${flag} must be a positive integer`), { code: 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' });
  return n;
}

async function packageVersion(name: string): Promise<string> {
  return (JSON.parse(await readFile(`${ROOT}node_modules/${name}/package.json`, 'utf8')) as { version: string }).version;
}
