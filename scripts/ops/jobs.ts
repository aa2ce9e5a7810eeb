// Job inspection and reruns, so support can act on a failed job without touching SQL.
import { z } from 'zod';
import { queueNames, sendJob, type QueueName } from '../../db/queue.ts';
import { command, OpsError } from './command.ts';

const queueName = z.enum(queueNames as [QueueName, ...QueueName[]]);
const states = ['created', 'retry', 'active', 'completed', 'cancelled', 'failed'] as const;

export const jobsList = command({
  name: 'jobs:list',
  summary: 'List jobs, newest first (optionally one queue, one state)',
  usage: `jobs:list [--queue ${queueNames.join('|')}] [--state ${states.join('|')}] [--limit N] [--json]`,
  flags: { queue: { type: 'string' }, state: { type: 'string' }, limit: { type: 'string' } },
  input: z.object({
    queue: queueName.optional(),
    state: z.enum(states).optional(),
    limit: z.coerce.number().int().min(1).max(1000).default(50),
  }),
  async run(ctx, input) {
    const boss = await ctx.boss();
    const names = input.queue ? [input.queue] : queueNames;
    const jobs = (await Promise.all(names.map((name) => boss.findJobs<unknown>(name))))
      .flat()
      .filter((job) => !input.state || job.state === input.state)
      .sort((a, b) => b.createdOn.getTime() - a.createdOn.getTime())
      .slice(0, input.limit)
      .map((job) => ({
        id: job.id,
        queue: job.name,
        state: job.state,
        retry_count: job.retryCount,
        data: job.data,
        output: job.output,
        created_on: job.createdOn.toISOString(),
        completed_on: job.completedOn?.toISOString() ?? null,
      }));
    const row = (id: string, queue: string, state: string, retries: string, created: string, data: string) =>
      `${id.padEnd(36)}  ${queue.padEnd(22)} ${state.padEnd(9)} ${retries.padStart(7)}  ${created.padEnd(24)} ${data}`;
    const text = jobs.length
      ? [
          row('ID', 'QUEUE', 'STATE', 'RETRIES', 'CREATED', 'DATA'),
          ...jobs.map((j) => row(j.id, j.queue, j.state, String(j.retry_count), j.created_on, JSON.stringify(j.data))),
        ].join('\n')
      : 'no jobs';
    return { json: { jobs }, text };
  },
});

export const jobsRerun = command({
  name: 'jobs:rerun',
  summary: 'Rerun one job by id, or every failed job of a queue',
  usage: `jobs:rerun (--id ID | --queue Q --failed) [--json]`,
  flags: { id: { type: 'string' }, queue: { type: 'string' }, failed: { type: 'boolean' } },
  input: z
    .object({ id: z.uuid('--id must be a job UUID').optional(), queue: queueName.optional(), failed: z.boolean().optional() })
    .refine((v) => Boolean(v.id) !== Boolean(v.queue && v.failed), { message: 'give --id ID, or --queue Q --failed' }),
  async run(ctx, input) {
    const boss = await ctx.boss();
    let targets: { id: string; name: string }[];
    if (input.id) {
      const found = (await Promise.all(queueNames.map((name) => boss.findJobs<unknown>(name, { id: input.id })))).flat();
      if (!found.length) throw new OpsError(`no job with id ${input.id}`);
      if (found[0].state !== 'failed' && found[0].state !== 'cancelled') {
        throw new OpsError(`job ${input.id} is ${found[0].state}; only failed or cancelled jobs can be rerun`);
      }
      targets = found;
    } else {
      targets = (await boss.findJobs<unknown>(input.queue!)).filter((job) => job.state === 'failed');
    }
    const byQueue = Map.groupBy(targets, (job) => job.name);
    for (const [name, jobs] of byQueue) await boss.retry(name, jobs.map((job) => job.id));
    const ids = targets.map((job) => job.id);
    return { json: { rerun: ids }, text: ids.length ? `rerun ${ids.length} job(s): ${ids.join(', ')}` : 'nothing to rerun' };
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
