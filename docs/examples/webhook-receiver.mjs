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
// - It logs every refusal on stderr with its reason (`refused webhook <id>: <reason>`): a
//   receiver silent on a 401 leaves a wrong secret or a skewed clock to guesswork.
// - It tells samples from real events: a sample (ops webhooks:trigger, POST
//   /v1/webhook-deliveries/samples) has `"sample": true` in its body and is never acted on.
// Each verified event is printed as one JSON line: {"id", "event", "sample", "body"}.
import crypto from 'node:crypto';
import express from 'express';

const secret = process.env.KASIR_WEBHOOK_SECRET;
if (!secret) throw new Error('KASIR_WEBHOOK_SECRET is required');
// Standard Webhooks keys: a whsec_ secret is base64 of the key; any other secret is the key's bytes.
const key = secret.startsWith('whsec_') ? Buffer.from(secret.slice(6), 'base64') : Buffer.from(secret, 'utf8');
const TOLERANCE_SECONDS = 5 * 60;

/**
 * Why the request is refused, or null when webhook-signature signs this id, timestamp and body
 * and the timestamp is recent.
 */
function refusal(req, body) {
  const id = req.get('webhook-id');
  const timestamp = req.get('webhook-timestamp');
  const signatures = req.get('webhook-signature');
  if (!id || !timestamp || !signatures || !/^\d+$/.test(timestamp)) return 'missing webhook-id, webhook-timestamp or webhook-signature';
  if (Math.abs(Date.now() / 1000 - Number(timestamp)) > TOLERANCE_SECONDS) return `stale timestamp ${timestamp} (more than 5 minutes from now)`;
  const expected = crypto.createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest();
  // The header may carry several signatures separated by spaces (v1,<base64> each).
  const signed = signatures.split(' ').some((entry) => {
    const [version, value] = entry.split(',');
    const given = Buffer.from(value ?? '', 'base64');
    return version === 'v1' && given.length === expected.length && crypto.timingSafeEqual(given, expected);
  });
  return signed ? null : 'bad signature (is KASIR_WEBHOOK_SECRET the merchant\'s webhook secret?)';
}

const seen = new Set();
const app = express();

app.post('/kasir/webhooks', express.raw({ type: () => true, limit: '1mb' }), (req, res) => {
  const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
  const refused = refusal(req, body);
  if (refused) {
    process.stderr.write(`refused webhook ${req.get('webhook-id') ?? '-'}: ${refused}\n`);
    return res.sendStatus(401);
  }

  const id = req.get('webhook-id');
  res.sendStatus(200);
  if (seen.has(id)) return; // a retry of a delivery already handled
  seen.add(id);
  const payload = JSON.parse(body.toString('utf8'));
  // A sample is verified like any delivery but names no real resource: print it marked, act on nothing.
  const sample = payload.sample === true;
  process.stdout.write(`${JSON.stringify({ id, event: req.get('x-kasir-event'), sample, body: payload })}\n`);
  if (sample) return;
  // Here a real event's work starts (mark the order paid, release the goods...).
});

const server = app.listen(Number(process.env.PORT ?? 8080), process.env.HOST ?? '127.0.0.1', () => {
  process.stdout.write(`listening on ${server.address().port}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
