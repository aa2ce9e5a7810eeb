// Issue 36, "an unclear answer never pays twice": the adapters against local fakes written from
// the vendors' documents (../shared/vendors/CONFORMANCE.md F1, F2, F4), for the answers the
// simulator's dialects do not give. Each fake records what it was sent, so the tests also see the
// idempotency headers.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import type { DisburseInput } from '../../gateways/gateway.ts';
import { createMidtransGateway } from '../../gateways/midtrans/connector.ts';
import { createXenditGateway } from '../../gateways/xendit/connector.ts';
import { midtransVendor } from '../helpers/midtrans.ts';
import { xenditVendor } from '../helpers/xendit.ts';

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: Record<string, unknown> | null;
}

/** A bare HTTP fake: `answer` gets each request (body parsed) and answers it, or leaves it hanging. */
async function fake(t: { teardown(fn: () => void): void }, answer: (seen: Seen, res: ServerResponse) => void) {
  const seen: Seen[] = [];
  const server = createServer(async (req, res) => {
    // Recorded on arrival: a request Kasir gives up on is still seen.
    const one: Seen = { method: req.method!, url: req.url!, headers: req.headers, body: null };
    seen.push(one);
    let raw = '';
    for await (const chunk of req) raw += chunk;
    one.body = raw ? (JSON.parse(raw) as Record<string, unknown>) : null;
    res.setHeader('content-type', 'application/json');
    answer(one, res);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.teardown(() => {
    server.closeAllConnections();
    server.close();
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

const json = (res: ServerResponse, status: number, body: unknown) => void res.writeHead(status).end(JSON.stringify(body));

t.test('Midtrans refund (F1): a refusal of a re-send is never failed; the status decides, else an operator', async (t) => {
  // POST #1 hangs past Kasir's timeout and takes the refund in flight; the status lists nothing
  // until `listed`; a re-send answers 412 (the first took the amount) or 406 (the key is used).
  let listed = false;
  let resendAnswer = '412';
  const order = 'ORD-UA-1';
  const refund = { reference: order, vendorOrderId: 'trx-1', refundReference: 'RFD-UA-1', amount: 10_000 };
  const server = await fake(t, (seen, res) => {
    if (seen.method === 'POST' && seen.url === `/midtrans/v2/${order}/refund`) {
      const posts = server.seen.filter((s) => s.method === 'POST').length;
      if (posts === 1) return; // held: Kasir times out
      return json(res, 200, resendAnswer === '412' ? { status_code: '412', status_message: 'Refund amount exceeds the refundable amount' } : { status_code: '406', status_message: 'refund_key has already been used' });
    }
    if (seen.url === `/midtrans/v2/${order}/status`) {
      return json(res, 200, {
        status_code: '200', order_id: order, transaction_id: 'trx-1', gross_amount: '10000.00', transaction_status: listed ? 'refund' : 'settlement',
        ...(listed ? { refunds: [{ refund_chargeback_id: 77, refund_amount: '10000.00', refund_key: 'RFD-UA-1' }] } : {}),
      });
    }
    json(res, 404, { status_code: '404', status_message: 'not here' });
  });
  const gateway = createMidtransGateway(midtransVendor(server.url, { iris: false }), { timeoutMs: 1000 });

  t.match(await gateway.refund(refund), { kind: 'unknown' }, 'POST #1 unanswered');
  t.equal(server.seen[0].headers['idempotency-key'], 'RFD-UA-1', 'the documented Idempotency-Key header, Kasir\'s refund reference');
  t.match(await gateway.queryRefund({ ...refund, vendorRefundId: null, firstSentAt: new Date() }), { kind: 'ok', value: { status: 'NOT_FOUND' } }, 'in flight: not listed');
  const refused = await gateway.refund({ ...refund, resent: true });
  t.match(refused, { kind: 'unknown', unresolvable: true, reason: /412.*lists no refund/ }, '412 after a re-send: never failed, an operator settles it');
  t.equal(server.seen.at(-2)!.headers['idempotency-key'], 'RFD-UA-1', 'the re-send carries the same key');
  resendAnswer = '406';
  t.match(await gateway.refund({ ...refund, resent: true }), { kind: 'unknown', unresolvable: true, reason: /406/ }, '406 (key used): never failed');
  t.match(await gateway.refund(refund), { kind: 'unknown', unresolvable: true, reason: /406/ }, '406 on any send: Midtrans holds a refund under the key');
  listed = true;
  t.match(await gateway.refund({ ...refund, resent: true }), { kind: 'ok', value: { status: 'SUCCEEDED', vendorRefundId: '77' } }, 'once listed, the refusal is read as that refund');
  // Control: a 412 on a first send is Midtrans refusing a refund it never took.
  resendAnswer = '412';
  t.match(await gateway.refund({ ...refund, refundReference: 'RFD-UA-2' }), { kind: 'failed', reason: /412/ });
});

const payout = (reference: string): DisburseInput => ({
  reference, channel: 'BANK', bankCode: 'BCA', ewalletCode: null, accountNumber: '1234567890', accountName: 'Budi Santoso', amount: 50_000, callbackUrl: 'http://127.0.0.1:9/unused',
});

t.test('Iris create (F2): unclear answers are recovered with the same X-Idempotency-Key or left to an operator, never failed over', async (t) => {
  // The fake: account validation names the holder; creates per `mode`; a key seen before
  // answers its first result (docs.midtrans.com Payouts API headers).
  let mode: 'processed' | 'late' | 'silent' | 'error' | 'garbled' = 'processed';
  const byKey = new Map<string, unknown>();
  let made = 0;
  const server = await fake(t, (seen, res) => {
    if (seen.url.startsWith('/api/v1/account_validation')) return json(res, 200, { account_name: 'Budi Santoso', account_no: '1234567890', bank_name: 'bca' });
    if (seen.method === 'POST' && seen.url === '/api/v1/payouts') {
      const key = String(seen.headers['x-idempotency-key']);
      if (mode === 'silent') {
        if (!byKey.has(key)) byKey.set(key, { payouts: [{ status: 'completed', reference_no: `r${++made}` }] });
        return; // made, and no answer ever reaches Kasir
      }
      if (byKey.has(key)) return json(res, 201, byKey.get(key));
      if (mode === 'error') return json(res, 500, { error_message: 'down' });
      const answer = { payouts: [{ status: mode === 'processed' ? 'processed' : 'completed', reference_no: `r${++made}` }] };
      byKey.set(key, answer);
      if (mode === 'late') return; // made, answered after Kasir's timeout: never
      if (mode === 'garbled') return void res.writeHead(201).end('{"payouts":[{"sta');
      return json(res, 201, answer);
    }
    if (seen.url === '/api/v1/payouts/approve') return json(res, 400, { error_message: 'only queued payouts can be approved' });
    json(res, 404, { error_message: 'not here' });
  });
  const gateway = createMidtransGateway(midtransVendor('http://127.0.0.1:9', { overrides: { irisBaseUrl: server.url, irisApproverTotpSecret: '' } }), { timeoutMs: 1000 });
  const posts = () => server.seen.filter((s) => s.url === '/api/v1/payouts');

  t.match(await gateway.disburse(payout('DSB-UA-1')), { kind: 'ok', value: { vendorDisbursementId: 'r1' } }, 'created `processed`: taken, nothing to approve');
  t.equal(posts()[0].headers['x-idempotency-key'], 'DSB-UA-1');
  t.notOk(server.seen.some((s) => s.url === '/api/v1/payouts/approve'), 'a processed payout is not approved again');
  mode = 'late';
  t.match(await gateway.disburse(payout('DSB-UA-2')), { kind: 'ok', value: { vendorDisbursementId: 'r2' } }, 'made, its answer lost: the re-send with the same key recovers it');
  t.same(posts().filter((s) => s.headers['x-idempotency-key'] === 'DSB-UA-2').length, 2, 're-sent once, with the same key');
  mode = 'silent';
  t.match(await gateway.disburse(payout('DSB-UA-5')), { kind: 'unknown', unresolvable: true }, 'no answer twice: an operator, never the next vendor');
  mode = 'garbled';
  t.match(await gateway.disburse(payout('DSB-UA-3')), { kind: 'ok', value: { vendorDisbursementId: 'r4' } }, 'an unreadable 201: the same key answers the first result');
  mode = 'error';
  t.match(await gateway.disburse(payout('DSB-UA-4')), { kind: 'unknown', unresolvable: true, reason: /500/ }, '5xx twice: unresolvable, never failed');
  t.equal(made, 4, 'no payout made twice');
});

t.test('Xendit payout (F4): any 409 is "already received": read back, never failed over', async (t) => {
  let listed = false;
  const server = await fake(t, (seen, res) => {
    if (seen.method === 'POST' && seen.url === '/xendit/v2/payouts') return json(res, 409, { error_code: 'IDEMPOTENCY_KEY_IN_PROGRESS', message: 'in progress' });
    if (seen.url.startsWith('/xendit/v2/payouts?')) {
      return json(res, 200, { data: listed ? [{ id: 'disb-1', reference_id: 'DSB-UA-9', status: 'ACCEPTED', amount: 10_000, channel_code: 'ID_BCA' }] : [], has_more: false });
    }
    json(res, 404, { error_code: 'DATA_NOT_FOUND', message: 'no' });
  });
  const gateway = createXenditGateway(xenditVendor(server.url, 'xnd-409'));
  t.match(await gateway.disburse(payout('DSB-UA-9')), { kind: 'unknown', unresolvable: true, reason: /duplicate \(HTTP 409\)/ }, 'not yet listed: an operator, never the next vendor');
  listed = true;
  t.match(await gateway.disburse(payout('DSB-UA-9')), { kind: 'ok', value: { vendorDisbursementId: 'disb-1' } }, 'listed: that payout');
});
