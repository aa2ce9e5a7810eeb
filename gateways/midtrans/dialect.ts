// The simulator speaking Midtrans's Core API for QRIS, as the sandbox at api.sandbox.midtrans.com
// would, written from ../shared/vendors/CONTRACTS.md part 2 and independently of Kasir's adapter
// (gateways/midtrans*.ts), so a mistake on one side shows up as a failing test. Mounted at
// /midtrans: a vendor's base URL is <sim>/midtrans.
//
// - Basic auth with SIMULATOR_MIDTRANS_SERVER_KEY as the username: anything else is HTTP 401.
// - POST /v2/charge (payment_type qris), GET /v2/{order_id|transaction_id}/status and
//   POST /v2/{id}/refund (refund_key: a repeat is the same refund) over the shared store, so
//   `simulate:pay` pays a Midtrans QR. A refund is approved at once but is in flight for a while
//   (SIMULATOR_DISBURSE_DELAY_MS, the bank's time; held until POST /midtrans/admin/refund-release
//   after POST /midtrans/admin/refund-hold {count}): the status lists it only once done, and
//   its refund notification comes then. Its amount is no longer refundable from the start, so
//   a re-send of its refund_key while in flight answers 406 "refund_key has already been used",
//   and an amount over what is left 412, as Midtrans answers (issue 36 F1). Business refusals answer HTTP 200 with the code in the
//   body's status_code (406 order_id taken, 412 not refundable), as Midtrans does; a missing
//   transaction is HTTP 404 with status_code "404".
// - Notifications, signed with signature_key, go to the charge's X-Override-Notification URL:
//   pending on charge, settlement on payment, refund/partial_refund on a refund. Callback faults
//   (duplicate, out of order, drop, latency) apply to them.
// - Faults: the shared rules and X-Sim-Fault (error and reject answer in Midtrans's format without
//   doing the work, timeout does it and never answers, bad_qris corrupts qr_string), and
//   POST /midtrans/admin/garble {count}: the next answers are cut-off JSON after doing the work.
import { createHash, randomUUID } from 'node:crypto';
import { Router, type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { z } from 'zod';
import { buildDynamicQris, QRIS_MAX_AMOUNT } from '../qris.ts';
import { readBody, type DialectContext } from '../simulator/dialect.ts';
import { loopbackOnly } from '../simulator/loopback.ts';
import type { Fault, FaultAnswers, RequestOp } from '../simulator/faults.ts';
import { newRrn, qrStatus, refundSchema, type QrRecord, type RefundRecord } from '../simulator/store.ts';

class MidtransError extends Error {
  http: number;
  code: string;
  extra: Record<string, unknown>;
  constructor(http: number, code: string, message: string, extra: Record<string, unknown> = {}) {
    super(message);
    this.http = http;
    this.code = code;
    this.extra = extra;
  }
}

/** Midtrans's answer time: `YYYY-MM-DD HH:mm:ss` in Jakarta, no offset. */
const wib = (at: Date) => new Date(at.getTime() + 7 * 3600_000).toISOString().slice(0, 19).replace('T', ' ');
const money = (rupiah: number) => `${rupiah}.00`;
const sha512 = (value: string) => createHash('sha512').update(value).digest('hex');

const chargeBody = z.object({
  payment_type: z.literal('qris'),
  transaction_details: z.object({
    order_id: z.string().regex(/^[A-Za-z0-9._~-]{1,50}$/),
    gross_amount: z.number().int().min(1).max(QRIS_MAX_AMOUNT),
  }),
  qris: z.object({ acquirer: z.enum(['gopay', 'airpay shopee']).optional() }).optional(),
  custom_expiry: z
    .object({
      order_time: z.string().regex(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} [+-]\d{4}$/).optional(),
      expiry_duration: z.union([z.number().int().min(1), z.string().regex(/^\d+$/)]),
      unit: z.enum(['second', 'minute', 'hour', 'day']).default('minute'),
    })
    .optional(),
  item_details: z.array(z.unknown()).optional(),
  customer_details: z.record(z.string(), z.unknown()).optional(),
});
const refundBody = z.object({
  refund_key: z.string().regex(/^[A-Za-z0-9_-]{1,50}$/).optional(),
  amount: z.number().int().min(1).optional(),
  reason: z.string().max(255).optional(),
});

