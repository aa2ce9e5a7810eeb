// Midtrans signatures checked against an independent computation: `openssl dgst -sha512` run as a
// child process, never the adapter's helpers. Covers the self-check vectors of CONTRACTS.md, the
// adapter's verification of notifications signed that way (payments and Iris), and refusals:
// a wrong key, a changed byte, a missing signature.
import { execFileSync } from 'node:child_process';
import t from 'tap';
import { createMidtransGateway } from '../../gateways/midtrans/connector.ts';
import { fromMidtransAmount, irisSignature, notificationSignature, sameHex } from '../../gateways/midtrans/transforms.ts';
import { MIDTRANS_ACCOUNT, midtransVendor } from '../helpers/midtrans.ts';

/** Lowercase hex SHA-512 of `input`, by openssl. */
const opensslSha512 = (input: string | Buffer) => execFileSync('openssl', ['dgst', '-sha512', '-r'], { input }).toString().split(' ')[0];

t.test('the payment notification self-check vector (CONTRACTS.md 2.3), recomputed with openssl', async (t) => {
  const expected = 'c56f2b78fe89883fc041ebb52ec65d1218e8ac1ba91fa682e5b71b2f5f33e423ed29a22ba7dd00b6f39eed5cc3d98a17f4c66940d88a7654b253fa92be135f7a';
  t.equal(opensslSha512('order-101' + '200' + '10000.00' + 'SB-Mid-server-EXAMPLEKEY'), expected, 'openssl agrees with the vector');
  t.equal(notificationSignature('order-101', '200', '10000.00', 'SB-Mid-server-EXAMPLEKEY'), expected, 'and so does the adapter');
  t.not(notificationSignature('order-101', '200', '10000', 'SB-Mid-server-EXAMPLEKEY'), expected, 'gross_amount is the string as sent: "10000" is another signature');
});

t.test('the Iris self-check vector (CONTRACTS.md 2.4), recomputed with openssl', async (t) => {
  const body = '{"reference_no":"ref123","amount":"10000.00","status":"completed","updated_at":"2024-01-01T00:00:00Z"}';
  const expected = 'ce36f5a7cd39eeb50a30a0fca9590bb8ce842ede8ed777c563277de71f6ae525f28dd12cb1f6e15c474563b540551adb25eb7830320f052bec99f65ace23a1ab';
  t.equal(opensslSha512(body + 'IRIS-merchant-EXAMPLE'), expected, 'openssl agrees with the vector');
  t.equal(irisSignature(Buffer.from(body), 'IRIS-merchant-EXAMPLE'), expected, 'and so does the adapter, over the raw bytes');
  const spaced = body.replace(',', ', ');
  t.not(irisSignature(Buffer.from(spaced), 'IRIS-merchant-EXAMPLE'), expected, 'the same JSON with one more space is another signature');
});

t.test('constant-time comparison: case-insensitive hex, refuses other lengths and non-hex', async (t) => {
  const digest = opensslSha512('x');
  t.ok(sameHex(digest, digest.toUpperCase()));
  t.notOk(sameHex(digest, digest.slice(1)));
  t.notOk(sameHex(digest, `${digest.slice(0, -1)}z`));
  t.notOk(sameHex(digest, undefined));
});

t.test('amounts: whole rupiah from strings, never floats', async (t) => {
  t.equal(fromMidtransAmount('150000.00'), 150_000);
  t.equal(fromMidtransAmount('10000'), 10_000);
  t.equal(fromMidtransAmount('10000.0'), 10_000);
  t.equal(fromMidtransAmount('10000.50'), null, 'a fraction is refused, not rounded');
  t.equal(fromMidtransAmount('-1.00'), null);
  t.equal(fromMidtransAmount(10000), null, 'a number is not what Midtrans sends');
  t.equal(fromMidtransAmount('1e5'), null);
});

t.test("the adapter's parseCallback accepts notifications signed as openssl signs them, and only those", async (t) => {
  // Nothing listens on port 9: the status re-read fails. An authentic notification is then
  // retry_later (answered 503: Midtrans sends it again), never acted on by its own body; a
  // forged one is null (401).
  const gateway = createMidtransGateway(midtransVendor('http://127.0.0.1:9'), { timeoutMs: 500 });
  const payment = (fields: Record<string, string>, key = MIDTRANS_ACCOUNT.serverKey) => {
    const signature = opensslSha512(fields.order_id + fields.status_code + fields.gross_amount + key);
    return Buffer.from(JSON.stringify({ ...fields, signature_key: signature }));
  };
  const settled = {
    transaction_time: '2026-01-02 10:00:00',
    transaction_status: 'settlement',
    transaction_id: 'f1e2d3c4-0000-4000-8000-000000000001',
    status_code: '200',
    settlement_time: '2026-01-02 10:01:00',
    payment_type: 'qris',
    order_id: 'ORD-SIG-1',
    gross_amount: '25000.00',
    currency: 'IDR',
  };
  const event = await gateway.parseCallback({ 'content-type': 'application/json' }, payment(settled), '');
  t.match(event, { type: 'retry_later', reference: 'ORD-SIG-1', reason: /status re-read/ }, 'authentic; acted on only once the status can be re-read');
  t.equal(await gateway.parseCallback({}, payment(settled, 'SB-Mid-server-another-key'), ''), null, 'signed with another server key');
  const tampered = JSON.parse(payment(settled).toString());
  tampered.gross_amount = '2500000.00';
  t.equal(await gateway.parseCallback({}, Buffer.from(JSON.stringify(tampered)), ''), null, 'an amount changed after signing');
  const { signature_key: _, ...unsigned } = JSON.parse(payment(settled).toString());
  t.equal(await gateway.parseCallback({}, Buffer.from(JSON.stringify(unsigned)), ''), null, 'no signature_key');

  const pending = await gateway.parseCallback({}, payment({ ...settled, transaction_status: 'pending', status_code: '201' }), '');
  t.match(pending, { type: 'retry_later', reference: 'ORD-SIG-1' }, 'a pending notification is authentic too: its status is what the re-read says');

  const iris = '{"reference_no":"abc123","amount":"10000.00","status":"completed","updated_at":"2026-01-02T03:00:00Z"}';
  const irisEvent = await gateway.parseCallback({ 'iris-signature': opensslSha512(iris + MIDTRANS_ACCOUNT.irisMerchantKey) }, Buffer.from(iris), '');
  t.match(irisEvent, { type: 'retry_later', reference: 'abc123' }, 'an authentic Iris notification whose payout cannot be read now: 503, so Iris sends it again');
  const approved = '{"reference_no":"abc123","amount":"10000.00","status":"approved","updated_at":"2026-01-02T03:00:00Z"}';
  t.match(await gateway.parseCallback({ 'iris-signature': opensslSha512(approved + MIDTRANS_ACCOUNT.irisMerchantKey) }, Buffer.from(approved), ''), { type: 'noted', eventId: 'iris:abc123:approved' }, 'approved: noted');
  t.equal(await gateway.parseCallback({ 'iris-signature': opensslSha512(iris + 'IRIS-merchant-other') }, Buffer.from(iris), ''), null, 'Iris, signed with another merchant key');
  t.equal(await gateway.parseCallback({}, payment(settled), '/anything'), null, 'no sub-paths');
});
