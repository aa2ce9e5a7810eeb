// The webhook worker's dispatcher: which delivery jobs run when, fair between destinations.
//
// pg-boss's own work loop runs a fetched batch to its end before it fetches again, so a batch
// lasts as long as its slowest request: one merchant whose endpoint hangs until the timeout
// held every batch it was in for 10 s, and every other merchant's webhooks with it. This loop
// uses pg-boss's fetch (as db/job-claim.ts writes it), completion, heartbeat and fail, but keeps
// its places filled continuously:
//
// - It holds about CAPACITY jobs (in flight, waiting for their destination, or being
//   recorded), and fetches again as soon as REFILL places are free, so one fetch serves many
//   deliveries and a finished request is replaced at once, whatever its neighbours are doing.
// - At most PER_DESTINATION requests are in flight to one destination (a URL's origin: what a
//   merchant's endpoint is to us); its other jobs wait in its own line, in the order fetched,
//   so one destination's events still go out oldest first.
// - A destination holds at most DESTINATION_HOLD jobs: beyond that the fetch passes over its
//   jobs (each job carries its destination as its pg-boss group). Of its line, only the next
//   round (PER_DESTINATION jobs) counts against CAPACITY. So a merchant whose endpoint hangs
//   until the timeout ties up 2 × PER_DESTINATION of the CAPACITY places however long its
//   backlog, and the rest keep moving; one answering 500 costs even less (its attempts end at
//   once and retry later). Its line stays oldest first, and short enough that its last job
//   starts well within the job's expiry (120 s) even if every request runs into the timeout.
// - Finished attempts are recorded in batches (workers/webhook-deliver.ts recordBatch): while one
//   batch's transaction runs, the next accumulates.
// - Jobs held longer than HEARTBEAT_MS get their heartbeat refreshed in one statement, as
//   pg-boss's work loop does for a running batch, so the supervisor does not take them back.
// - It wakes on pg-boss's NOTIFY for the queue (a new job; workers/work.ts holds the process's
//   LISTEN), when places free up, and once a POLL_MS otherwise (a retry's job comes due silently).
import type { Job, PgBoss } from 'pg-boss';
import { jobClaimer } from '../db/job-claim.ts';
import { logger } from '../db/logger.ts';
import { guardedLookup } from '../db/notify-url.ts';
import { parsePayload } from '../db/queue.ts';
import { WEBHOOK_QUEUE } from '../db/webhooks.ts';
import type { WorkerContext } from './context.ts';
import { attempt, DestinationPools, loadBatch, recordBatch, type Sendable, type Settled } from './webhook-deliver.ts';
import { Doorbell, onNewJob } from './work.ts';

/**
 * Jobs one process holds at once. A job is held from its fetch through its delivery's read, its
 * request and the transaction that records it, ~100 ms on a busy machine, most of it waiting
 * for the database: holding 100 (pg-boss's loops held 2 × 50 before) capped a burst at ~1,400
 * deliveries a second whatever the receivers did, 200 at ~1,900, 400 let it keep pace with the
 * expiry line. Requests in flight are bounded per destination, not by this.
 */
export const CAPACITY = 400;
/** Requests in flight to one destination. */
export const PER_DESTINATION = 32;
/**
 * Jobs one destination may hold before the fetch passes over it: 5 rounds of its places, 50 s
 * at a 10 s timeout; a fetch can add up to MAX_BATCH more, 80 s in all.
 */
const DESTINATION_HOLD = 5 * PER_DESTINATION;
/** Free places that make a fetch worth its round trip. */
const REFILL = 50;
/** Jobs one fetch may bring (they may all be one destination's). */
const MAX_BATCH = 100;
/**
 * After a fetch that came back short while passing over full destinations, a new job's NOTIFY
 * wakes the next fetch no sooner than this many times that fetch's duration: such a fetch reads
 * past every job of the full destinations (a burst's backlog for one merchant, ~10 ms for
 * 20,000 jobs), and repeating it at every NOTIFY of a burst would cost more than the deliveries.
 * About a tenth of a core at most, and no wait at all when it is cheap.
 */
