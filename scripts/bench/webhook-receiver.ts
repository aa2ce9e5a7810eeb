// The merchants' webhook receivers of the webhooks bench, in one process: one HTTP server per
// destination, each on its own port (a destination is a URL's origin, so each port is a
// merchant's endpoint as Kasir sees it). A server answers in one of three ways:
//   ok     200 at once (a fast receiver)
//   hang   reads the request and never answers (Kasir's timeout ends it)
//   fail   500 at once
// Every request is recorded on arrival: its webhook-id and, from the body's event_created_at,
// its lag (arrival minus the event's time; both clocks are this machine's).
//
//   node scripts/bench/webhook-receiver.ts        (driven over IPC by scripts/bench/webhooks.ts)
//
// IPC requests, each answered with {reply, ...}:
//   {cmd: 'listen', modes: ['ok', 'hang', ...]}  → {ports}
//   {cmd: 'report', reset?: true}                → {ports: {[port]: {requests, ids, duplicates, lags, first_ms, last_ms}}}
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';

type Mode = 'ok' | 'hang' | 'fail';

interface Tally {
  requests: number;
  seen: Map<string, number>;
  lags: number[];
  first: number | null;
  last: number | null;
}

const tallies = new Map<number, Tally>();
const servers: ReturnType<typeof createServer>[] = [];

const fresh = (): Tally => ({ requests: 0, seen: new Map(), lags: [], first: null, last: null });

function handler(mode: Mode, tally: () => Tally) {
  return (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const now = Date.now();
      const t = tally();
      t.requests++;
      t.first ??= now;
      t.last = now;
      const id = String(req.headers['webhook-id'] ?? '');
      const times = (t.seen.get(id) ?? 0) + 1;
      t.seen.set(id, times);
      if (times === 1) {
        const at = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { event_created_at?: string }).event_created_at;
        if (at) t.lags.push(now - Date.parse(at));
      }
      if (mode === 'hang') return; // no answer: the sender's timeout ends it
      res.writeHead(mode === 'ok' ? 200 : 500, { 'content-type': 'text/plain', 'content-length': '2' });
      res.end('ok');
    });
  };
}

async function listen(modes: Mode[]): Promise<number[]> {
  const ports: number[] = [];
  for (const mode of modes) {
    let port = 0;
    const server = createServer({ keepAliveTimeout: 65_000, requestTimeout: 0 }, handler(mode, () => tallies.get(port)!));
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as { port: number }).port;
    tallies.set(port, fresh());
    ports.push(port);
  }
  return ports;
}

function report(reset: boolean) {
  const out: Record<string, unknown> = {};
  for (const [port, t] of tallies) {
    let duplicates = 0;
    for (const n of t.seen.values()) duplicates += n - 1;
    out[port] = { requests: t.requests, ids: t.seen.size, duplicates, lags: t.lags, first_ms: t.first, last_ms: t.last };
    if (reset) tallies.set(port, fresh());
  }
  return out;
}

process.on('message', (m: { cmd: string; modes?: Mode[]; reset?: boolean }) => {
  void (async () => {
    if (m.cmd === 'listen') process.send?.({ reply: 'listen', ports: await listen(m.modes ?? ['ok']) });
    else if (m.cmd === 'report') process.send?.({ reply: 'report', ports: report(Boolean(m.reset)) });
  })();
});

function stop() {
  for (const s of servers) {
    s.close();
    s.closeAllConnections();
  }
  process.exit(0);
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
process.on('disconnect', stop);
process.send?.({ ready: true });
