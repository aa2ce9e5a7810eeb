// The SNAP adapter's pure parts: amounts both ways, the responseCode verdicts, the status tables,
// X-EXTERNAL-ID, token lifetimes, Kasir's answers to notifies, and the BI code table against
// the banks master data it copies.
import t from 'tap';
import { z } from 'zod';
import { createPool, sql } from '../../db/pool.ts';
import { BI_CODES, biCodeOf } from '../../gateways/snap/banks.ts';
import { expiresInSecondsOf, externalIdFor, randomExternalId } from '../../gateways/snap/client.ts';
import {
  fromNotify,
  fromQueried,
  fromSnapAmount,
  fromTransferStatus,
  jakartaTimestamp,
  parseResponseCode,
  snapAnswer,
  toSnapAmount,
  toQrisStatus,
  toTransferStatus,
  verdictOf,
} from '../../gateways/snap/transforms.ts';
import { testDatabase } from '../helpers/db.ts';

t.test('amounts: whole rupiah out with two decimals; back only without a fraction', async (t) => {
  t.same(toSnapAmount(150_000), { value: '150000.00', currency: 'IDR' });
  t.same(toSnapAmount(0), { value: '0.00', currency: 'IDR' });
  for (const bad of [1.5, -1, Number.NaN, 2 ** 60]) t.throws(() => toSnapAmount(bad), `${bad} is not sent`);
  t.equal(fromSnapAmount({ value: '150000.00', currency: 'IDR' }), 150_000);
  t.equal(fromSnapAmount({ value: '150000', currency: 'IDR' }), 150_000, 'no decimals at all');
  t.equal(fromSnapAmount({ value: '150000.0', currency: 'IDR' }), 150_000);
  for (const bad of [
    { value: '150000.50', currency: 'IDR' },
    { value: '150000.01', currency: 'IDR' },
    { value: '150000.005', currency: 'IDR' },
    { value: '1,500.00', currency: 'IDR' },
    { value: '-5.00', currency: 'IDR' },
    { value: 150000, currency: 'IDR' },
    { value: '150000.00', currency: 'USD' },
    { value: '150000.00' },
    null,
    '150000.00',
  ]) {
    t.equal(fromSnapAmount(bad), null, `${JSON.stringify(bad)} is refused, never rounded`);
  }
});

t.test('X-TIMESTAMP is Jakarta time with +07:00', async (t) => {
  t.equal(jakartaTimestamp(new Date('2026-01-31T20:15:30.456Z')), '2026-02-01T03:15:30+07:00');
});

t.test('responseCode: HTTP + service + case, and what each answer means', async (t) => {
  t.same(parseResponseCode('4011801'), { http: 401, service: '18', case: '01' });
  t.equal(parseResponseCode('200470'), null);
  t.equal(parseResponseCode(2004700), null);
  const ok = { responseCode: '2004700', responseMessage: 'Successful' };
  t.match(verdictOf(200, ok), { kind: 'success', http: 200 });
  t.match(verdictOf(202, { responseCode: '2021800', responseMessage: 'Request In Progress' }), { kind: 'success', http: 202 });
  t.match(verdictOf(400, { responseCode: '4004702', responseMessage: 'Invalid Mandatory Field merchantId' }), { kind: 'refused', http: 400, case: '02', reason: 'HTTP 400 4004702 Invalid Mandatory Field merchantId' });
  t.match(verdictOf(403, { responseCode: '4031814', responseMessage: 'Insufficient Funds' }), { kind: 'refused', http: 403, case: '14' });
  t.match(verdictOf(400, { responseCode: '4041801' }), { kind: 'refused', http: 404, case: '01' }, 'one HTTP status for every refusal: the responseCode is finer');
  t.match(verdictOf(200, { responseCode: '4041801' }), { kind: 'refused', http: 404 }, 'a refusal in a 200');
  t.match(verdictOf(409, { responseCode: '4091800', responseMessage: 'Conflict' }), { kind: 'duplicate', case: '00' });
  t.match(verdictOf(409, { responseCode: '4091801', responseMessage: 'Duplicate partnerReferenceNo' }), { kind: 'duplicate', case: '01' });
  t.match(verdictOf(409, undefined), { kind: 'duplicate' });
  t.match(verdictOf(401, undefined), { kind: 'refused', http: 401, case: null });
  for (const [status, body] of [
    [500, { responseCode: '5001800', responseMessage: 'General Error' }],
    [504, { responseCode: '5041800', responseMessage: 'Timeout' }],
    [200, { responseCode: '5001801' }],
    [502, undefined],
    [200, undefined],
    [200, { responseCode: 'OK' }],
    [400, { responseCode: '2001800' }],
    [302, undefined],
  ] as const) {
    t.equal(verdictOf(status, body).kind, 'unknown', `HTTP ${status} ${JSON.stringify(body)}`);
  }
});