const PASS_OVER_SPACING = 10;
const POLL_MS = 1_000;
/** Below half the queue's heartbeatSeconds (10 s, db/queue.ts). */
const HEARTBEAT_MS = 4_000;
/** Settled jobs recorded per transaction at most. */
const RECORD_BATCH = 200;

interface Held {
  job: Job<unknown>;
  fetchedAt: number;
  sendable: Sendable | null;
}

class Destination {
  readonly name: string;
  /** Job id → when its request started. */
  readonly inFlight = new Map<string, number>();
  readonly waiting: Held[] = [];
  /** The last fetch passed over this destination's jobs (it was full). */
  passedOver = false;

  constructor(name: string) {
    this.name = name;
  }

  held(): number {
    return this.inFlight.size + this.waiting.length;
  }
}

export interface Dispatcher {
  stop(): Promise<void>;
}

export async function startWebhookDispatch(ctx: WorkerContext): Promise<Dispatcher> {
  const boss: PgBoss = ctx.boss;
  const claim = jobClaimer(boss, WEBHOOK_QUEUE);
  const pools = new DestinationPools(PER_DESTINATION, guardedLookup(ctx.config.NOTIFY_URL_ALLOWLIST), ctx.config.WEBHOOK_TIMEOUT_MS);
  const destinations = new Map<string, Destination>();
  const heldJobs = new Map<string, Held>();
  const settled: Settled[] = [];
  const doorbell = new Doorbell();
  let stopping = false;
  let recording: Promise<void> | null = null;
  const attempts = new Set<Promise<void>>();

  const destination = (name: string) => {
    let d = destinations.get(name);
    if (!d) destinations.set(name, (d = new Destination(name)));
    return d;
  };
  /** Places free: held jobs count, except those waiting beyond their destination's next round. */
  const room = () => {
    let aside = 0;
    for (const d of destinations.values()) aside += Math.max(0, d.waiting.length - PER_DESTINATION);
    return CAPACITY - heldJobs.size + Math.min(aside, CAPACITY);
  };
  const full = (d: Destination) => d.held() >= DESTINATION_HOLD;

  // Releases jobs from this process; wakes the fetch loop when that frees a fetch's worth of places.
  const release = (ids: readonly string[]) => {
    const before = room();
    for (const id of ids) heldJobs.delete(id);
    if (before < REFILL && room() >= REFILL) doorbell.ring();
  };

  const record = () => {
    if (recording) return;
    recording = (async () => {
      while (settled.length) {
        // A delivery at most once per batch (a resend's job beside a retry's): the rest wait.
        const batch: Settled[] = [];
        const later: Settled[] = [];
        const seen = new Set<string>();
        for (const s of settled.splice(0, RECORD_BATCH)) {
          const id = s.sendable?.row.id;
          if (id && seen.has(id)) later.push(s);
          else {
            if (id) seen.add(id);
            batch.push(s);
          }
        }
        settled.unshift(...later);
        try {
          await recordBatch(ctx, batch);
        } catch (err) {
          // Left active: the supervisor retries them once their heartbeat is stale.
          logger.error({ err, jobs: batch.length }, 'webhook attempts not recorded; their jobs will be retried');
        }
        release(batch.map((s) => s.job.id));
      }
    })().finally(() => {
      recording = null;
      if (settled.length) record();
    });
  };

  const settle = (s: Settled) => {
    settled.push(s);
    record();
  };

  const pump = (d: Destination) => {
    while (d.inFlight.size < PER_DESTINATION && d.waiting.length) {
      const h = d.waiting.shift()!;
      d.inFlight.set(h.job.id, Date.now());
      const running = attempt(ctx, pools, h.sendable!).then((result) => {
        d.inFlight.delete(h.job.id);
        attempts.delete(running);
        settle({ job: h.job, sendable: h.sendable, result });
        pump(d);
        // A destination the fetch passed over has room for a fetch's worth again.
        if (d.passedOver && d.held() <= DESTINATION_HOLD - REFILL) {
          d.passedOver = false;
          doorbell.ring();
        }
        if (d.held() === 0 && destinations.get(d.name) === d) destinations.delete(d.name);
      });
      attempts.add(running);
    }
  };

  const admit = async (jobs: Job<unknown>[]) => {
    const now = Date.now();
    const held = jobs.map((job) => ({ job, fetchedAt: now, sendable: null as Sendable | null }));
    for (const h of held) heldJobs.set(h.job.id, h);
    const ids = new Map<string, string>();
    for (const h of held) {
      try {
        ids.set(h.job.id, parsePayload(WEBHOOK_QUEUE, h.job).delivery_id);
      } catch (err) {
        logger.error({ err, jobId: h.job.id }, 'webhook job with an invalid payload: completed unsent');
      }
    }
    let sendable: Map<string, Sendable>;
    try {
      sendable = await loadBatch(ctx, [...new Set(ids.values())]);
    } catch (err) {
      logger.error({ err, jobs: jobs.length }, 'webhook deliveries not loaded; their jobs will be retried');
      release(held.map((h) => h.job.id));
      return;
    }
    const touched = new Set<Destination>();
    for (const h of held) {
      const deliveryId = ids.get(h.job.id);
      h.sendable = deliveryId ? (sendable.get(deliveryId) ?? null) : null;
      if (!h.sendable) {
        settle({ job: h.job, sendable: null, result: null });
        continue;
      }
      const d = destination(h.sendable.destination);
      d.waiting.push(h);
      touched.add(d);
    }
    for (const d of touched) pump(d);
  };

  const heartbeat = setInterval(() => {
    const due = Date.now() - HEARTBEAT_MS;
    const jobs = [...heldJobs.values()].filter((h) => h.fetchedAt <= due).map((h) => ({ id: h.job.id, retryCount: h.job.retryCount }));
    if (jobs.length) boss.touch(WEBHOOK_QUEUE, jobs).catch((err) => logger.warn({ err }, 'webhook job heartbeat failed'));
  }, HEARTBEAT_MS);
  // A new job's NOTIFY: wakes the fetch, spaced out while the last one read past full destinations.
  let passedOverUntil = 0;
  let pending: NodeJS.Timeout | null = null;
  const notified = () => {
    const wait = passedOverUntil - Date.now();
    if (wait <= 0) return doorbell.ring();
    pending ??= setTimeout(() => {
      pending = null;
      doorbell.ring();
    }, wait);
  };

  const unsubscribe = await onNewJob(boss, WEBHOOK_QUEUE, notified);

  const loop = (async () => {
    while (!stopping) {
      const batch = Math.min(MAX_BATCH, Math.floor(room() / REFILL) * REFILL);
      if (batch > 0) {
        let jobs: Job<unknown>[] = [];
        const passed = [...destinations.values()].filter(full);
        for (const d of passed) d.passedOver = true;
        const skip = passed.map((d) => d.name);
        const started = Date.now();
        try {
          jobs = await claim({ batchSize: batch, ignoreGroups: skip });
        } catch (err) {
          logger.error({ err }, 'webhook fetch failed');
        }
        const now = Date.now();
        passedOverUntil = jobs.length < batch && skip.length ? now + PASS_OVER_SPACING * (now - started) : 0;
        if (jobs.length) await admit(jobs);
        if (jobs.length === batch && !stopping) continue;
      }
      await doorbell.wait(POLL_MS);
    }
  })();

  return {
    async stop() {
      stopping = true;
      doorbell.ring();
      await loop;
      if (pending) clearTimeout(pending);
      unsubscribe();
      // Jobs not started go back to the queue as failed once (retried after the queue's delay,
      // by this or another worker); requests in flight finish (within the timeout).
      const waiting = [...destinations.values()].flatMap((d) => d.waiting.splice(0));
      if (waiting.length) {
        await boss
          .fail(WEBHOOK_QUEUE, waiting.map((h) => ({ id: h.job.id, retryCount: h.job.retryCount })), { message: 'webhook worker stopping' })
          .catch((err) => logger.warn({ err, jobs: waiting.length }, 'unstarted webhook jobs not handed back; they return after their heartbeat'));
        release(waiting.map((h) => h.job.id));
      }
      while (attempts.size) await Promise.all([...attempts]);
      for (;;) {
        if (!recording && settled.length) record();
        if (!recording) break;
        await recording;
      }
      clearInterval(heartbeat);
      pools.destroy();
    },
  };
}
