// The ceiling of the webhooks bench: a Node process POSTing the very bodies Kasir delivered in
// the same run, to the same receiver, as fast as it can. The least a webhook sender on this
// machine costs: node:http with one keep-alive agent, `CONCURRENCY` requests in flight, each with
// the headers Kasir sends (signed afresh per request the same way), nothing recorded anywhere.
//
//   DATABASE_URL=… MERCHANT_ID=… WEBHOOK_SECRET=… CONCURRENCY=100 node scripts/bench/webhook-ceiling.ts
//
// It reads the merchant's deliveries (url, event, body) first, then sends {ready}; on {cmd:
// 'run'} it POSTs them all and answers {reply: 'run', sent, non2xx, errors, elapsed_ms}.
import { Agent, request } from 'node:http';
import pg from 'pg';
import { signBody, standardWebhooksSignature } from '../../db/signatures.ts';

const client = new pg.Client({ connectionString: process.env.DATABASE_URL });
await client.connect();
const { rows } = await client.query<{ id: string; url: string; event: string; body: string }>(
  `select id::text, url, event, body from webhook_deliveries where merchant_id = $1 order by created_at`,
  [process.env.MERCHANT_ID],
);
await client.end();

const secret = process.env.WEBHOOK_SECRET || null;
const concurrency = Number(process.env.CONCURRENCY ?? 100);
const agent = new Agent({ keepAlive: true, maxSockets: concurrency });

function post(d: (typeof rows)[number]): Promise<number> {
  const url = new URL(d.url);
  const timestamp = Math.floor(Date.now() / 1000);
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': 'Kasir-Webhooks/1.0',
    'x-kasir-event': d.event,
    'webhook-id': d.id,
    'webhook-timestamp': String(timestamp),
    'content-length': String(Buffer.byteLength(d.body)),
  };
  if (secret) {
    headers['x-signature'] = signBody(secret, d.body);
    headers['webhook-signature'] = standardWebhooksSignature(secret, d.id, timestamp, d.body);
  }
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, path: url.pathname + url.search, method: 'POST', agent, headers }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end(d.body);
  });
}

async function run() {
  let next = 0;
  let non2xx = 0;
  let errors = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < rows.length) {
        const d = rows[next++];
        try {
          const status = await post(d);
          if (status < 200 || status >= 300) non2xx++;
        } catch {
          errors++;
        }
      }
    }),
  );
  return { sent: rows.length, non2xx, errors, elapsed_ms: Math.round(performance.now() - started) };
}

process.on('message', (m: { cmd: string }) => {
  if (m.cmd === 'run') void run().then((r) => process.send?.({ reply: 'run', ...r }));
});
process.on('disconnect', () => process.exit(0));
process.on('SIGTERM', () => process.exit(0));
process.send?.({ ready: true, deliveries: rows.length });
