// Runs a queue's handler in the shape every Kasir worker uses. Not pg-boss's work loop: that one
// runs a fetched batch to its end before it fetches again, so a batch lasts as long as its
// slowest job. During a vendor's brownout every batch of order creates held a call that ran
// into the vendor timeout, and the orders bound for a healthy vendor waited those 8 s with it
// (docs/performance.md, "Routing"). This loop uses pg-boss's fetch (as db/job-claim.ts writes
// it), complete, fail and touch, and keeps its places filled instead:
//
// - It holds up to batchSize × loops jobs, and fetches again (one round trip for up to
//   batchSize) as soon as a fetch's worth of places is free: a finished job is replaced at
//   once, whatever its neighbours are doing.
// - Each job is settled when it finishes; jobs finishing together are settled together (one
//   statement per distinct output, while the previous settle runs the next accumulates), so one
//   failing job is retried without failing its neighbours. A handler that completed its job in
//   its own statement says so (Completed) and costs no statement here.
// - Jobs held longer than HEARTBEAT_MS get their heartbeat refreshed in one statement, as
//   pg-boss's loop does for a running batch; a job whose claim is found gone (retried elsewhere)
//   has its signal aborted, so a long export stops work whose result cannot land.
// - It wakes on pg-boss's NOTIFY for the queue (one LISTEN connection per process for every
//   queue), when places free up, and once a POLL_MS otherwise (a retry comes due silently).
//
// A handler throws to mean "retry". A job cut off by a SIGKILL stays active until its heartbeat
// goes stale, and is then retried by any worker; handlers are idempotent. Stopping waits
// STOP_GRACE_MS for the jobs in flight, then aborts the signals of those still running.
import { createHash } from 'node:crypto';
import type { Job, JobWithMetadata, PgBoss } from 'pg-boss';
import { jobClaimer } from '../db/job-claim.ts';
import { logger } from '../db/logger.ts';
import { parsePayload, type Payload, type QueueName } from '../db/queue.ts';

/** Thrown by a handler to say "not yet" (a payout still processing at its vendor): retried, not a failure. */
export class NotYet extends Error {}

/**
 * Returned by a handler whose own statement already completed its job (pg-boss's completion,
 * fenced to the fetched attempt: db/job-complete.ts): the loop frees the place without a
 * statement of its own.
 */
export class Completed {
  readonly output: object;
  constructor(output: object) {
    this.output = output;
  }
}

export interface WorkOptions {
  /** Jobs fetched per round trip at most. */
  batchSize: number;
  /** Places in batches: the process holds up to batchSize × loops jobs of the queue at once. */
  loops?: number;
  /** How long stopping waits for the jobs in flight before aborting their signals (STOP_GRACE_MS). */
  stopGraceMs?: number;
}

const POLL_MS = 1_000;
/** How long a stopping worker waits for its jobs before aborting their signals; then how long for them to stop. */
const STOP_GRACE_MS = 15_000;
const ABORT_GRACE_MS = 3_000;

/** Whether `p` settled within `ms`. */
async function within(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([p.then(() => true as const, () => true as const), late]);
  } finally {
    clearTimeout(timer);
  }
}
/** Below half the queues' heartbeatSeconds (10 s, db/queue.ts). */
const HEARTBEAT_MS = 4_000;

/** A wait that ends after `ms`, or sooner when rung. */
export class Doorbell {
  #ring: (() => void) | null = null;
  #rung = false;

  ring() {
    this.#rung = true;
    this.#ring?.();
  }

  async wait(ms: number) {
    if (this.#rung) {
      this.#rung = false;
      return;
    }
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.#ring = done;
    });
    this.#ring = null;
    this.#rung = false;
  }
}

// ---------------------------------------------------------------- NOTIFY, one connection per process

/** pg-boss's NOTIFY channel for a schema (its notifyChannelSql, computed here as it does in SQL). */
function notifyChannel(schema: string): string {
  return `${schema}_${createHash('sha224').update(schema).digest('hex').slice(0, 24)}`;
}

const listeners = new Map<string, Set<() => void>>();
let listening: Promise<{ close(): Promise<void> } | null> | null = null;

/**
 * Calls `onJob` when pg-boss announces a new job on `queue` (and after the LISTEN connection is
 * re-established: announcements may have been missed). Returns the unsubscribe.
 */
export async function onNewJob(boss: PgBoss, queue: string, onJob: () => void): Promise<() => void> {
  let set = listeners.get(queue);
  if (!set) listeners.set(queue, (set = new Set()));
  set.add(onJob);
  listening ??= (async () => {
    try {
      const listener = await boss.getDb().listen?.(
        notifyChannel('pgboss'),
        (name: string) => listeners.get(name)?.forEach((f) => f()),
        () => listeners.forEach((fs) => fs.forEach((f) => f())),
      );
      if (!listener) logger.warn('no LISTEN connection: new jobs wait for the next poll');
      return listener ?? null;
    } catch (err) {
      logger.warn({ err }, 'cannot listen for new jobs: polling only');
      return null;
    }
  })();
  await listening;
  return () => set.delete(onJob);
}

async function closeListener(): Promise<void> {
  const l = listening;
  listening = null;
  listeners.clear();
  await (await l)?.close().catch(() => undefined);
}

// ---------------------------------------------------------------- the loop

interface Held {
  job: JobWithMetadata<unknown> | Job<unknown>;
  heldSince: number;
  claim: AbortController;
}

interface Outcome {
  held: Held;
  ok: boolean;
  output: object | undefined;
  /** Completed by the handler's own statement (a Completed output): nothing left to write. */
  settled?: boolean;
}

const running = new Set<{ stop(): Promise<void> }>();

