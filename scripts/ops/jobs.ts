// Job reruns and a worker ping, so support can act on a failed job without touching SQL (the
// list of jobs is scripts/ops/lists.ts).
import { z } from 'zod';
import { sql } from '../../db/pool.ts';
import { queueNames, sendJob, type QueueName } from '../../db/queue.ts';
import { command, OpsError } from './command.ts';
import { idsFromStdin } from './many-ids.ts';

const queueName = z.enum(queueNames as [QueueName, ...QueueName[]]);
const states = ['created', 'retry', 'active', 'completed', 'cancelled', 'failed'] as const;

const jobId = z.uuid('every id must be a job UUID');
const jobRow = z.object({ id: z.string(), name: z.string(), state: z.string() });

export const jobsRerun = command({
  name: 'jobs:rerun',
  summary: 'Rerun failed or cancelled jobs by id (many at once: --id repeated, or --stdin), or every failed job of a queue',
  usage: `jobs:rerun (--id ID [--id ID …] | --stdin | --queue Q --failed) [--json]`,
  flags: { id: { type: 'string', multiple: true }, stdin: { type: 'boolean' }, queue: { type: 'string' }, failed: { type: 'boolean' } },
  input: z
    .object({ id: z.array(jobId).optional(), stdin: z.boolean().optional(), queue: queueName.optional(), failed: z.boolean().optional() })
    .refine((v) => Boolean(v.id?.length || v.stdin) !== Boolean(v.queue && v.failed), { message: 'give --id ID (repeatable) or --stdin, or --queue Q --failed' }),
  async run(ctx, input) {
    const boss = await ctx.boss();
    let targets: { id: string; name: string }[];
    const skipped: { id: string; reason: string }[] = [];
    if (input.queue) {
      targets = (await boss.findJobs<unknown>(input.queue)).filter((job) => job.state === 'failed');
    } else {
      const ids = [...new Set([...(input.id ?? []), ...(input.stdin ? await idsFromStdin() : [])])];
      const bad = ids.find((id) => !jobId.safeParse(id).success);
      if (bad) throw new OpsError(`${bad} is not a job UUID`);
      // One statement for every id, whatever the queue (findJobs asks one queue at a time).
      const pool = await ctx.pool();
      const found = new Map((await pool.any(sql.type(jobRow)`
        select id::text as id, name, state::text as state from pgboss.job where id = any(${sql.array(ids, 'uuid')})`)).map((j) => [j.id, j]));
      targets = [];
      for (const id of ids) {
        const job = found.get(id);
        if (!job) skipped.push({ id, reason: `no job with id ${id}` });
        else if (job.state !== 'failed' && job.state !== 'cancelled') skipped.push({ id, reason: `job ${id} is ${job.state}; only failed or cancelled jobs can be rerun` });
        else targets.push(job);
      }
      if (ids.length === 1 && skipped.length) throw new OpsError(skipped[0].reason);
    }
    const byQueue = Map.groupBy(targets, (job) => job.name);
    for (const [name, jobs] of byQueue) await boss.retry(name, jobs.map((job) => job.id));
    const rerun = targets.map((job) => job.id);
    const text = [rerun.length ? `rerun ${rerun.length} job(s): ${rerun.join(', ')}` : 'nothing to rerun', ...skipped.map((s) => `skipped: ${s.reason}`)].join('\n');
    return { json: { rerun, skipped }, text, exitCode: skipped.length ? 1 : 0 };
  },
});

export const jobsPing = command({
  name: 'jobs:ping',
  summary: 'Send a ping job and report how long a worker took to pick it up',
  usage: 'jobs:ping [--timeout-ms N] [--json]',
  flags: { 'timeout-ms': { type: 'string' } },
  input: z.object({ 'timeout-ms': z.coerce.number().int().min(100).default(10_000) }),
  async run(ctx, input) {
    const boss = await ctx.boss();
    const sentAt = Date.now();
    const id = await sendJob(boss, 'ping', { sent_at: sentAt });
    if (!id) throw new OpsError('ping job was not created');
    const deadline = sentAt + input['timeout-ms'];
    for (let wait = 5; Date.now() < deadline; wait = Math.min(wait * 2, 100)) {
      const [job] = await boss.findJobs<unknown>('ping', { id });
      if (job?.state === 'completed') {
        const output = job.output as { received_at: number; pid: number };
        const pickupMs = output.received_at - sentAt;
        return { json: { job_id: id, pickup_ms: pickupMs, worker_pid: output.pid }, text: `worker ${output.pid} picked up the ping after ${pickupMs} ms` };
      }
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
    throw new OpsError(`no worker picked up ping job ${id} within ${input['timeout-ms']} ms: is a worker group running?`);
  },
});
