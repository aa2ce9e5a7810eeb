// A merchant's webhook receiver for Kasir, in Express: the smallest one that is right.
//
//   KASIR_WEBHOOK_SECRET=… PORT=8080 node webhook-receiver.mjs
//
// - It keeps the raw body (express.raw): the signature is over the exact bytes Kasir sent, and
//   a JSON parser would change them before they are checked.
// - It verifies the Standard Webhooks signature (webhook-signature: v1,<base64 HMAC-SHA256 of
//   "<webhook-id>.<webhook-timestamp>.<body>">) in constant time, and refuses a timestamp more
//   than 5 minutes from now: the id and the time are signed with the body, so a captured webhook
//   can neither be sent again later nor under another id. 401 when anything is off.
//   (X-Signature signs the body alone: it cannot tell a replay from a delivery. docs/webhooks.md)
// - It deduplicates on webhook-id, which the signature covers: Kasir delivers at least once, so a
//   retry of a delivery you already handled must change nothing. (Keep the ids in your database;
//   a Set is enough here.)
// - It answers 2xx quickly and does the work afterwards: Kasir waits 10 s at most, then retries.
// Each verified event is printed as one JSON line: {"id", "event", "body"}.
import crypto from 'node:crypto';
import express from 'express';

const secret = process.env.KASIR_WEBHOOK_SECRET;
if (!secret) throw new Error('KASIR_WEBHOOK_SECRET is required');
// Standard Webhooks keys: a whsec_ secret is base64 of the key; any other secret is the key's bytes.
const key = secret.startsWith('whsec_') ? Buffer.from(secret.slice(6), 'base64') : Buffer.from(secret, 'utf8');
const TOLERANCE_SECONDS = 5 * 60;

/** True when webhook-signature signs this id, timestamp and body, and the timestamp is recent. */
function verified(req, body) {
  const id = req.get('webhook-id');
  const timestamp = req.get('webhook-timestamp');
  const signatures = req.get('webhook-signature');
  if (!id || !timestamp || !signatures || !/^\d+$/.test(timestamp)) return false;
  if (Math.abs(Date.now() / 1000 - Number(timestamp)) > TOLERANCE_SECONDS) return false;
  const expected = crypto.createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest();
  // The header may carry several signatures separated by spaces (v1,<base64> each).
  return signatures.split(' ').some((entry) => {
    const [version, value] = entry.split(',');
    const given = Buffer.from(value ?? '', 'base64');
    return version === 'v1' && given.length === expected.length && crypto.timingSafeEqual(given, expected);
  });
}

const seen = new Set();
const app = express();

app.post('/kasir/webhooks', express.raw({ type: () => true, limit: '1mb' }), (req, res) => {
  const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
  if (!verified(req, body)) return res.sendStatus(401);

  const id = req.get('webhook-id');
  res.sendStatus(200);
  if (seen.has(id)) return; // a retry of a delivery already handled
  seen.add(id);
  const payload = JSON.parse(body.toString('utf8'));
  process.stdout.write(`${JSON.stringify({ id, event: req.get('x-kasir-event'), body: payload })}\n`);
});

const server = app.listen(Number(process.env.PORT ?? 8080), process.env.HOST ?? '127.0.0.1', () => {
  process.stdout.write(`listening on ${server.address().port}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
