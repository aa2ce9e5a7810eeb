// The vendor transport (gateways/http.ts) against real local servers: calls to one vendor reuse a
// keep-alive connection, a GET carries its body (Iris's statement), and a call without an answer
// is `failed` only when it surely never reached the vendor.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import t from 'tap';
import { vendorCall } from '../../gateways/http.ts';

const log = pino({ level: 'silent' });

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const bodyOf = (req: IncomingMessage) =>
  new Promise<string>((resolve) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
  });

t.test('calls to one vendor share a keep-alive connection; a GET carries its JSON body', async (t) => {
  let connections = 0;
  const seen: Array<{ method: string; body: string }> = [];
  const server = createServer(async (req, res) => {
    seen.push({ method: req.method ?? '', body: await bodyOf(req) });
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ n: seen.length }));
  });
  server.on('connection', () => connections++);
  const url = await listen(server);
  for (let i = 1; i <= 5; i++) {
    const answer = await vendorCall(log, { method: 'POST', url: `${url}/qr_codes`, body: JSON.stringify({ i }), headers: { 'content-type': 'application/json' }, timeoutMs: 2000 });
    t.same(answer, { kind: 'ok', value: { status: 200, body: { n: i } } });
  }
  const statement = await vendorCall(log, { method: 'GET', url: `${url}/statements`, body: JSON.stringify({ from_date: '2026-11-28', to_date: '2026-11-28' }), timeoutMs: 2000 });
  t.equal(statement.kind, 'ok');
  t.same(seen.at(-1), { method: 'GET', body: '{"from_date":"2026-11-28","to_date":"2026-11-28"}' }, 'the GET arrived with its body');
  t.equal(connections, 1, 'six calls, one connection');
});

t.test('an answer that is not JSON is read as no body, with its status', async (t) => {
  const url = await listen(createServer((req, res) => void res.writeHead(502).end('<html>bad gateway</html>')));
  t.same(await vendorCall(log, { method: 'GET', url: `${url}/x`, timeoutMs: 2000 }), { kind: 'ok', value: { status: 502, body: undefined } });
});

t.test('no answer: failed only when the request surely never reached the vendor', async (t) => {
  // Nobody listening: refused before anything was sent.
  const closed = createServer();
  const closedUrl = await listen(closed);
  await new Promise<void>((resolve) => closed.close(() => resolve()));
  t.match(await vendorCall(log, { method: 'POST', url: `${closedUrl}/payouts`, body: '{}', timeoutMs: 2000 }), { kind: 'failed', reason: /ECONNREFUSED/ });

  // Connected and sent, then silence: the vendor may be working on it.
  const silent = createServer(() => undefined);
  const silentUrl = await listen(silent);
  t.teardown(() => silent.closeAllConnections());
  t.match(await vendorCall(log, { method: 'POST', url: `${silentUrl}/payouts`, body: '{}', timeoutMs: 300 }), { kind: 'unknown', reason: /ETIMEDOUT/ });

  // Read, then the connection cut without an answer.
  const cut = createServer(async (req) => {
    await bodyOf(req);
    req.socket.destroy();
  });
  const cutUrl = await listen(cut);
  t.match(await vendorCall(log, { method: 'POST', url: `${cutUrl}/payouts`, body: '{}', timeoutMs: 2000 }), { kind: 'unknown', reason: /ECONNRESET/ });
});