t.test('status tables: anything unlisted is still in progress', async (t) => {
  t.same(['00', '01', '02', '03', '04', '05', '06', '07', '08', '09', '99', undefined].map(toQrisStatus), ['PAID', 'PENDING', 'PENDING', 'PENDING', 'PAID', 'EXPIRED', 'EXPIRED', 'NOT_FOUND', 'EXPIRED', 'EXPIRED', 'PENDING', 'PENDING']);
  t.same(['00', '01', '02', '03', '04', '05', '06', '07', '08', '09', '99'].map(toTransferStatus), ['SUCCESS', 'PROCESSING', 'PROCESSING', 'PROCESSING', 'FAILED', 'FAILED', 'FAILED', 'NOT_FOUND', 'FAILED', 'FAILED', 'PROCESSING']);
  t.equal(fromQueried({ originalPartnerReferenceNo: 'OTHER', latestTransactionStatus: '00' }, 'ORD-1'), null, 'another reference');
  t.equal(fromQueried({ latestTransactionStatus: '00', amount: { value: '10.50', currency: 'IDR' } }, 'ORD-1'), null, 'a fractional amount');
  const now = new Date('2026-01-01T00:00:00Z');
  t.same(fromQueried({ latestTransactionStatus: '00', originalReferenceNo: 'A1' }, 'ORD-1', now), { status: 'PAID', vendorOrderId: 'A1', qrisString: null, paidAt: now, rrn: null, amount: null }, 'no paidTime: when Kasir learned it; no amount: none shown');
  t.match(fromQueried({ latestTransactionStatus: '00', originalReferenceNo: 'A1', amount: { value: '5000.00', currency: 'IDR' } }, 'ORD-1', now), { status: 'PAID', amount: 5000 }, 'the amount the query shows paid');
  t.match(fromTransferStatus({ latestTransactionStatus: '06', transactionStatusDesc: 'Account closed' }, 'DSB-1'), { status: 'FAILED', failureReason: '06 Account closed' });
});

t.test('notify bodies: what makes one, and a fraction never becomes rupiah', async (t) => {
  const body = { originalReferenceNo: 'A1', originalPartnerReferenceNo: 'ORD-1', latestTransactionStatus: '00', amount: { value: '5000.00', currency: 'IDR' } };
  t.match(fromNotify(body), { reference: 'ORD-1', amount: 5000, rrn: null });
  t.equal(fromNotify({ ...body, amount: { value: '5000.10', currency: 'IDR' } }), null);
  // Finpay marks originalPartnerReferenceNo optional and Netzme sends none (S-V9): the provider's id is the key.
  t.match(fromNotify({ ...body, originalPartnerReferenceNo: undefined }), { vendorOrderId: 'A1', reference: null, amount: 5000 });
  t.equal(fromNotify({ ...body, originalReferenceNo: undefined }), null, 'originalReferenceNo is the mandatory key');
  // A notify other than 00 (Finpay 00-07, NICEPAY's example 05): a status, no payment, no amount needed.
  t.same(fromNotify({ originalReferenceNo: 'A1', latestTransactionStatus: '05', transactionStatusDesc: 'Canceled' }), { status: '05', vendorOrderId: 'A1', reference: null, description: 'Canceled' });
  t.equal(fromNotify([body]), null);
});

