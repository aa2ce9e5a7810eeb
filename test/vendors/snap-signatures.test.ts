// SNAP BI signatures checked against an independent computation: openssl (dgst -sha256 -sign,
// dgst -sha512 -hmac, dgst -sha256 -verify) run as a child process, never the adapter's own
// helpers. Covers the string-to-sign formulas, the published self-check vector, what the adapter
// actually puts on the wire (captured by a plain HTTP server), and notify verification.
import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { createSnapGateway } from '../../gateways/snap/connector.ts';
import { hmacSign, rsaSign, snapCredentials } from '../../gateways/snap/client.ts';
import { minifyJson, notifyStringToSign, serviceStringToSign, tokenStringToSign } from '../../gateways/snap/transforms.ts';
import { SNAP_ACCOUNT, snapKeyFiles, snapVendor } from '../helpers/snap.ts';

const files = snapKeyFiles();

/** `openssl dgst <args>` over `input`, output as given by openssl. */
function openssl(args: string[], input: string | Buffer): Buffer {
  return execFileSync('openssl', ['dgst', ...args], { input });
}
const sha256Hex = (text: string) => openssl(['-sha256', '-hex', '-r'], text).toString().split(' ')[0];
const hmacSha512Base64 = (key: string, text: string) => openssl(['-sha512', '-hmac', key, '-binary'], text).toString('base64');
const rsaSha256Base64 = (keyFile: string, text: string) => openssl(['-sha256', '-sign', keyFile], text).toString('base64');
function rsaVerifies(publicKeyFile: string, text: string, signatureBase64: string): boolean {
  const sigFile = `${files.dir}/sig-${Math.random().toString(36).slice(2)}.bin`;
  writeFileSync(sigFile, Buffer.from(signatureBase64, 'base64'));
  try {
    execFileSync('openssl', ['dgst', '-sha256', '-verify', publicKeyFile, '-signature', sigFile], { input: text, stdio: 'pipe' });
    return true;
  } catch {
    return false;
  }
}

t.test('the published self-check vector (CONTRACTS.md 3.2), recomputed with openssl', async (t) => {
  const body = '{"partnerReferenceNo":"INV001","amount":{"value":"10000.00","currency":"IDR"},"merchantId":"M001","validityPeriod":"2024-01-01T10:15:00+07:00"}';
  const hash = sha256Hex(body);
  t.equal(hash, '2523e354b417d15305c01cb7253c397a225b8436534f48af2df0eb40c67c532c');
  const text = serviceStringToSign('post', '/v1.0/qr/qr-mpm-generate', 'TOKEN123', hash, '2024-01-01T10:00:00+07:00');
  t.equal(text, `POST:/v1.0/qr/qr-mpm-generate:TOKEN123:${hash}:2024-01-01T10:00:00+07:00`);
  const expected = 'vdTP7spesmag8G3rl2HTFl4/FJSFifDmSO9CreGcHcaRh/OMafyRoLpzbBevc0SvF3ruBEXk9sn/DTi5uSG8cg==';
  t.equal(hmacSha512Base64('CLIENTSECRET', text), expected, 'openssl agrees with the vector');
  t.equal(hmacSign('CLIENTSECRET', text), expected, 'and so does the adapter');
  const pretty = JSON.stringify(JSON.parse(body), null, 2);
  t.equal(sha256Hex(minifyJson(pretty)), hash, 'a pretty-printed body minifies to the same hash');
  t.equal(minifyJson('{ "a" : "x y\\" z" ,\n "b":[1, 2] }'), '{"a":"x y\\" z","b":[1,2]}', 'spaces inside strings, escaped quotes kept');
});

t.test('the B2B token signature is openssl dgst -sha256 -sign of clientKey|timestamp', async (t) => {
  const creds = snapCredentials(snapVendor('http://127.0.0.1:9'));
  const text = tokenStringToSign(SNAP_ACCOUNT.clientKey, '2026-02-03T10:11:12+07:00');
  t.equal(text, `${SNAP_ACCOUNT.clientKey}|2026-02-03T10:11:12+07:00`);
  const ours = rsaSign(creds.privateKey, text);
  t.equal(ours, rsaSha256Base64(files.kasirPrivate, text), 'PKCS#1 v1.5 is deterministic: byte-identical');
  t.ok(rsaVerifies(files.kasirPublic, text, ours), 'openssl verifies it with the public key');
  t.notOk(rsaVerifies(files.kasirPublic, `${text}x`, ours), 'and not over another text');
});

