// A worker's pg-boss on Kasir's own connections (db/queue-connections.ts), through pg-boss's
// public adapter interface: its statements become named prepared statements on their third run;
// its LISTEN connection goes to the listen URL (a TCP relay here, standing where Postgres itself
// is when DATABASE_URL is a pooler) while its statements do not; a new job wakes the worker by
// NOTIFY, not by its poll; a LISTEN connection cut under it is replaced and wakes it again; and
// stopping pg-boss closes every connection.
import t from 'tap';
import { createServer, connect, type Server, type Socket } from 'node:net';
import pg from 'pg';
import type { PgBoss } from 'pg-boss';
import { startBoss, sendJob } from '../../db/queue.ts';
import { QueueConnections } from '../../db/queue-connections.ts';
import { freePort } from '../../scripts/lib/cluster.ts';
import { testDatabase } from '../helpers/db.ts';
import { eventually } from '../helpers/http.ts';

const url = await testDatabase(t);

async function sessions(applicationName: string): Promise<{ pid: number; query: string }[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query(
      'select pid, query from pg_stat_activity where datname = current_database() and application_name = $1', [applicationName]);
    return rows;
  } finally {
    await client.end();
  }
}

/** Relays connections on a free port to the test's Postgres; counts them and can cut them all. */
async function relay(): Promise<{ url: string; opened: () => number; cut: () => void }> {
  const target = new URL(url);
  const open = new Set<Socket>();
  let opened = 0;
  const server: Server = createServer((client) => {
    opened++;
    const upstream = connect(Number(target.port), target.hostname);
    for (const socket of [client, upstream]) {
      open.add(socket);
      socket.on('close', () => open.delete(socket));
    }
    client.pipe(upstream).pipe(client);
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
  });
  const port = await freePort();
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  t.teardown(() => new Promise((resolve) => server.close(resolve)));
  const through = new URL(url);
  through.hostname = '127.0.0.1';
  through.port = String(port);
  return {
    url: through.toString(),
    opened: () => opened,
    cut: () => {
      for (const socket of open) socket.destroy();
    },
  };
}

t.test('a statement with parameters is named on its third run; only when asked to', async (t) => {
  const text = 'select $1::int + 1 as n -- queue-connections test';
  const named = async (db: QueueConnections) =>
    (await db.executeSql('select name from pg_prepared_statements where statement = $1', [text])).rows.length;
  const prepared = new QueueConnections({ url, max: 1, preparedStatements: true });
  const unprepared = new QueueConnections({ url, max: 1, preparedStatements: false });
  t.teardown(() => Promise.all([prepared.close(), unprepared.close()]));

  for (const n of [1, 2]) t.same((await prepared.executeSql(text, [n])).rows, [{ n: n + 1 }]);
  t.equal(await named(prepared), 0, 'run twice: still an unnamed statement');
  t.same((await prepared.executeSql(text, [3])).rows, [{ n: 4 }], 'the third run answers as the others');
  t.equal(await named(prepared), 1, 'run three times: prepared on its connection');
  await prepared.executeSql(text, [4]);
  t.equal(await named(prepared), 1, 'and reused, not prepared again');

  for (const n of [1, 2, 3, 4]) await unprepared.executeSql(text, [n]);
  t.equal(await named(unprepared), 0, 'with preparedStatements off, never named');
});

t.test('a worker listens on the listen URL, is woken by NOTIFY, and again after its LISTEN connection is cut', async (t) => {
  const listen = await relay();
  const boss: PgBoss = await startBoss(url, { role: 'worker', listenUrl: listen.url, preparedStatements: true, poolSize: 2 });
  let stopped = false;
  t.teardown(() => (stopped ? undefined : boss.stop({ graceful: false })));

  const waiting = new Map<number, () => void>();
  // Polling every 30 s: a job handled within seconds was announced by NOTIFY.
  await boss.work<{ sent_at: number }>('ping', { pollingIntervalSeconds: 30, notifyPollingIntervalSeconds: 30 }, async ([job]) => {
    waiting.get(job!.data.sent_at)?.();
  });
  const pickup = async (): Promise<number> => {
    const sentAt = Date.now();
    const handled = new Promise<void>((resolve) => waiting.set(sentAt, resolve));
    await sendJob(boss, 'ping', { sent_at: sentAt });
    await Promise.race([handled, new Promise((_, reject) => setTimeout(() => reject(new Error('ping not handled in 20 s')), 20_000))]);
    return Date.now() - sentAt;
  };
  const listening = async (not?: number) => (await sessions('pgboss-listen')).find((s) => /^listen /i.test(s.query) && s.pid !== not);

  const first = await eventually(() => listening(), 'the pgboss-listen session');
  t.equal(listen.opened(), 1, 'the LISTEN connection went through the listen URL, and nothing else did');
  t.ok((await sessions('pgboss')).length >= 1, 'pg-boss statements run on its pool, on the other URL');
  const before = await pickup();
  t.ok(before < 5_000, `a new job woke the worker in ${before} ms (its poll is every 30 s)`);

  listen.cut();
  await eventually(() => listening(first.pid), 'a new pgboss-listen session', 15_000);
  t.pass('the cut LISTEN connection was replaced');
  t.equal(listen.opened(), 2, 'through the listen URL again');
  const after = await pickup();
  t.ok(after < 5_000, `after the cut, a new job woke the worker in ${after} ms`);

  await boss.stop({ graceful: false });
  stopped = true;
  // A backend leaves pg_stat_activity a moment after its client says goodbye.
  await eventually(async () => ((await sessions('pgboss')).length === 0 ? true : undefined), 'the pool\'s sessions to end');
  t.pass('stop() closed the pool');
  await eventually(async () => ((await sessions('pgboss-listen')).length === 0 ? true : undefined), 'the LISTEN session to end');
  t.pass('and the LISTEN connection');
});
