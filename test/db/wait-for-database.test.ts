// A process started before its database can be reached waits for it (db/wait-for-database.ts)
// instead of exiting with a stack trace: a real worker process pointed at a port where nothing
// listens yet, and a TCP relay to the test's Postgres opened on that port while it waits. Given
// up on after DATABASE_WAIT_SECONDS, or at once for a refusal that waiting cannot cure (a wrong
// password), it exits 1 with one log line.
import t from 'tap';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer, connect, type Server } from 'node:net';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../scripts/lib/cluster.ts';
import { testEnv } from '../helpers/config.ts';
import { testDatabase } from '../helpers/db.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const url = await testDatabase(t);

const onPort = (databaseUrl: string, port: number) => {
  const u = new URL(databaseUrl);
  u.host = `127.0.0.1:${port}`;
  return u.toString();
};

/** A Procfile process (the scheduler worker group unless told), its log lines as they come, and its end. */
function startWorker(env: Record<string, string>, entry = ['workers/run.ts', 'scheduler']) {
  const child = spawn(process.execPath, [`${ROOT}${entry[0]}`, ...entry.slice(1)], {
    cwd: ROOT,
    env: { ...process.env, ...testEnv(env.DATABASE_URL, { LOG_LEVEL: 'info', ...env }) },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  const lines: { msg: string }[] = [];
  const waiters = new Set<() => void>();
  createInterface({ input: child.stdout! }).on('line', (line) => {
    lines.push(JSON.parse(line));
    for (const wake of waiters) wake();
  });
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr += d));
  const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  const ready = once(child, 'message');
  /** Resolves with the first log line with this message (the test's timeout is the deadline). */
  const logged = (msg: string) =>
    new Promise<{ msg: string }>((resolve) => {
      const look = () => {
        const line = lines.find((l) => l.msg === msg);
        if (line) {
          waiters.delete(look);
          resolve(line);
        }
      };
      waiters.add(look);
      look();
    });
  return { child, lines, logged, exited, ready, stderr: () => stderr };
}

/** Relays every connection on `port` to the Postgres of `databaseUrl`. */
async function relay(port: number, databaseUrl: string): Promise<Server> {
  const target = new URL(databaseUrl);
  const server = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname);
    client.pipe(upstream).pipe(client);
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  t.teardown(() => new Promise((resolve) => server.close(resolve)));
  return server;
}

t.test('a worker started before the database waits for it, then starts', async (t) => {
  const port = await freePort();
  const worker = startWorker({ DATABASE_URL: onPort(url, port) });
  const waiting = await worker.logged('database unreachable; waiting for it');
  t.match(waiting, { process: 'worker-scheduler', waitSeconds: 60 }, 'it says what it waits for, and how long it will');
  t.equal(worker.child.exitCode, null, 'and is still running');

  const server = await relay(port, url);
  const [message] = (await worker.ready) as [{ ready: boolean; group: string }];
  t.match(message, { ready: true, group: 'scheduler' }, 'once Postgres answers, the group starts');
  const reachable = await worker.logged('database reachable');
  t.ok((reachable as { attempts?: number }).attempts! >= 2, 'after more than one attempt');
  t.equal(worker.lines.filter((l) => l.msg === 'database unreachable; waiting for it').length, 1, 'the wait is logged once, not per attempt');

  worker.child.kill('SIGTERM');
  const [code] = await worker.exited;
  t.equal(code, 0, 'and stops cleanly');
  server.close();
});

t.test('the API waits the same way', async (t) => {
  const port = await freePort();
  const api = startWorker({ DATABASE_URL: onPort(url, port) }, ['api/server.ts']);
  t.match(await api.logged('database unreachable; waiting for it'), { process: 'api' });
  const server = await relay(port, url);
  const [message] = (await api.ready) as [{ listening: boolean }];
  t.match(message, { listening: true }, 'it listens once Postgres answers');
  api.child.kill('SIGTERM');
  t.equal((await api.exited)[0], 0);
  server.close();
});

t.test('a database that stays away: exit 1 after DATABASE_WAIT_SECONDS, one log line, no stack trace', async (t) => {
  const worker = startWorker({ DATABASE_URL: onPort(url, await freePort()), DATABASE_WAIT_SECONDS: '1' });
  const [code] = await worker.exited;
  t.equal(code, 1, 'exits 1 for its supervisor');
  t.ok(worker.lines.some((l) => l.msg === 'database unreachable; waiting for it'), 'it waited first');
  t.ok(worker.lines.some((l) => l.msg === 'database unreachable; exiting'), 'then said why it exits');
  t.notMatch(worker.stderr(), /\n\s+at /, 'no stack trace');
});

t.test('a refusal waiting cannot cure (wrong password) exits at once', async (t) => {
  const wrong = new URL(url);
  wrong.password = 'not-the-password';
  const worker = startWorker({ DATABASE_URL: wrong.toString() });
  const [code] = await worker.exited;
  t.equal(code, 1);
  t.notOk(worker.lines.some((l) => l.msg === 'database unreachable; waiting for it'), 'without waiting its 60 s');
  t.match(worker.lines.find((l) => l.msg === 'database unreachable; exiting'), { err: { code: '28P01' } }, 'the log names the refusal');
});
