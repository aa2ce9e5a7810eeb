// One merchant's broken endpoint does not hold back other merchants' webhooks: the webhook
// worker limits the requests in flight to each destination, and a request that hangs holds
// only its own place, not a batch of other merchants' deliveries. Real worker process, real
// receivers; the broken merchant's deliveries are queued first, so they are at the head of the
// queue when the worker starts on them.
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { enqueueWebhooks } from '../../db/webhooks.ts';
import { PER_DESTINATION } from '../../workers/webhook-dispatch.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { startStack } from '../helpers/stack.ts';

// The timeout the hanging receiver runs into; far above the bound the fast merchant is held to.
const stack = await startStack(t, { groups: ['webhook'], env: { WEBHOOK_TIMEOUT_MS: '10000' } });

interface Receiver {
  url: string;
  /** webhook-id → arrival time (ms since the epoch). */
  arrived: Map<string, number>;
  /** The most requests it held open at once. */
  maxOpen: number;
  close(): Promise<void>;
}

/** A receiver that answers 200, answers 500, or reads the request and never answers. */
async function receiver(answer: 200 | 500 | 'hang'): Promise<Receiver> {
  let open = 0;
  const r: Receiver = { url: '', arrived: new Map(), maxOpen: 0, close: async () => undefined };
  const server: Server = createServer((req, res) => {
    open++;
    r.maxOpen = Math.max(r.maxOpen, open);
    res.on('close', () => open--);
    req.resume();
    req.on('end', () => {
      r.arrived.set(String(req.headers['webhook-id']), Date.now());
      if (answer !== 'hang') res.writeHead(answer).end();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  r.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  r.close = async () => {
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeAllConnections();
    await closed;
  };
  t.teardown(() => r.close());
  return r;
}

/** `count` order.paid deliveries to the merchant's default URL, queued in one transaction. */
async function queue(merchantId: string, count: number): Promise<string[]> {
  const { pool, boss } = stack.api.ctx;
  return pool.transaction((tx) =>
    enqueueWebhooks(
      tx,
      boss,
      Array.from({ length: count }, (_, i) => ({ merchantId, orderId: null, event: 'order.paid', url: null, body: { event: 'order.paid', n: i } })),
    ),
  );
}

/** Resolves when every id has arrived, or rejects after `ms`. */
async function allArrive(r: Receiver, ids: string[], ms: number): Promise<number> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (ids.every((id) => r.arrived.has(id))) return Math.max(...ids.map((id) => r.arrived.get(id)!));
    if (Date.now() > deadline) throw new Error(`${ids.filter((id) => r.arrived.has(id)).length} of ${ids.length} arrived within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

for (const broken of ['hang', 500] as const) {
  t.test(`a merchant whose endpoint ${broken === 'hang' ? 'hangs until the timeout' : 'answers 500'} does not hold back another's`, async (t) => {
    const slow = await receiver(broken);
    const fast = await receiver(200);
    const slowMerchant = await makeMerchant(stack.api.ctx, { notifyUrl: slow.url });
    const fastMerchant = await makeMerchant(stack.api.ctx, { notifyUrl: fast.url });

    await queue(slowMerchant.merchant_id, 300);
    const started = Date.now();
    const fastIds = await queue(fastMerchant.merchant_id, 100);
    const last = await allArrive(fast, fastIds, 5_000);
    t.comment(`the fast merchant's 100 webhooks arrived within ${last - started} ms, behind 300 to a receiver that ${broken === 'hang' ? 'hangs' : 'fails'}`);
    t.ok(last - started < 5_000, 'the fast merchant got all its webhooks well within the 10 s a hanging request takes');
    t.ok(slow.arrived.size > 0, 'the broken receiver was tried meanwhile');
    t.ok(slow.maxOpen <= PER_DESTINATION, `the broken receiver never held more than ${PER_DESTINATION} requests at once (held ${slow.maxOpen})`);
  });
}
