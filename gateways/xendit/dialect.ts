// The simulator speaking Xendit, as a test-mode account would, written from
// ../shared/vendors/CONTRACTS.md part 1 and independently of Kasir's adapter
// (gateways/xendit*.ts), so a mistake on one side shows up as a failing test. Mounted at
// /xendit: a vendor's base URL is <simulator>/xendit.
//
// - HTTP Basic with the secret key (SIMULATOR_XENDIT_SECRET_KEY) as user and an empty password.
// - QR Codes (api-version 2022-07-31 required): create DYNAMIC IDR QRs, read one and its
//   payments, refund a payment (PENDING, then a qr.refund callback); the test-mode magic
//   amounts of Xendit's docs (create 10100/10101/10102; refund 20300 fails by callback).
// - QR refunds as strict as Xendit's documentation (help centre article 17209624920345): the body
//   is `amount` (optional: the rest of the payment); nothing else is kept or echoed (no metadata)
//   and no idempotency key is honoured, so every POST is a new refund. A refund is read by its
//   own id (and listed per payment): reads of the xendit-client gem, not Xendit's own pages
//   (docs/vendors/xendit.md, go-live checklist).
// - Payouts v2: Idempotency-key required (xendit-node payout/apis/Payout.ts) and single-use: a
//   reused key is 409 DUPLICATE_ERROR, as Xendit's SDK answers a reused key (xendit-node
//   refund/models/CreateRefund409Response.ts; v2 documents no status). Channel codes checked,
//   holder name required; ACCEPTED, then SUCCEEDED or FAILED by the shared account-number
//   outcomes (docs/simulator.md), with payout.succeeded / payout.failed. A SUCCEEDED payout can
//   later be REVERSED (payout statuses, docs.xendit.co; "Funds have been refunded back to the
//   merchant's available balance", payout webhook page): accounts ending 6666 are, a moment after
//   success, with payout.reversed, and the Transactions list shows the DISBURSEMENT REVERSED.
// - Any 409 on a payout is "already received": accounts ending 4090 are still in progress when
//   the first POST answers 500 SERVER_ERROR (not listed yet), and the re-send meets 409
//   IDEMPOTENCY_KEY_IN_PROGRESS rather than DUPLICATE_ERROR (docs/simulator.md).
// - Callbacks carry x-callback-token (SIMULATOR_XENDIT_CALLBACK_TOKEN) and go to the account's
//   one callback URL (SIMULATOR_XENDIT_CALLBACK_URL), as set in Xendit's dashboard.
// - Faults: the shared rules and X-Sim-Fault, answered in Xendit's error shape (error → 5xx
//   SERVER_ERROR; reject → 4xx, 429 as RATE_LIMIT_EXCEEDED); callback modes apply to callbacks.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { Router, type Request, type RequestHandler, type Response } from 'express';
import { z } from 'zod';
import { buildDynamicQris, QRIS_MAX_AMOUNT } from '../qris.ts';
import { readBody, type DialectContext } from '../simulator/dialect.ts';
import { loopbackOnly } from '../simulator/loopback.ts';
import type { Fault, FaultAnswers, RequestOp } from '../simulator/faults.ts';
import { qrStatus, type DisbursementRecord, type QrRecord } from '../simulator/store.ts';
import { IN_PROGRESS_SUFFIX, REVERSED_AFTER_SUCCESS_SUFFIX } from '../simulator/magic.ts';
import { CHANGED_AMOUNT_DELTA, moneyFault, twinRefund, xenditTransactions } from './report-dialect.ts';

const API_VERSION = '2022-07-31';
const BUSINESS_ID = '5f27a14a9bf05c73dd040bc8';