interface Captured {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** A plain server standing in for a provider: issues a token, answers a query, records everything. */
async function captureServer(t: { teardown(fn: () => unknown): void }) {
  const captured: Captured[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      captured.push({ path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      res.setHeader('content-type', 'application/json');
      if (req.url?.endsWith('/access-token/b2b')) {
        res.end(JSON.stringify({ responseCode: '2007300', responseMessage: 'Successful', accessToken: 'TOKEN-abc.123', tokenType: 'Bearer', expiresIn: '900' }));
      } else {
        res.statusCode = 404;
        res.end(JSON.stringify({ responseCode: '4045101', responseMessage: 'Transaction Not Found' }));
      }
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.teardown(() => new Promise((resolve) => server.close(resolve)));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, captured };
}

t.test('what the adapter sends: token request and service call, each checked with openssl', async (t) => {
  const provider = await captureServer(t);
  // A provider path prefix, as DOKU and others have: the signed EndpointUrl includes it.
  const vendor = { ...snapVendor(provider.url, {}, 'snap-wire'), baseUrl: `${provider.url}/snap-adapter/b2b` };
  const gateway = createSnapGateway(vendor, { timeoutMs: 2000 });
  t.match(await gateway.queryQris('ORD-1-WIRE', 'A1WIRE0001'), { kind: 'ok', value: { status: 'NOT_FOUND' } });
  t.equal(provider.captured.length, 2, 'one token request, one query');
  const [token, query] = provider.captured;

  t.equal(token.path, '/snap-adapter/b2b/v1.0/access-token/b2b');
  t.equal(token.headers['x-client-key'], SNAP_ACCOUNT.clientKey);
  const ts = String(token.headers['x-timestamp']);
  t.match(ts, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+07:00$/, 'X-TIMESTAMP in ISO 8601 with +07:00');
  t.ok(Math.abs(Date.parse(ts) - Date.now()) < 10_000, 'and it is now');
  t.ok(rsaVerifies(files.kasirPublic, `${SNAP_ACCOUNT.clientKey}|${ts}`, String(token.headers['x-signature'])), 'token X-SIGNATURE verifies with openssl');
  t.same(JSON.parse(token.body), { grantType: 'client_credentials' });

  t.equal(query.path, '/snap-adapter/b2b/v1.0/qr/qr-mpm-query');
  t.equal(query.headers.authorization, 'Bearer TOKEN-abc.123');
  t.equal(query.headers['x-partner-id'], SNAP_ACCOUNT.partnerId);
  t.equal(query.headers['channel-id'], SNAP_ACCOUNT.channelId);
  t.match(String(query.headers['x-external-id']), /^\d{32}$/, 'X-EXTERNAL-ID numeric, at most 36');
  t.same(JSON.parse(query.body), { originalReferenceNo: 'A1WIRE0001', originalPartnerReferenceNo: 'ORD-1-WIRE', serviceCode: '47', merchantId: SNAP_ACCOUNT.merchantId }, 'originalReferenceNo, the key PJPs mark mandatory');
  const text = `POST:/snap-adapter/b2b/v1.0/qr/qr-mpm-query:TOKEN-abc.123:${sha256Hex(query.body)}:${String(query.headers['x-timestamp'])}`;
  t.equal(query.headers['x-signature'], hmacSha512Base64(SNAP_ACCOUNT.clientSecret, text), 'X-SIGNATURE is openssl dgst -sha512 -hmac over the full path');
});

t.test('notify verification: openssl-signed notifies pass, anything else is refused', async (t) => {
  const gateway = createSnapGateway(snapVendor('http://127.0.0.1:9', {}, 'snap-n'));
  const body = JSON.stringify({
    originalReferenceNo: 'A120260101ABCDEF',
    originalPartnerReferenceNo: 'ORD-1700000000-ABC',
    latestTransactionStatus: '00',
    transactionStatusDesc: 'Success',
    amount: { value: '150000.00', currency: 'IDR' },
    additionalInfo: { rrn: '123456789012', paidTime: '2026-01-01T10:00:05+07:00' },
  });
  const ts = new Date(Date.now() + 7 * 3600_000).toISOString().slice(0, 19) + '+07:00';
  const notify = (path: string, b = body, timestamp = ts) => ({
    'content-type': 'application/json',
    'x-timestamp': timestamp,
    'x-signature': rsaSha256Base64(files.providerPrivate, notifyStringToSign(path, sha256Hex(minifyJson(b)), timestamp)),
  });
  const sub = '/v1.0/qr/qr-mpm-notify';
  t.equal(notifyStringToSign(sub, 'ab', ts), `POST:${sub}:ab:${ts}`);

  const event = await gateway.parseCallback(notify(sub), Buffer.from(body), sub);
  t.match(event, { type: 'qris.paid', reference: 'ORD-1700000000-ABC', vendorOrderId: 'A120260101ABCDEF', amount: 150_000, rrn: '123456789012', eventId: 'snap:A120260101ABCDEF:00' });
  t.equal((event as { paidAt: Date }).paidAt.toISOString(), '2026-01-01T03:00:05.000Z');
  t.ok(await gateway.parseCallback(notify(`/callbacks/snap-n${sub}`), Buffer.from(body), sub), 'signed over the full path of Kasir URL (DOKU style)');
  const pretty = JSON.stringify(JSON.parse(body), null, 2);
  t.ok(await gateway.parseCallback(notify(sub), Buffer.from(pretty), sub), 'a pretty-printed body: its minified hash is what was signed');

  t.equal(await gateway.parseCallback(notify(sub), Buffer.from(body.replace('150000.00', '1500000.00')), sub), null, 'a changed body');
  t.equal(await gateway.parseCallback(notify('/v1.0/other'), Buffer.from(body), sub), null, 'signed for another path');
  t.equal(await gateway.parseCallback(notify(sub), Buffer.from(body), '/v1.0/other'), null, 'posted to another path');
  t.equal(await gateway.parseCallback(notify(sub), Buffer.from(body)), null, 'no sub-path (a route that does not pass it)');
  const stale = new Date(Date.now() - 10 * 60_000 + 7 * 3600_000).toISOString().slice(0, 19) + '+07:00';
  t.equal(await gateway.parseCallback(notify(sub, body, stale), Buffer.from(body), sub), null, 'a timestamp 10 minutes old');
  const kasirSigned = { ...notify(sub), 'x-signature': rsaSha256Base64(files.kasirPrivate, notifyStringToSign(sub, sha256Hex(body), ts)) };
  t.equal(await gateway.parseCallback(kasirSigned, Buffer.from(body), sub), null, 'signed by another key');
  const fractional = body.replace('150000.00', '150000.50');
  t.equal(await gateway.parseCallback(notify(sub, fractional), Buffer.from(fractional), sub), null, 'a fractional amount is refused, never rounded');
});

t.test('HMAC notifies carry a token Kasir issued; openssl computes the same signature', async (t) => {
  const gateway = createSnapGateway(snapVendor('http://127.0.0.1:9', { notifySignature: 'hmac' }, 'snap-h'));
  const ts = new Date(Date.now() + 7 * 3600_000).toISOString().slice(0, 19) + '+07:00';
  // The provider first asks Kasir for a token, signing clientKey|timestamp with its own key.
  const tokenAnswer = gateway.answerRequest!(
    '/v1.0/access-token/b2b',
    { 'x-timestamp': ts, 'x-client-key': SNAP_ACCOUNT.clientKey, 'x-signature': rsaSha256Base64(files.providerPrivate, `${SNAP_ACCOUNT.clientKey}|${ts}`) },
    Buffer.from('{"grantType":"client_credentials"}'),
  );
  t.match(tokenAnswer, { status: 200, body: { responseCode: '2007300', tokenType: 'Bearer', expiresIn: '900' } });
  const token = (tokenAnswer!.body as { accessToken: string }).accessToken;
  const forged = gateway.answerRequest!(
    '/v1.0/access-token/b2b',
    { 'x-timestamp': ts, 'x-client-key': SNAP_ACCOUNT.clientKey, 'x-signature': rsaSha256Base64(files.kasirPrivate, `${SNAP_ACCOUNT.clientKey}|${ts}`) },
    Buffer.from('{"grantType":"client_credentials"}'),
  );
  t.match(forged, { status: 401, body: { responseCode: '4017300' } }, 'a token request not signed by the provider');

  const body = '{"originalReferenceNo":"A1X","originalPartnerReferenceNo":"ORD-9","latestTransactionStatus":"00","amount":{"value":"25000.00","currency":"IDR"}}';
  const sub = '/v1.0/qr/qr-mpm-notify';
  const sign = (tok: string) => hmacSha512Base64(SNAP_ACCOUNT.clientSecret, `POST:/callbacks/snap-h${sub}:${tok}:${sha256Hex(body)}:${ts}`);
  const headers = (tok: string) => ({ 'x-timestamp': ts, authorization: `Bearer ${tok}`, 'x-signature': sign(tok) });
  t.match(await gateway.parseCallback(headers(token), Buffer.from(body), sub), { type: 'qris.paid', reference: 'ORD-9', amount: 25_000 });
  t.equal(await gateway.parseCallback(headers('made-up-token'), Buffer.from(body), sub), null, 'a token Kasir never issued');
  const rsaOnly = createSnapGateway(snapVendor('http://127.0.0.1:9', {}, 'snap-h'));
  t.equal(await rsaOnly.parseCallback(headers(token), Buffer.from(body), sub), null, 'an RSA vendor does not take HMAC notifies');
});
