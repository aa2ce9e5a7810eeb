// The queue loop every worker runs (workers/work.ts): a job that hangs does not hold the jobs
// fetched with it, nor the fetching of new ones (pg-boss's own loop ran a batch to its end); each
// job is settled when it finishes, with its own output, a failure settled without its neighbours;
// and stopping waits for the job in flight.
import t from 'tap';
import type { PgBoss } from 'pg-boss';
import { sendJob, startBoss } from '../../db/queue.ts';
import { stopWork, workQueue } from '../../workers/work.ts';
import { testDatabase } from '../helpers/db.ts';
import { eventually } from '../helpers/http.ts';

const url = await testDatabase(t);

t.test('a hanging job holds neither its batch nor the next fetch; each job settles on its own', async (t) => {
  const boss: PgBoss = await startBoss(url, { role: 'worker', preparedStatements: false, poolSize: 4 });
  let stopped = false;
  t.teardown(async () => {
    if (!stopped) await stopWork();
    await boss.stop({ graceful: false });
  });

  // sent_at picks the behaviour: 1 hangs until released, 2 fails, others answer at once.
  let release!: () => void;
  const hanging = new Promise<void>((resolve) => (release = resolve));
  const handled: number[] = [];
  const HANG = 1;
  const FAIL = 2;
  // Several jobs go out before the loop starts, so the hanging one is fetched with its neighbours.
  const first = await Promise.all([HANG, FAIL, 10, 11, 12].map((n) => sendJob(boss, 'ping', { sent_at: n })));
  await workQueue(boss, 'ping', { batchSize: 10 }, async (payload) => {
    if (payload.sent_at === HANG) await hanging;
    if (payload.sent_at === FAIL) throw new Error('this one fails');
    handled.push(payload.sent_at);
    return { received: payload.sent_at };
  });

  const state = async (id: string | null) => (await boss.getJobById('ping', id!))!;
  const neighbours = [first[1], first[2], first[3], first[4]];
  await eventually(async () => ((await Promise.all(neighbours.map(state))).every((j) => j.state === 'completed' || j.state === 'failed') ? true : undefined), 'the hanging job\'s neighbours to settle');
  t.equal((await state(first[0])).state, 'active', 'the hanging job is still active');
  for (const [i, n] of [[2, 10], [3, 11], [4, 12]] as const) {
    const job = await state(first[i]);
    t.equal(job.state, 'completed', `job ${n} completed while its batch's hanging job runs`);
    t.same(job.output, { received: n }, `with its own output`);
  }
  t.equal((await state(first[1])).state, 'failed', 'the failing job failed alone (ping retries none)');
  t.same((await state(first[1])).output, { message: 'this one fails' }, 'with its error as its output');

  // The loop fetches again while the hanging job runs: a new job sent now is handled.
  const later = await sendJob(boss, 'ping', { sent_at: 20 });
  await eventually(async () => ((await state(later)).state === 'completed' ? true : undefined), 'a job sent after the batch to complete');
  t.ok(handled.includes(20), 'the new job was handled while the hanging one still runs');
  t.equal((await state(first[0])).state, 'active', 'which is still active');

  // Stopping waits for the job in flight, then settles it.
  const stopping = stopWork();
  let done = false;
  void stopping.then(() => (done = true));
  await new Promise((resolve) => setImmediate(resolve));
  t.notOk(done, 'stop waits for the hanging job');
  release();
  await stopping;
  stopped = true;
  t.equal((await state(first[0])).state, 'completed', 'the hanging job, released, was completed before stop returned');
});

t.test('stopping aborts the signal of a job still running after the grace, which fails back to the queue', async (t) => {
  const boss: PgBoss = await startBoss(url, { role: 'worker', preparedStatements: false, poolSize: 4 });
  t.teardown(() => boss.stop({ graceful: false }));
  let started!: () => void;
  const running = new Promise<void>((resolve) => (started = resolve));
  await workQueue(boss, 'ping', { batchSize: 1, stopGraceMs: 100 }, async (_payload, job) => {
    started();
    // An export build's shape: it works until its signal says the claim is gone.
    await new Promise((_, reject) => job.signal!.addEventListener('abort', () => reject(job.signal!.reason)));
  });
  const id = await sendJob(boss, 'ping', { sent_at: 30 });
  await running;
  const stoppedAt = Date.now();
  await stopWork();
  t.ok(Date.now() - stoppedAt < 5_000, 'stop returned after the grace, not when the job chose to end');
  const job = (await boss.getJobById('ping', id!))!;
  t.equal(job.state, 'failed', 'the aborted job was failed back to the queue (ping retries none; others are retried)');
  t.same(job.output, { message: 'worker stopping' }, 'with the reason');
});