const UNIT_MS = { second: 1000, minute: 60_000, hour: 3_600_000, day: 86_400_000 } as const;

/** A refund at Midtrans; `doneAt`: when it stops being in flight (null: held until released). */
type ChargeRefund = RefundRecord & { chargebackId: number; doneAt?: Date | null };

interface Charge {
  transactionId: string;
  acquirer: string;
  notifyUrl: string | null;
  refunds: ChargeRefund[];
}

const chargeRecord = z.object({
  transactionId: z.string(),
  acquirer: z.string(),
  notifyUrl: z.string().nullable(),
  refunds: z.array(refundSchema.extend({ chargebackId: z.number().int(), doneAt: z.coerce.date().nullable().optional() })),
});

/** The refunds the status lists: those no longer in flight (no doneAt: made before refunds took time). */
const listedRefunds = (charge: Charge, now = new Date()) => charge.refunds.filter((r) => r.doneAt === undefined || (r.doneAt !== null && r.doneAt <= now));


function parse<T extends z.ZodType>(schema: T, req: Request): z.output<T> {
  const body = readBody(schema, req);
  if (body.ok) return body.data;
  const problem = body.notJson ? 'body is not JSON' : `${body.field} ${body.message}`;
  throw new MidtransError(body.notJson ? 400 : 200, '400', 'One or more parameters in the payload is invalid.', { validation_messages: [problem] });
}