class XenditError extends Error {
  status: number;
  code: string;
  constructor(status: number, code: string, message: string) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

const errorOf = (status: number, code: string, message: string) => ({ error_code: code, message, status });

/** Fault answers in Xendit's shape. */
const faultAnswers: FaultAnswers = {
  invalid: (message) => new XenditError(400, 'API_VALIDATION_ERROR', message),
  error: () => ({ error_code: 'SERVER_ERROR', message: 'Simulated server error' }),
  reject: (status) => (status === 429 ? { error_code: 'RATE_LIMIT_EXCEEDED', message: 'Rate limit exceeded' } : { error_code: 'API_VALIDATION_ERROR', message: 'Simulated refusal' }),
  rejectStatus: 400,
};

const BANKS = ['ID_BCA', 'ID_MANDIRI', 'ID_BNI', 'ID_BRI', 'ID_CIMB', 'ID_PERMATA', 'ID_BTN', 'ID_DANAMON', 'ID_PANIN', 'ID_MAYBANK', 'ID_BSI', 'ID_OCBC', 'ID_MEGA', 'ID_BTPN', 'ID_SINARMAS', 'ID_UOB', 'ID_MUAMALAT', 'ID_JAGO', 'ID_SEABANK', 'ID_BJB', 'ID_DKI', 'ID_HSBC', 'ID_CITIBANK', 'ID_DBS'];
const EWALLETS = ['ID_DANA', 'ID_OVO', 'ID_GOPAY', 'ID_SHOPEEPAY', 'ID_LINKAJA'];

/** Xendit's failure codes for the shared account-number outcomes. */
const FAILURE_CODES: Record<string, string> = { ACCOUNT_CLOSED: 'INVALID_DESTINATION', INVALID_ACCOUNT: 'INVALID_DESTINATION' };

const createQrBody = z.object({
  reference_id: z.string().min(1).max(255),
  type: z.literal('DYNAMIC'),
  currency: z.literal('IDR'),
  amount: z.number().int().min(1).max(Math.min(QRIS_MAX_AMOUNT, 10_000_000)),
  expires_at: z.iso.datetime({ offset: true }).optional(),
  channel_code: z.string().optional(),
  metadata: z.record(z.string(), z.unknown()).nullish(),
});

/** Only `amount` is documented; other fields are neither kept nor echoed. */
const refundBody = z.object({ amount: z.number().int().min(1).optional() });

const payoutBody = z.object({
  reference_id: z.string().min(1).max(255),
  channel_code: z.string().min(1),
  channel_properties: z.object({ account_number: z.string().min(1).max(64), account_holder_name: z.string().min(1).max(100), account_type: z.string().optional() }),
  amount: z.number().int().min(1),
  currency: z.literal('IDR'),
  description: z.string().max(100).optional(),
  metadata: z.record(z.string(), z.unknown()).nullish(),
});

interface XenditRefund {
  id: string;
  paymentId: string;
  /** The refunded QR's reference (the shared store's key). */
  reference: string;
  paymentAmount: number;
  amount: number;
  status: 'PENDING' | 'SUCCEEDED' | 'FAILED';
  failureCode: string | null;
  created: Date;
  updated: Date;
}

const refundRecord = z.object({
  id: z.string(),
  paymentId: z.string(),
  reference: z.string(),
  paymentAmount: z.number(),
  amount: z.number(),
  status: z.enum(['PENDING', 'SUCCEEDED', 'FAILED']),
  failureCode: z.string().nullable(),
  created: z.coerce.date(),
  updated: z.coerce.date(),
});

function parse<T extends z.ZodType>(schema: T, req: Request): z.output<T> {
  const body = readBody(schema, req);
  if (body.ok) return body.data;
  if (body.notJson) throw new XenditError(400, 'INVALID_JSON_FORMAT', 'The request body is not valid JSON');
  throw new XenditError(400, 'API_VALIDATION_ERROR', `${body.field}: ${body.message}`);
}

/** Stable per QR: the payment of a paid QR is always the same object. */
const paymentIdOf = (qr: QrRecord) => `qrpy_${createHash('sha256').update(qr.id).digest('hex').slice(0, 32)}`;

export function xenditDialect(ctx: DialectContext): Router {
  const cfg = ctx.options.dialects.xendit;
  const log = ctx.logger.child({ dialect: 'xendit' });
  const router = Router();
  // Journaled as xendit.refund (by id) and xendit.payout-key, so a restart keeps them.
  const refunds = new Map<string, XenditRefund>(ctx.journal.loaded('xendit.refund', refundRecord));
  /** Payout idempotency keys taken: a second use is 409 DUPLICATE_ERROR. */
  const payoutKeys = new Set<string>(ctx.journal.loaded('xendit.payout-key', z.literal(true)).map(([key]) => key));
  /** Payouts Xendit reversed after they succeeded (by payout id), journaled as xendit.payout-reversed. */
  const reversed = new Set<string>(ctx.journal.loaded('xendit.payout-reversed', z.literal(true)).map(([id]) => id));
  /** Payouts still being processed (IN_PROGRESS_SUFFIX), by key: not listed until the key comes again. */
  const inProgress = new Map<string, DisbursementRecord>();
  const stats = { calls: {} as Record<string, number>, callbacksAnswered: {} as Record<string, number>, conflicts: {} as Record<string, number> };

  const expectedAuth = Buffer.from(`Basic ${Buffer.from(`${cfg.secretKey}:`).toString('base64')}`);
  const authenticate: RequestHandler = (req, res, next) => {
    const given = Buffer.from(req.get('authorization') ?? '');
    if (given.length !== expectedAuth.length || !timingSafeEqual(given, expectedAuth)) {
      throw new XenditError(401, 'INVALID_API_KEY', 'API key is not authorized for this API service');
    }
    stats.calls[`${req.method} ${req.route?.path ?? req.path}`] = (stats.calls[`${req.method} ${req.route?.path ?? req.path}`] ?? 0) + 1;
    next();
  };
  /**
   * Permissions the account's key was made without (POST /xendit/admin/permissions): their APIs
   * answer 403 REQUEST_FORBIDDEN_ERROR before reading the body, as Xendit does, so a test can
   * take one away and see vendor:check name it (gateways/xendit/permissions.ts).
   */
  const withdrawn = new Set<string>();
  const permitted =
    (permission: string): RequestHandler =>
    (req, res, next) => {
      if (withdrawn.has(permission)) throw new XenditError(403, 'REQUEST_FORBIDDEN_ERROR', `The API key is forbidden to perform this request (${permission})`);
      next();
    };
  const qrVersion: RequestHandler = (req, res, next) => {
    if (req.get('api-version') !== API_VERSION) throw new XenditError(400, 'API_VALIDATION_ERROR', `api-version header must be ${API_VERSION}`);
    next();
  };
  const fault = (op: RequestOp, causesCallback = false) => ctx.inject(op, faultAnswers, causesCallback);

  const findQr = (id: string) => [...ctx.store.qrs.values()].find((qr) => qr.id === id && qr.id.startsWith('qr_'));
  const findPaid = (paymentId: string) => [...ctx.store.qrs.values()].find((qr) => qr.id.startsWith('qr_') && qr.paidAt && paymentIdOf(qr) === paymentId);

  const qrJson = (qr: QrRecord) => ({
    id: qr.id,
    reference_id: qr.reference,
    business_id: BUSINESS_ID,
    type: 'DYNAMIC',
    currency: 'IDR',
    amount: qr.amount,
    channel_code: 'ID_DANA',
    status: qrStatus(qr) === 'PENDING' ? 'ACTIVE' : 'INACTIVE',
    qr_string: qr.qrisString,
    expires_at: qr.expiresAt?.toISOString() ?? null,
    created: qr.createdAt.toISOString(),
    updated: (qr.paidAt ?? qr.createdAt).toISOString(),
    metadata: null,
    description: null,
    basket: null,
  });

  const paymentJson = (qr: QrRecord) => ({
    id: paymentIdOf(qr),
    business_id: BUSINESS_ID,
    currency: 'IDR',
    amount: qr.amount,
    status: 'SUCCEEDED',
    created: qr.paidAt!.toISOString(),
    qr_id: qr.id,
    qr_string: qr.qrisString,
    reference_id: qr.reference,
    type: 'DYNAMIC',
    channel_code: 'ID_DANA',
    expires_at: qr.expiresAt?.toISOString() ?? null,
    description: '',
    basket: null,
    metadata: null,
    payment_detail: { receipt_id: qr.rrn, source: 'DANA', name: null, account_details: null },
  });

  const refundJson = (r: XenditRefund) => ({
    id: r.id,
    qrpy_id: r.paymentId,
    business_id: BUSINESS_ID,
    status: r.status,
    currency: 'IDR',
    payment_amount: r.paymentAmount,
    refund_amount: r.amount,
    channel_code: 'ID_DANA',
    failure_code: r.failureCode,
    created: r.created.toISOString(),
    updated: r.updated.toISOString(),
  });

  const payoutJson = (d: DisbursementRecord) => ({
    id: d.id,
    amount: d.amount,
    channel_code: `ID_${d.bankCode ?? d.ewalletCode}`,
    currency: 'IDR',
    status: d.status === 'PROCESSING' ? 'ACCEPTED' : d.status === 'FAILED' ? 'FAILED' : reversed.has(d.id) ? 'REVERSED' : 'SUCCEEDED',
    ...(d.status === 'FAILED' ? { failure_code: FAILURE_CODES[d.failureReason ?? ''] ?? 'TRANSFER_ERROR' } : {}),
    description: `Payout ${d.reference}`,
    reference_id: d.reference,
    created: d.createdAt.toISOString(),
    updated: d.updatedAt.toISOString(),
    business_id: BUSINESS_ID,
    channel_properties: { account_number: d.accountNumber, account_holder_name: d.accountName },
  });

  /** Posts a callback with the account's verification token to the dashboard's one URL. */
  function callback(event: string, data: Record<string, unknown>, about: Record<string, string>, f: Fault | null, extra: Record<string, unknown> = {}) {
    if (!cfg.callbackUrl) return void log.warn({ event, ...about }, 'no SIMULATOR_XENDIT_CALLBACK_URL set: callback not sent');
    const body = JSON.stringify({ event, ...extra, business_id: BUSINESS_ID, created: new Date().toISOString(), data });
    ctx.sendCallback('xendit', cfg.callbackUrl, body, { dialect: 'xendit', event, ...about }, f);
  }

  ctx.register('xendit', {
    channel: { headers: () => ({ 'x-callback-token': cfg.callbackToken, 'webhook-id': `whk_${randomBytes(8).toString('hex')}` }) },
    paid: (qr, f) => callback('qr.payment', paymentJson(qr), { reference: qr.reference }, f, { api_version: API_VERSION }),
    settled: (d, f) => {
      callback(d.status === 'SUCCESS' ? 'payout.succeeded' : 'payout.failed', payoutJson(d), { reference: d.reference }, f);
      if (d.status === 'SUCCESS' && d.accountNumber.endsWith(REVERSED_AFTER_SUCCESS_SUFFIX)) {
        ctx.deadlines.at('xendit.payout-reverse', d.reference, new Date(Date.now() + ctx.options.disburseDelayMs), f);
      }
    },
  });

  // The bank bounced a delivered payout: REVERSED, the money back in the account's balance.
  ctx.deadlines.on('xendit.payout-reverse', (reference, callbackFault) => {
    const d = ctx.store.disbursements.get(reference);
    if (!d || d.status !== 'SUCCESS' || reversed.has(d.id)) return;
    reversed.add(d.id);
    ctx.journal.put('xendit.payout-reversed', d.id, true);
    d.updatedAt = new Date();
    ctx.store.saveDisbursement(d);
    callback('payout.reversed', payoutJson(d), { reference: d.reference }, callbackFault);
  });

  // Test mode: a refund is PENDING, then final by callback a moment later (20300 fails).
  ctx.deadlines.on('xendit.refund', (id, callbackFault) => {
    const refund = refunds.get(id);
    const qr = refund && ctx.store.qrs.get(refund.reference);
    if (!refund || !qr || refund.status !== 'PENDING') return;
    refund.status = refund.amount === 20300 ? 'FAILED' : 'SUCCEEDED';
    refund.failureCode = refund.status === 'FAILED' ? 'INELIGIBLE_TRANSACTION' : null;
    refund.updated = new Date();
    ctx.journal.put('xendit.refund', refund.id, refund);
    if (refund.status === 'FAILED') {
      qr.refunded -= refund.amount;
      ctx.store.saveQr(qr);
    }
    callback('qr.refund', refundJson(refund), { refund: refund.id }, callbackFault);
  });

  // ---------------------------------------------------------------- QR codes

  router.post('/qr_codes', authenticate, permitted('Money-in: Write'), qrVersion, fault('createQris'), (req, res) => {
    const body = parse(createQrBody, req);
    // Xendit's test-mode magic amounts for QR creation.
    if (body.amount === 10100) throw new XenditError(403, 'CHANNEL_NOT_ACTIVATED', 'QR channel is not activated for this account');
    if (body.amount === 10101) throw new XenditError(503, 'CHANNEL_UNAVAILABLE', 'The payment channel is unavailable');
    if (body.amount === 10102) throw new XenditError(500, 'SERVER_ERROR', 'Server error');
    // The shared store holds one QR per reference; Xendit itself does not promise uniqueness.
    if (ctx.store.qrs.has(body.reference_id)) throw new XenditError(409, 'DUPLICATE_ERROR', 'reference_id already used by a QR code');
    const id = `qr_${randomBytes(12).toString('hex')}`;
    // A dynamic QR without an expiry lives 48 hours.
    const expiresAt = body.expires_at ? new Date(body.expires_at) : new Date(Date.now() + 48 * 3600_000);
    const qr: QrRecord = {
      id,
      reference: body.reference_id,
      amount: body.amount,
      qrisString: buildDynamicQris({
        merchantName: ctx.options.merchantName,
        merchantCity: ctx.options.merchantCity,
        amount: body.amount,
        billNumber: body.reference_id,
        nmid: ctx.options.nmid,
        referenceLabel: id.slice(0, 25),
        terminalLabel: 'XENDIT',
      }),
      expiresAt,
      callbackUrl: cfg.callbackUrl ?? '',
      createdAt: new Date(),
      paidAt: null,
      rrn: null,
      refunded: 0,
      dialect: 'xendit',
    };
    ctx.qrCreated(qr);
    ctx.reply(res, 201, { ...qrJson(qr), qr_string: qr.qrisString });
  });

  router.get('/qr_codes/:id', authenticate, permitted('Money-in: Read'), qrVersion, fault('queryQris'), (req, res) => {
    const qr = findQr(String(req.params.id));
    if (!qr) throw new XenditError(404, 'DATA_NOT_FOUND', 'QR code not found');
    ctx.reply(res, 200, qrJson(qr));
  });

  router.get('/qr_codes/:id/payments', authenticate, permitted('Money-in: Read'), qrVersion, fault('queryQris'), (req, res) => {
    const qr = findQr(String(req.params.id));
    if (!qr) throw new XenditError(404, 'DATA_NOT_FOUND', 'QR code not found');
    ctx.reply(res, 200, { data: qr.paidAt ? [paymentJson(qr)] : [], has_more: false });
  });

  // A read: its faults are the query's, so a refund fault hits the POST that makes one.
  router.get('/qr_codes/payments/:paymentId/refunds', authenticate, permitted('Money-in: Read'), qrVersion, fault('queryQris'), (req, res) => {
    const paymentId = String(req.params.paymentId);
    if (!findPaid(paymentId)) throw new XenditError(404, 'DATA_NOT_FOUND', 'QR payment not found');
    ctx.reply(res, 200, { data: [...refunds.values()].filter((r) => r.paymentId === paymentId).map(refundJson), has_more: false });
  });

  router.get('/qr_codes/payments/:paymentId/refunds/:refundId', authenticate, permitted('Money-in: Read'), qrVersion, fault('queryRefund'), (req, res) => {
    const refund = refunds.get(String(req.params.refundId));
    if (!refund || refund.paymentId !== String(req.params.paymentId)) throw new XenditError(404, 'DATA_NOT_FOUND', 'Refund not found');
    ctx.reply(res, 200, refundJson(refund));
  });

  // Every POST is a new refund: Xendit documents no key or reference to dedupe it by.
  router.post('/qr_codes/payments/:paymentId/refunds', authenticate, permitted('Money-in: Write'), qrVersion, fault('refund', true), (req, res) => {
    const paymentId = String(req.params.paymentId);
    const qr = findPaid(paymentId);
    if (!qr) throw new XenditError(404, 'DATA_NOT_FOUND', 'QR payment not found');
    const body = parse(refundBody, req);
    const taken = [...refunds.values()].filter((r) => r.paymentId === paymentId && r.status !== 'FAILED').reduce((sum, r) => sum + r.amount, 0);
    const amount = body.amount ?? qr.amount - taken;
    if (amount < 1 || taken + amount > qr.amount) throw new XenditError(400, 'MAXIMUM_REFUND_AMOUNT_REACHED', 'Refund amount exceeds the remaining payment amount');
    const now = new Date();
    const refund: XenditRefund = {
      id: `qrrf_${randomBytes(12).toString('hex')}`,
      paymentId,
      reference: qr.reference,
      paymentAmount: qr.amount,
      amount,
      status: 'PENDING',
      failureCode: null,
      created: now,
      updated: now,
    };
    refunds.set(refund.id, refund);
    ctx.journal.put('xendit.refund', refund.id, refund);
    qr.refunded += amount;
    // double_refund: Xendit makes the refund twice (the twin completes like the first).
    const twin = moneyFault(res) === 'double_refund' ? twinRefund(refund) : null;
    if (twin) {
      refunds.set(twin.id, twin);
      ctx.journal.put('xendit.refund', twin.id, twin);
      qr.refunded += twin.amount;
      ctx.deadlines.at('xendit.refund', twin.id, new Date(Date.now() + ctx.options.disburseDelayMs), null);
    }
    ctx.store.saveQr(qr);
    ctx.deadlines.at('xendit.refund', refund.id, new Date(Date.now() + ctx.options.disburseDelayMs), (res.locals.callbackFault as Fault | undefined) ?? null);
    ctx.reply(res, 200, refundJson(refund));
  });

  // ---------------------------------------------------------------- payouts

  router.post('/v2/payouts', authenticate, permitted('Money-out: Write'), fault('disburse', true), (req, res) => {
    const key = req.get('idempotency-key');
    if (!key || key.length > 100) throw new XenditError(400, 'API_VALIDATION_ERROR', 'Idempotency-key header is required (1 to 100 characters)');
    const pending = inProgress.get(key);
    if (pending) {
      // The first request finishes now: listed from here on, settled as usual.
      inProgress.delete(key);
      ctx.disbursementAccepted(pending, null);
      stats.conflicts.IDEMPOTENCY_KEY_IN_PROGRESS = (stats.conflicts.IDEMPOTENCY_KEY_IN_PROGRESS ?? 0) + 1;
      throw new XenditError(409, 'IDEMPOTENCY_KEY_IN_PROGRESS', 'A request with this Idempotency-key is still being processed');
    }
    if (payoutKeys.has(key)) throw new XenditError(409, 'DUPLICATE_ERROR', 'Idempotency key has been used before');
    const body = parse(payoutBody, req);
    const isBank = BANKS.includes(body.channel_code);
    if (!isBank && !EWALLETS.includes(body.channel_code)) throw new XenditError(400, 'CHANNEL_CODE_NOT_SUPPORTED_ERROR', `${body.channel_code} is not supported`);
    payoutKeys.add(key);
    ctx.journal.put('xendit.payout-key', key, true);
    const now = new Date();
    const short = body.channel_code.slice(3);
    const d: DisbursementRecord = {
      id: `disb-${randomBytes(12).toString('hex')}`,
      reference: body.reference_id,
      channel: isBank ? 'BANK' : 'EWALLET',
      bankCode: isBank ? short : null,
      ewalletCode: isBank ? null : short,
      accountNumber: body.channel_properties.account_number,
      accountName: body.channel_properties.account_holder_name,
      amount: body.amount,
      callbackUrl: cfg.callbackUrl ?? '',
      status: 'PROCESSING',
      failureReason: null,
      createdAt: now,
      updatedAt: now,
      dialect: 'xendit',
    };
    // Money faults: paid with another amount, or accepted and lost (never stored, never settled).
    if (moneyFault(res) === 'changed_amount') d.amount += CHANGED_AMOUNT_DELTA;
    if (moneyFault(res) === 'lost_payout') return void ctx.reply(res, 200, payoutJson(d));
    if (d.accountNumber.endsWith(IN_PROGRESS_SUFFIX)) {
      // Taken, but the answer is a 5xx (safe to retry with the same key, Xendit's errors page).
      inProgress.set(key, d);
      throw new XenditError(500, 'SERVER_ERROR', 'Server error');
    }
    ctx.disbursementAccepted(d, (res.locals.callbackFault as Fault | undefined) ?? null);
    ctx.reply(res, 200, payoutJson(d));
  });

  const payouts = () => [...ctx.store.disbursements.values()].filter((d) => d.id.startsWith('disb-'));

  router.get('/v2/payouts', authenticate, permitted('Money-out: Read'), fault('queryDisbursement'), (req, res) => {
    const reference = typeof req.query.reference_id === 'string' ? req.query.reference_id : null;
    if (!reference) throw new XenditError(400, 'API_VALIDATION_ERROR', 'reference_id is required');
    ctx.reply(res, 200, { data: payouts().filter((d) => d.reference === reference).map(payoutJson) } as Record<string, unknown>);
  });

  router.get('/v2/payouts/:id', authenticate, permitted('Money-out: Read'), fault('queryDisbursement'), (req, res) => {
    const d = payouts().find((p) => p.id === req.params.id);
    if (!d) throw new XenditError(404, 'DATA_NOT_FOUND', 'Payout not found');
    ctx.reply(res, 200, payoutJson(d));
  });

  router.get('/balance', authenticate, permitted('Balance: Read'), (req, res) => {
    res.json({ balance: 1_000_000_000 });
  });

  router.post('/admin/permissions', loopbackOnly('Xendit admin'), (req, res) => {
    const parsed = z.object({ withdrawn: z.array(z.string().min(1)).max(20) }).safeParse(JSON.parse((req.body as Buffer).toString('utf8') || '{}'));
    if (!parsed.success) return void res.status(400).json({ error_code: 'API_VALIDATION_ERROR', message: 'withdrawn: a list of permission names' });
    withdrawn.clear();
    for (const permission of parsed.data.withdrawn) withdrawn.add(permission);
    res.json({ withdrawn: [...withdrawn] });
  });

  router.get('/admin/stats', loopbackOnly('Xendit admin'), (req, res) => {
    res.json({ calls: stats.calls, conflicts: stats.conflicts, refunds: [...refunds.values()].map(refundJson) });
  });

  router.use(xenditTransactions(ctx, { refunds, reversed, paymentIdOf, authenticate: [authenticate, permitted('Transaction: Read')] }));

  router.use((req: Request, res: Response) => {
    res.status(404).json(errorOf(404, 'NOT_FOUND', `no route ${req.method} ${req.path}`));
  });
  router.use((err: unknown, req: Request, res: Response, next: (err?: unknown) => void) => {
    if (err instanceof XenditError) return void ctx.reply(res, err.status, { error_code: err.code, message: err.message });
    next(err);
  });
  return router;
}