export async function workQueue<Q extends QueueName>(
  boss: PgBoss,
  name: Q,
  options: WorkOptions,
  handle: (payload: Payload<Q>, job: Job<unknown>) => Promise<unknown>,
): Promise<void> {
  const capacity = options.batchSize * (options.loops ?? 1);
  // Fetched in steps: a fetch's round trip is worth making for a step's worth of free places.
  const step = Math.max(1, Math.ceil(options.batchSize / 5));
  const held = new Map<string, Held>();
  const outcomes: Outcome[] = [];
  const doorbell = new Doorbell();
  const jobs = new Set<Promise<void>>();
  let settling: Promise<void> | null = null;
  let stopping = false;

  const room = () => capacity - held.size;
  const claim = jobClaimer(boss, name);

  const settle = () => {
    if (settling) return;
    settling = (async () => {
      while (outcomes.length) {
        const batch = outcomes.splice(0);
        // One statement per distinct output: completions mostly share theirs ({ confirmed: 'xendit' }).
        const groups = new Map<string, Outcome[]>();
        for (const o of batch.filter((o) => !o.settled)) {
          const key = `${o.ok}|${JSON.stringify(o.output ?? null)}`;
          groups.set(key, [...(groups.get(key) ?? []), o]);
        }
        for (const group of groups.values()) {
          const attempts = group.map((o) => ({ id: o.held.job.id, retryCount: o.held.job.retryCount }));
          const output = group[0].output;
          try {
            if (group[0].ok) await boss.complete(name, attempts, output);
            else await boss.fail(name, attempts, output);
          } catch (err) {
            // Left active: the supervisor retries them once their heartbeat is stale.
            logger.error({ err, queue: name, jobs: group.length }, 'jobs not settled; they will be retried');
          }
        }
        const before = room();
        for (const o of batch) held.delete(o.held.job.id);
        if (before < step && room() >= step) doorbell.ring();
      }
    })().finally(() => {
      settling = null;
      if (outcomes.length) settle();
    });
  };

  const run = (h: Held) => {
    const job = Object.assign(h.job, { signal: h.claim.signal });
    const done = (async () => {
      try {
        const output = await handle(parsePayload(name, job), job);
        if (output instanceof Completed) outcomes.push({ held: h, ok: true, output: output.output, settled: true });
        else outcomes.push({ held: h, ok: true, output: (output ?? undefined) as object | undefined });
      } catch (err) {
        // A job asking to be retried later is expected, and silent at info; any other failure
        // is logged with its stack.
        if (err instanceof NotYet) logger.debug({ queue: name, jobId: job.id, retry: job.retryCount, reason: err.message }, 'job retried later');
        else logger.warn({ err, queue: name, jobId: job.id, retry: job.retryCount }, 'job failed');
        outcomes.push({ held: h, ok: false, output: { message: (err as Error).message } });
      }
      settle();
    })();
    jobs.add(done);
    void done.finally(() => jobs.delete(done));
  };

  const heartbeat = setInterval(() => {
    const due = Date.now() - HEARTBEAT_MS;
    const stale = [...held.values()].filter((h) => h.heldSince <= due && !h.claim.signal.aborted);
    if (!stale.length) return;
    boss.touch(name, stale.map((h) => ({ id: h.job.id, retryCount: h.job.retryCount }))).then(
      (touched) => {
        // The ids it refreshed (pg-boss returns them beside the count; its types do not say so).
        const refreshed = (touched as { settled?: string[] }).settled;
        if (!refreshed) return;
        const kept = new Set(refreshed);
        // Settled by this loop meanwhile, or retried elsewhere: only a job still held has lost its claim.
        for (const h of stale) if (!kept.has(h.job.id) && held.get(h.job.id) === h) h.claim.abort(new Error(`job ${h.job.id} is no longer held by this worker`));
      },
      (err: unknown) => logger.warn({ err, queue: name }, 'job heartbeat failed'),
    );
  }, HEARTBEAT_MS);

  const unsubscribe = await onNewJob(boss, name, () => doorbell.ring());

  const loop = (async () => {
    while (!stopping) {
      const batch = Math.min(options.batchSize, Math.floor(room() / step) * step);
      if (batch > 0) {
        let fetched: Job<unknown>[] = [];
        try {
          fetched = await claim({ batchSize: batch });
        } catch (err) {
          logger.error({ err, queue: name }, 'job fetch failed');
        }
        const now = Date.now();
        for (const job of fetched) {
          const h = { job, heldSince: now, claim: new AbortController() };
          held.set(job.id, h);
          run(h);
        }
        if (fetched.length === batch && !stopping) continue;
      }
      await doorbell.wait(POLL_MS);
    }
  })();

  running.add({
    async stop() {
      stopping = true;
      doorbell.ring();
      await loop;
      unsubscribe();
      // Jobs in flight get STOP_GRACE_MS to finish (a vendor call is bounded by its timeout).
      // A longer one (an export build, a day's reconciliation) then has its signal aborted: it
      // stops and is failed back to the queue, retried by another worker. One that ignores its
      // signal is left active, and retried once its heartbeat is stale.
      if (!(await within(Promise.all([...jobs]), options.stopGraceMs ?? STOP_GRACE_MS))) {
        for (const h of held.values()) h.claim.abort(new Error('worker stopping'));
        await within(Promise.all([...jobs]), ABORT_GRACE_MS);
      }
      while (settling) await settling;
      clearInterval(heartbeat);
    },
  });
}

/** Stops every queue's loop of this process: no more fetches, jobs in flight finish and are settled. */
export async function stopWork(): Promise<void> {
  const loops = [...running];
  running.clear();
  await Promise.all(loops.map((l) => l.stop()));
  await closeListener();
}