t.test("Kasir's SNAP answers to a notify, per case", async (t) => {
  const notify = '/v1.0/qr/qr-mpm-notify';
  t.same(snapAnswer(notify, 'accepted'), { status: 200, body: { responseCode: '2005200', responseMessage: 'Successful' } });
  t.same(snapAnswer(notify, 'duplicate'), { status: 200, body: { responseCode: '2005200', responseMessage: 'Successful' } });
  t.same(snapAnswer(notify, 'bad_signature'), { status: 401, body: { responseCode: '4015200', responseMessage: 'Unauthorized. Invalid Signature' } });
  t.same(snapAnswer(notify, 'invalid_body'), { status: 400, body: { responseCode: '4005202', responseMessage: 'Invalid Mandatory Field' } });
  t.same(snapAnswer(notify, 'unknown_reference'), { status: 404, body: { responseCode: '4045201', responseMessage: 'Transaction Not Found' } });
  t.same(snapAnswer(notify, 'amount_mismatch'), { status: 404, body: { responseCode: '4045213', responseMessage: 'Invalid Amount' } });
  t.same(snapAnswer('/v1.0/somewhere', 'accepted'), { status: 404, body: { responseCode: '4040002', responseMessage: 'Invalid Routing' } });
});

t.test('X-EXTERNAL-ID: 32 digits, the Jakarta day first; the same for a repeated create that day', async (t) => {
  const at = new Date('2026-03-04T18:00:00Z'); // 01:00 on 5 March in Jakarta
  const id = externalIdFor('P1', 'transfer-interbank', 'DSB-1', at);
  t.match(id, /^20260305\d{24}$/);
  t.equal(externalIdFor('P1', 'transfer-interbank', 'DSB-1', new Date('2026-03-05T16:59:59Z')), id, 'same Jakarta day');
  t.not(externalIdFor('P1', 'transfer-interbank', 'DSB-1', new Date('2026-03-05T17:00:00Z')), id, 'the next Jakarta day');
  t.not(externalIdFor('P1', 'transfer-interbank', 'DSB-2', at), id, 'another reference');
  t.not(externalIdFor('P1', 'qr-mpm-generate', 'DSB-1', at), id, 'another operation');
  t.not(externalIdFor('P2', 'transfer-interbank', 'DSB-1', at), id, 'another partner');
  const reads = new Set(Array.from({ length: 1000 }, () => randomExternalId()));
  t.equal(reads.size, 1000, 'reads never repeat');
  for (const r of reads) if (!/^\d{32}$/.test(r)) t.fail(r);
});

t.test('token lifetimes: the standard string, a number, an instant, or the default', async (t) => {
  const now = Date.parse('2026-01-01T00:00:00Z');
  t.equal(expiresInSecondsOf('900', now), 900);
  t.equal(expiresInSecondsOf(600, now), 600);
  t.equal(expiresInSecondsOf('2026-01-01T07:10:00+07:00', now), 600, 'an expiry instant');
  t.equal(expiresInSecondsOf('2026-01-01 00:15:00.452492159 +0000 UTC', now), 900, "Durianpay's expiry instant, in Go's format");
  t.equal(expiresInSecondsOf('soon', now), 900);
  t.equal(expiresInSecondsOf(undefined, now), 900);
});

t.test('the BI code table equals the banks master data', async (t) => {
  const databaseUrl = await testDatabase(t);
  const pool = await createPool(databaseUrl, { size: 1, name: 'test' });
  t.teardown(() => pool.end());
  const banks = await pool.any(sql.type(z.object({ short_code: z.string(), bi_code: z.string() }))`select short_code, bi_code from banks order by short_code`);
  t.same(Object.fromEntries(banks.map((b) => [b.short_code, b.bi_code])), { ...BI_CODES });
  t.equal(biCodeOf('bca'), '014');
  t.equal(biCodeOf('toString'), null, 'only listed banks');
});
