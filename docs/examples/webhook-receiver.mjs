// A merchant's webhook receiver for Kasir, in Express: the smallest one that is right.
//
//   KASIR_WEBHOOK_SECRET=… PORT=8080 node webhook-receiver.mjs
//
// - It keeps the raw body (express.raw): the signature is over the exact bytes Kasir sent, and
//   a JSON parser would change them before they are checked.
// - It checks X-Signature (sha256=<hex HMAC-SHA256 of the body, keyed with the secret string as
//   given>) in constant time, and answers 401 when it is missing or wrong.
// - It deduplicates on webhook-id: Kasir delivers at least once, so a retry of a delivery you
//   already handled must change nothing. (Keep the ids in your database; a Set is enough here.)
// - It answers 2xx quickly and does the work afterwards: Kasir waits 10 s at most, then retries.
// Each verified event is printed as one JSON line: {"id", "event", "body"}.
import crypto from 'node:crypto';
import express from 'express';

const secret = process.env.KASIR_WEBHOOK_SECRET;
if (!secret) throw new Error('KASIR_WEBHOOK_SECRET is required');

const seen = new Set();
const app = express();

app.post('/kasir/webhooks', express.raw({ type: () => true, limit: '1mb' }), (req, res) => {
  const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
  const expected = Buffer.from(`sha256=${crypto.createHmac('sha256', secret).update(body).digest('hex')}`);
  const given = Buffer.from(req.get('x-signature') ?? '');
  if (given.length !== expected.length || !crypto.timingSafeEqual(given, expected)) return res.sendStatus(401);

  const id = req.get('webhook-id');
  res.sendStatus(200);
  if (!id || seen.has(id)) return; // a retry of a delivery already handled
  seen.add(id);
  const payload = JSON.parse(body.toString('utf8'));
  process.stdout.write(`${JSON.stringify({ id, event: req.get('x-kasir-event'), body: payload })}\n`);
});

const server = app.listen(Number(process.env.PORT ?? 8080), process.env.HOST ?? '127.0.0.1', () => {
  process.stdout.write(`listening on ${server.address().port}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
