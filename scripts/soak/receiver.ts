// The merchant's webhook endpoint, in the soak's own process (so the chaos never takes it
// down): records every delivery by its webhook-id (the delivery id, the same on every retry),
// checks the X-Signature of each against the merchant's secret, and answers 200.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Receiver {
  url: string;
  /** Deliveries received per webhook-id (more than one: a retry or a redelivery). */
  received: Map<string, number>;
  /** webhook-ids whose X-Signature did not match the body. */
  badSignatures: string[];
  /** Requests without a webhook-id. */
  anonymous: number;
  close(): Promise<void>;
}

export async function startReceiver(secret: string): Promise<Receiver> {
  const received = new Map<string, number>();
  const badSignatures: string[] = [];
  let anonymous = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const id = req.headers['webhook-id'];
      if (typeof id !== 'string') anonymous++;
      else {
        received.set(id, (received.get(id) ?? 0) + 1);
        if (!signedBy(secret, body, req.headers['x-signature'])) badSignatures.push(id);
      }
      res.statusCode = 200;
      res.end();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/webhooks`,
    received,
    badSignatures,
    get anonymous() {
      return anonymous;
    },
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}

function signedBy(secret: string, body: Buffer, header: string | string[] | undefined): boolean {
  if (typeof header !== 'string') return false;
  const expected = Buffer.from(`sha256=${createHmac('sha256', secret).update(body).digest('hex')}`);
  const given = Buffer.from(header);
  return given.length === expected.length && timingSafeEqual(given, expected);
}
