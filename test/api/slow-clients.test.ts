// Slow clients against the real API entry (api/server.ts, as the Procfile runs it), on
// 127.0.0.1 only: a body or headers trickled a byte at a time, and a connection that sends
// nothing, are cut off by REQUEST_TIMEOUT_MS / HEADERS_TIMEOUT_MS (set low here) with a 408;
// past MAX_CONNECTIONS new sockets are closed at accept. Every client here is bounded in the
// bytes it sends and in how long it waits; nothing sleeps.
import t from 'tap';
import { connect, type Socket } from 'node:net';
import { call, eventually } from '../helpers/http.ts';
import { testEnv } from '../helpers/config.ts';
import { testDatabase } from '../helpers/db.ts';
import { startProcess } from '../helpers/processes.ts';

const databaseUrl = await testDatabase(t);
const [slow, capped] = await Promise.all([
  startProcess(t, 'api/server.ts', [], testEnv(databaseUrl, { HEADERS_TIMEOUT_MS: '500', REQUEST_TIMEOUT_MS: '1000' })),
  startProcess(t, 'api/server.ts', [], testEnv(databaseUrl, { MAX_CONNECTIONS: '3', DB_POOL_SIZE: '2' })),
]);

const TRICKLE_MS = 100;
/** A client gives up on the server after this long; before the fix it held the socket ~5 min. */
const GIVE_UP_MS = 10_000;

interface Exchange {
  /** What the server wrote before the socket closed. */
  answer: string;
  elapsedMs: number;
  /** Bytes the client trickled before the server closed the socket. */
  trickled: number;
  /** False when the client gave up first. */
  closedByServer: boolean;
}

/**
 * Opens a socket to `port`, writes `head`, then one byte of `drip` every TRICKLE_MS until the
 * server closes the socket or GIVE_UP_MS passes.
 */
function trickle(port: number, head: string, drip: string | null): Promise<Exchange> {
  return new Promise((resolve) => {
    const started = performance.now();
    const socket = connect(port, '127.0.0.1');
    let answer = '';
    let trickled = 0;
    let timer: NodeJS.Timeout | undefined;
    const giveUp = setTimeout(() => finish(false), GIVE_UP_MS);
    function finish(closedByServer: boolean) {
      clearInterval(timer);
      clearTimeout(giveUp);
      socket.destroy();
      resolve({ answer, elapsedMs: performance.now() - started, trickled, closedByServer });
    }
    socket.on('data', (chunk) => (answer += chunk.toString('latin1')));
    socket.on('error', () => undefined);
    socket.on('close', () => finish(true));
    socket.on('connect', () => {
      if (head) socket.write(head);
      if (drip === null) return;
      timer = setInterval(() => {
        if (!socket.writable) return;
        socket.write(drip);
        trickled += 1;
      }, TRICKLE_MS);
    });
  });
}

t.test('a body trickled a byte at a time is cut off by REQUEST_TIMEOUT_MS with a 408', async (t) => {
  const head = `POST /v1/orders HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{`;
  const res = await trickle(slow.message.port, head, ' ');
  t.ok(res.closedByServer, `the server closed the socket (after ${Math.round(res.elapsedMs)} ms)`);
  t.match(res.answer, /^HTTP\/1\.1 408 /, 'answered 408 Request Timeout');
  t.ok(res.elapsedMs >= 900, `not before the 1000 ms limit (${Math.round(res.elapsedMs)} ms)`);
  t.ok(res.elapsedMs < 3_500, `within the limit plus one timer check (${Math.round(res.elapsedMs)} ms)`);
  t.ok(res.trickled < 35, `${res.trickled} bytes trickled before the cut`);
});

t.test('headers trickled a byte at a time are cut off by HEADERS_TIMEOUT_MS with a 408', async (t) => {
  const res = await trickle(slow.message.port, 'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: ', 'a');
  t.ok(res.closedByServer, `the server closed the socket (after ${Math.round(res.elapsedMs)} ms)`);
  t.match(res.answer, /^HTTP\/1\.1 408 /);
  t.ok(res.elapsedMs >= 400 && res.elapsedMs < 3_000, `near the 500 ms limit (${Math.round(res.elapsedMs)} ms)`);
});

t.test('a connection that sends nothing is closed by HEADERS_TIMEOUT_MS', async (t) => {
  const res = await trickle(slow.message.port, '', null);
  t.ok(res.closedByServer, `the server closed the socket (after ${Math.round(res.elapsedMs)} ms)`);
  t.ok(res.elapsedMs < 3_000, `within the headers limit plus one timer check (${Math.round(res.elapsedMs)} ms)`);
});

t.test('a prompt client is unaffected by the short limits', async (t) => {
  const res = await call(`http://127.0.0.1:${slow.message.port}`, { path: '/healthz' });
  t.equal(res.status, 200);
});

/** A keep-alive socket that has had one answer, so the server has surely counted it. */
function heldConnection(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n'));
    socket.once('data', () => resolve(socket));
    socket.once('error', reject);
    socket.once('close', () => reject(new Error('closed before it was answered')));
  });
}

t.test('past MAX_CONNECTIONS new sockets are closed at accept, and accepted again once one closes', async (t) => {
  const port = capped.message.port;
  const held: Socket[] = [];
  t.teardown(() => held.forEach((s) => s.destroy()));
  for (let i = 0; i < 3; i += 1) held.push(await heldConnection(port));

  const refused = await trickle(port, 'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n', null);
  t.ok(refused.closedByServer, `the fourth socket was closed (after ${Math.round(refused.elapsedMs)} ms)`);
  t.equal(refused.answer, '', 'with no answer at all');

  held.pop()!.destroy();
  const healthy = await eventually(async () => {
    const res = await call(`http://127.0.0.1:${port}`, { path: '/healthz' }).catch(() => null);
    return res?.status === 200 ? res : undefined;
  }, 'a new connection to be served once a held one closed', 5_000);
  t.equal(healthy.status, 200);
});