export function midtransDialect(ctx: DialectContext): Router {
  const cfg = ctx.options.dialects.midtrans;
  const log = ctx.logger.child({ dialect: 'midtrans' });
  const router = Router();
  /** Dialect state of each Midtrans QR, by Kasir's order_id (the store's key); journaled as midtrans.charge. */
  const charges = new Map<string, Charge>(ctx.journal.loaded('midtrans.charge', chargeRecord));
  const stats = { calls: {} as Record<string, number>, rejected: {} as Record<string, number>, notificationsSent: 0, notifyAnswers: {} as Record<string, number>, notified: [] as string[] };
  let garble = 0;
  /** How many of the next refunds stay in flight until released (admin refund-hold). */
  let refundHolds = 0;
  let chargebackSeq = Math.max(0, ...[...charges.values()].flatMap((c) => c.refunds.map((r) => r.chargebackId)));

  const send = (res: Response, http: number, body: Record<string, unknown>) => {
    if (garble > 0 && (res.locals.fault as Fault | undefined)?.mode !== 'timeout') {
      garble--;
      return void res.status(http).type('application/json').send(JSON.stringify(body).slice(0, 20));
    }
    ctx.reply(res, http, body);
  };

  const authenticate: RequestHandler = (req, res, next) => {
    const expected = `Basic ${Buffer.from(`${cfg.serverKey}:`).toString('base64')}`;
    if (req.get('authorization') !== expected) {
      stats.rejected.unauthorized = (stats.rejected.unauthorized ?? 0) + 1;
      return void res.status(401).json({ status_code: '401', status_message: 'Access denied due to unauthorized transaction, please check client or server key', id: randomUUID() });
    }
    stats.calls[`${req.method} ${req.route?.path ?? req.path}`] = (stats.calls[`${req.method} ${req.route?.path ?? req.path}`] ?? 0) + 1;
    next();
  };

  /** The request's fault, answered in Midtrans's format (the shared middleware, simulator/faults.ts). */
  const faultAnswers: FaultAnswers = {
    invalid: (message) => new MidtransError(400, '400', message),
    error: (status) => ({ status_code: String(status), status_message: 'Sorry. Our system is recovering from unexpected issues. Please retry.' }),
    reject: (status) => ({ status_code: String(status), status_message: status === 429 ? 'Too many requests' : 'Simulated refusal' }),
    rejectStatus: 400,
  };
  const fault = (op: RequestOp, causesCallback = false) => ctx.inject(op, faultAnswers, causesCallback);

  const findQr = (id: string): QrRecord | null => {
    const byOrder = ctx.store.qrs.get(id);
    if (byOrder && charges.has(byOrder.reference)) return byOrder;
    for (const [reference, charge] of charges) if (charge.transactionId === id) return ctx.store.qrs.get(reference) ?? null;
    return null;
  };

  /** What the status shows refunded: the refunds done, not those in flight. */
  const refundedOf = (qr: QrRecord) => listedRefunds(charges.get(qr.reference)!).reduce((sum, r) => sum + r.amount, 0);

  function transactionStatus(qr: QrRecord): string {
    const s = qrStatus(qr);
    const refunded = refundedOf(qr);
    if (s === 'PAID') return refunded === 0 ? 'settlement' : refunded >= qr.amount ? 'refund' : 'partial_refund';
    return s === 'EXPIRED' ? 'expire' : 'pending';
  }

  const statusCodeOf = (status: string) => (status === 'pending' ? '201' : status === 'expire' ? '407' : '200');

  function transactionJson(qr: QrRecord, charge: Charge) {
    const status = transactionStatus(qr);
    return {
      status_code: statusCodeOf(status),
      status_message: status === 'expire' ? 'Success, transaction is found' : 'Success, transaction is found',
      transaction_id: charge.transactionId,
      order_id: qr.reference,
      merchant_id: 'G000KASIRSIM',
      gross_amount: money(qr.amount),
      currency: 'IDR',
      payment_type: 'qris',
      transaction_time: wib(qr.createdAt),
      transaction_status: status,
      fraud_status: 'accept',
      acquirer: charge.acquirer,
      ...(qr.paidAt ? { settlement_time: wib(qr.paidAt), issuer: charge.acquirer } : {}),
      ...(qr.expiresAt ? { expiry_time: wib(qr.expiresAt) } : {}),
      ...(listedRefunds(charge).length
        ? {
            refund_amount: money(refundedOf(qr)),
            refunds: listedRefunds(charge).map((r) => ({ refund_chargeback_id: r.chargebackId, refund_amount: money(r.amount), created_at: wib(r.createdAt), reason: 'Refund requested', refund_key: r.refundReference })),
          }
        : {}),
    };
  }

  // ---------------------------------------------------------------- Core API

  router.post('/v2/charge', authenticate, fault('createQris', true), (req, res) => {
    const body = parse(chargeBody, req);
    const { order_id: orderId, gross_amount: amount } = body.transaction_details;
    if (ctx.store.qrs.has(orderId)) throw new MidtransError(200, '406', 'The request could not be completed due to a conflict with the current state of the target resource, please try again');
    const notifyUrl = req.get('x-override-notification') ?? null;
    const now = new Date();
    let expiresAt: Date | null = null;
    if (body.custom_expiry) {
      const start = body.custom_expiry.order_time ? new Date(body.custom_expiry.order_time.replace(' ', 'T').replace(/ ([+-]\d{2})(\d{2})$/, '$1:$2')) : now;
      expiresAt = new Date(start.getTime() + Number(body.custom_expiry.expiry_duration) * UNIT_MS[body.custom_expiry.unit]);
    }
    const transactionId = randomUUID();
    const charge: Charge = { transactionId, acquirer: body.qris?.acquirer ?? 'gopay', notifyUrl, refunds: [] };
    const qr: QrRecord = {
      id: transactionId,
      reference: orderId,
      amount,
      qrisString: buildDynamicQris({
        merchantName: ctx.options.merchantName,
        merchantCity: ctx.options.merchantCity,
        amount,
        billNumber: orderId.slice(0, 25),
        nmid: ctx.options.nmid,
        referenceLabel: transactionId.replaceAll('-', '').slice(0, 25),
        terminalLabel: 'MIDTRANS',
      }),
      expiresAt,
      callbackUrl: notifyUrl ?? '',
      createdAt: now,
      paidAt: null,
      rrn: null,
      refunded: 0,
      dialect: 'midtrans',
    };
    charges.set(orderId, charge);
    ctx.journal.put('midtrans.charge', orderId, charge);
    ctx.qrCreated(qr);
    // Midtrans notifies every status change, the new pending one included (queued before the
    // answer so that both are journaled in the same step).
    notify(qr, null);
    const f = res.locals.fault as Fault | undefined;
    const qrString = f?.mode === 'bad_qris' ? qr.qrisString.slice(0, -4) + (parseInt(qr.qrisString.slice(-4), 16) ^ 0xffff).toString(16).toUpperCase().padStart(4, '0') : qr.qrisString;
    send(res, 200, {
      status_code: '201',
      status_message: 'QRIS transaction is created',
      transaction_id: transactionId,
      order_id: orderId,
      merchant_id: 'G000KASIRSIM',
      gross_amount: money(amount),
      currency: 'IDR',
      payment_type: 'qris',
      transaction_time: wib(now),
      transaction_status: 'pending',
      fraud_status: 'accept',
      actions: [{ name: 'generate-qr-code', method: 'GET', url: `${req.protocol}://${req.get('host')}${req.baseUrl}/v2/qris/${transactionId}/qr-code` }],
      qr_string: qrString,
      acquirer: charge.acquirer,
      ...(expiresAt ? { expiry_time: wib(expiresAt) } : {}),
    });
  });

  router.get('/v2/:id/status', authenticate, fault('queryQris'), (req, res) => {
    const qr = findQr(String(req.params.id));
    if (!qr) throw new MidtransError(404, '404', "Transaction doesn't exist.");
    send(res, 200, transactionJson(qr, charges.get(qr.reference)!));
  });

  router.post('/v2/:id/refund', authenticate, fault('refund', true), (req, res) => {
    const body = parse(refundBody, req);
    const qr = findQr(String(req.params.id));
    if (!qr) throw new MidtransError(404, '404', "Transaction doesn't exist.");
    const charge = charges.get(qr.reference)!;
    const refundKey = body.refund_key ?? `mt-${randomUUID()}`;
    const answer = (r: ChargeRefund) =>
      send(res, 200, {
        ...transactionJson(qr, charge),
        status_code: '200',
        status_message: 'Success, refund request is approved',
        refund_chargeback_id: r.chargebackId,
        refund_amount: money(r.amount),
        refund_key: r.refundReference,
      });
    const existing = charge.refunds.find((r) => r.refundReference === refundKey);
    if (existing && listedRefunds(charge).includes(existing)) return answer(existing);
    if (existing || ctx.store.refunds.has(refundKey)) throw new MidtransError(200, '406', 'refund_key has already been used');
    if (qrStatus(qr) !== 'PAID') throw new MidtransError(200, '412', 'Merchant cannot modify the status of the transaction');
    // What is left counts the refunds in flight too.
    const amount = body.amount ?? qr.amount - qr.refunded;
    if (amount < 1 || amount > qr.amount - qr.refunded) throw new MidtransError(200, '412', 'Refund amount exceeds the refundable amount');
    const held = refundHolds > 0;
    if (held) refundHolds--;
    const refund: ChargeRefund = {
      id: `mtr_${++chargebackSeq}`, refundReference: refundKey, reference: qr.reference, amount, createdAt: new Date(), chargebackId: chargebackSeq,
      doneAt: held ? null : new Date(Date.now() + ctx.options.disburseDelayMs),
    };
    qr.refunded += amount;
    charge.refunds.push(refund);
    ctx.store.saveQr(qr);
    ctx.store.saveRefund(refund);
    ctx.journal.put('midtrans.charge', qr.reference, charge);
    log.info({ reference: qr.reference, refund_key: refundKey, amount, held }, 'refund approved, in flight');
    const callbackFault = (res.locals.callbackFault as Fault | undefined) ?? null;
    if (!held) ctx.timers.after(ctx.options.disburseDelayMs, () => refundDone(qr, refund, callbackFault));
    answer(refund);
  });

  /** A refund leaves flight: listed from now on, and notified. */
  function refundDone(qr: QrRecord, refund: ChargeRefund, callbackFault: Fault | null): void {
    if (refund.doneAt === null || refund.doneAt === undefined || refund.doneAt > new Date()) {
      refund.doneAt = new Date();
      ctx.journal.put('midtrans.charge', qr.reference, charges.get(qr.reference)!);
    }
    log.info({ reference: qr.reference, refund_key: refund.refundReference }, 'refund done');
    notify(qr, callbackFault, { refund_key: refund.refundReference, refund_amount: money(refund.amount) });
  }

  // ---------------------------------------------------------------- notifications

  /** Counts Kasir's answers by HTTP status (the admin stats). */
  function recordAnswer(status: number): void {
    stats.notificationsSent++;
    stats.notifyAnswers[String(status)] = (stats.notifyAnswers[String(status)] ?? 0) + 1;
  }


  /** The transaction's current state as a signed notification to its override URL. */
  function notify(qr: QrRecord, override: Fault | null, extra: Record<string, unknown> = {}): void {
    const charge = charges.get(qr.reference);
    const url = charge?.notifyUrl;
    if (!charge || !url) return void log.warn({ reference: qr.reference }, 'no notification URL for this charge: not notified');
    if (qr.paidAt && !qr.rrn) {
      qr.rrn = newRrn();
      ctx.store.saveQr(qr);
    }
    const state = transactionJson(qr, charge);
    const { refunds: _refunds, ...fields } = state;
    const body = JSON.stringify({
      ...fields,
      ...extra,
      status_message: 'midtrans payment notification',
      signature_key: sha512(qr.reference + state.status_code + state.gross_amount + cfg.serverKey),
    });
    stats.notified.push(`${qr.reference}:${state.transaction_status}`);
    // Fault rules aim at the notifications Kasir acts on, not the pending one of a new charge.
    ctx.sendCallback('midtrans', url, body, { dialect: 'midtrans', reference: qr.reference }, override, state.transaction_status !== 'pending');
  }

  // The signature rides in the body (signature_key), so no headers.
  ctx.register('midtrans', { channel: { headers: () => ({}), onAnswer: recordAnswer }, paid: (qr, callbackFault) => notify(qr, callbackFault) });

  // ---------------------------------------------------------------- admin (loopback only)

  const admin = Router();
  admin.use(loopbackOnly('Midtrans admin'));
  admin.get('/stats', (req, res) => {
    res.json({ calls: stats.calls, rejected: stats.rejected, notifications_sent: stats.notificationsSent, notify_answers: stats.notifyAnswers, notified: stats.notified });
  });
  admin.post('/garble', (req, res) => {
    const parsed = z.object({ count: z.number().int().min(0).max(100) }).safeParse(JSON.parse((req.body as Buffer).toString('utf8') || '{}'));
    if (!parsed.success) return void res.status(400).json({ error: { code: 'VALIDATION_ERROR', message: 'count: 0..100' } });
    garble = parsed.data.count;
    res.json({ garble });
  });
  admin.post('/refund-hold', (req, res) => {
    const parsed = z.object({ count: z.number().int().min(0).max(100) }).safeParse(JSON.parse((req.body as Buffer).toString('utf8') || '{}'));
    if (!parsed.success) return void res.status(400).json({ error: { code: 'VALIDATION_ERROR', message: 'count: 0..100' } });
    refundHolds = parsed.data.count;
    res.json({ held: refundHolds });
  });
  admin.post('/refund-release', (req, res) => {
    let released = 0;
    for (const [reference, charge] of charges) {
      const qr = ctx.store.qrs.get(reference);
      for (const r of charge.refunds) {
        if (r.doneAt !== null || !qr) continue;
        refundDone(qr, r, null);
        released++;
      }
    }
    res.json({ released });
  });
  router.use('/admin', admin);

  router.use((req, res) => {
    res.status(404).json({ status_code: '404', status_message: `The requested resource is not found: ${req.method} ${req.path}` });
  });
  router.use((err: unknown, req: Request, res: Response, next: NextFunction) => {
    if (err instanceof MidtransError) {
      stats.rejected[err.code] = (stats.rejected[err.code] ?? 0) + 1;
      return send(res, err.http, { status_code: err.code, status_message: err.message, ...err.extra });
    }
    next(err);
  });
  return router;
}
