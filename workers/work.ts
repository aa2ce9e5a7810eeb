// Registers a queue handler with pg-boss in the shape every Kasir worker uses: jobs are fetched
// in batches (one round trip for up to `batchSize` jobs, and back-to-back fetches while batches
// come back full), each job in the batch runs concurrently, and each is settled on its own, so
// one failing job is retried without failing its neighbours. A handler throws to mean "retry".
import type { Job, PgBoss } from 'pg-boss';
import { logger } from '../db/logger.ts';
import { parsePayload, type Payload, type QueueName } from '../db/queue.ts';

/** Thrown by a handler to say "not yet" (a payout still processing at its vendor): retried, not a failure. */
export class NotYet extends Error {}

export interface WorkOptions {
  /** Jobs fetched per round trip; bounds this process's concurrency on the queue. */
  batchSize: number;
  /** Independent fetch loops; more of them overlap I/O-bound batches. */
  loops?: number;
}

export async function workQueue<Q extends QueueName>(
  boss: PgBoss,
  name: Q,
  options: WorkOptions,
  handle: (payload: Payload<Q>, job: Job<unknown>) => Promise<unknown>,
): Promise<void> {
  await boss.work<unknown>(
    name,
    {
      batchSize: options.batchSize,
      localConcurrency: options.loops ?? 1,
      burstWhenBatchFull: options.batchSize > 1,
      perJobResults: true,
      // NOTIFY wakes workers for new jobs, but a delayed job (startAfter: webhook retries,
      // reconciliation) is announced by nobody when it comes due: this poll is its clock.
      pollingIntervalSeconds: 1,
      notifyPollingIntervalSeconds: 1,
    },
    async (jobs) =>
      Promise.all(
        jobs.map(async (job) => {
          try {
            const output = await handle(parsePayload(name, job), job);
            return { id: job.id, status: 'completed' as const, output: (output ?? undefined) as object | undefined };
          } catch (err) {
            // A job asking to be retried later is expected, and silent at info; any other
            // failure is logged with its stack.
            if (err instanceof NotYet) logger.debug({ queue: name, jobId: job.id, retry: job.retryCount, reason: err.message }, 'job retried later');
            else logger.warn({ err, queue: name, jobId: job.id, retry: job.retryCount }, 'job failed');
            return { id: job.id, status: 'failed' as const, output: { message: (err as Error).message } };
          }
        }),
      ),
  );
}
