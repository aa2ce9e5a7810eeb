// The simulator gateway: an acquirer sandbox (think Xendit or Midtrans test mode) that Kasir
// reaches only over HTTP, like any real vendor. API, signing, faults and magic values are
// documented in docs/simulator.md.
//
// Invariants:
// - Creates are idempotent on Kasir's reference (QRs, disbursements) or refund_reference, so a
//   request retried or reconciled after a timeout never makes a second QR or transfer.
// - A fault that answers error or reject does no work; timeout does the work and never answers.
// - Every timer and outgoing callback is cancelled by stop(), so nothing outlives the server.
// - With SIMULATOR_STATE_FILE, every change is journaled before the answer or callback that
//   shows it leaves (journal.ts), and delayed work and owed callbacks resume after a restart.
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { z } from 'zod';
import { buildDynamicQris, parseQris, QRIS_MAX_AMOUNT, sanitizeQrisText } from '../qris.ts';
import { isLoopback } from './loopback.ts';
import { createCallbackSender, type CallbackPayload } from './callbacks.ts';
import type { SimulatorOptions } from './config.ts';
import { applies, createFaults, faultMiddleware, faultRuleSchema, parseFaultHeader, type Fault, type FaultAnswers, type RequestOp } from './faults.ts';
import { irisDialect } from '../midtrans/iris-dialect.ts';
import { midtransDialect } from '../midtrans/dialect.ts';
import { snapDialect } from '../snap/dialect.ts';
import { xenditDialect } from '../xendit/dialect.ts';
import { readBody, type DialectContext, type DialectHooks } from './dialect.ts';
import { CHANGED_AMOUNT_DELTA, nativeReport, refundAgain } from './report-dialect.ts';
import { memoryJournal, openJournal } from './journal.ts';
import { accountHolder, disbursementOutcome } from './magic.ts';
import { verifySignature } from './signing.ts';
import { createStore, disbursementJson, newId, newRrn, qrJson, qrStatus, refundJson, type DialectName, type DisbursementRecord, type QrRecord } from './store.ts';
import { createDeadlines, createTimers } from './timers.ts';

export type { SimulatorOptions } from './config.ts';


/** A request under the timeout fault is held this long at most, unless the client leaves first. */
const HOLD_MS = 10 * 60 * 1000;
const EMPTY = Buffer.alloc(0);

class SimError extends Error {
  status: number;
  code: string;
  constructor(status: number, code: string, message: string) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

const errorBody = (code: string, message: string) => ({ error: { code, message } });

const amount = z.number().int().min(1).max(QRIS_MAX_AMOUNT);
// The QR reference becomes the QRIS bill number (tag 62.01, 25 characters at most).
const qrReference = z.string().regex(/^[A-Za-z0-9._-]{1,25}$/, 'must be 1..25 letters, digits, ".", "_" or "-"');
const reference = z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, 'must be 1..64 letters, digits, ".", "_" or "-"');
// Kasir runs beside the simulator in dev, so loopback and IP-literal callback URLs are fine.
const callbackUrl = z.url({ protocol: /^https?$/ });
const destination = {
  channel: z.enum(['BANK', 'EWALLET']),
  bank_code: z.string().min(1).max(20).nullish(),
  ewallet_code: z.string().min(1).max(20).nullish(),
  account_number: z.string().regex(/^\d{5,34}$/, 'must be 5..34 digits'),
};
const destinationRule = (body: { channel: string; bank_code?: string | null; ewallet_code?: string | null }, ctx: z.RefinementCtx) => {
  if (body.channel === 'BANK' && !body.bank_code) ctx.addIssue({ code: 'custom', path: ['bank_code'], message: 'required for BANK' });
  if (body.channel === 'EWALLET' && !body.ewallet_code) ctx.addIssue({ code: 'custom', path: ['ewallet_code'], message: 'required for EWALLET' });
};

const createQrisBody = z.object({
  reference: qrReference,
  amount,
  expires_at: z.iso.datetime({ offset: true }).nullish(),
  merchant_name: z.string().max(200).nullish(),
  merchant_city: z.string().max(200).nullish(),
  callback_url: callbackUrl,
});
const refundBody = z.object({ refund_reference: reference, amount });
const disburseBody = z
  .object({ reference, ...destination, account_name: z.string().max(100).nullish(), amount, callback_url: callbackUrl })
  .superRefine(destinationRule);
// account_name: the name the caller entered, which the sandbox bank confirms (magic.ts).
const inquiryBody = z.object({ ...destination, account_name: z.string().max(100).nullish() }).superRefine(destinationRule);
const payBody = z
  .object({ reference: z.string().optional(), qris_string: z.string().optional(), force: z.boolean().optional() })
  .refine((body) => body.reference !== undefined || body.qris_string !== undefined, 'reference or qris_string is required');

function rawBody(req: Request): Buffer {
  return Buffer.isBuffer(req.body) ? req.body : EMPTY;
}

function parseBody<T extends z.ZodType>(schema: T, req: Request): z.output<T> {
  const body = readBody(schema, req);
  if (body.ok) return body.data;
  if (body.notJson) throw new SimError(400, 'INVALID_JSON', 'body must be a JSON object');
  throw new SimError(400, 'VALIDATION_ERROR', `${body.field}: ${body.message}`);
}

/** Turns the CRC into something else, leaving the rest intact: a subtle, realistic corruption. */
const corruptCrc = (qris: string) =>
  qris.slice(0, -4) + (parseInt(qris.slice(-4), 16) ^ 0xffff).toString(16).toUpperCase().padStart(4, '0');

export function createSimulatorApp(options: SimulatorOptions) {
  const { code, secret, logger } = options;
  const journal = options.stateFile ? openJournal(options.stateFile, logger) : memoryJournal();
  const store = createStore(journal);
  const faults = createFaults();
  const timers = createTimers();
  const deadlines = createDeadlines({ journal, timers, logger });
  const abort = new AbortController();
  const callbacks = createCallbackSender({ secret, logger, faults, timers, signal: abort.signal, journal });
  const dialects = new Map<DialectName, DialectHooks>();

  /** Answers unless a timeout fault holds the request; bad_qris corrupts the QRIS it carries. */
  function reply(res: Response, status: number, body: Record<string, unknown>): void {
    const fault = res.locals.fault as Fault | undefined;
    if (fault?.mode === 'timeout') {
      const cancel = timers.after(HOLD_MS, () => res.destroy());
      res.on('close', cancel);
      return;
    }
    if (fault?.mode === 'bad_qris' && typeof body.qris_string === 'string') body = { ...body, qris_string: corruptCrc(body.qris_string) };
    res.status(status).json(body);
  }

  const requireSignature: RequestHandler = (req, res, next) => {
    const problem = verifySignature(secret, req.headers, rawBody(req));
    if (problem) return void res.status(401).json(errorBody('INVALID_SIGNATURE', problem));
    next();
  };

  // Operators and tests on the same machine may skip signing; anyone else signs like Kasir.
  const requireAdmin: RequestHandler = (req, res, next) => {
    const signed = req.headers['x-sim-signature'] !== undefined || req.headers['x-sim-timestamp'] !== undefined;
    if (!signed && isLoopback(req.socket.remoteAddress)) return next();
    requireSignature(req, res, next);
  };

  /** The native API's fault answers, in its own error shape. */
  const nativeAnswers = (op: RequestOp): FaultAnswers => ({
    invalid: (message) => new SimError(400, 'INVALID_FAULT', message),
    error: () => errorBody('SIMULATED_ERROR', `injected error fault on ${op}`),
    reject: () => errorBody('SIMULATED_REJECTION', `injected reject fault on ${op}`),
    rejectStatus: 422,
  });
  /** Applies the request's X-Sim-Fault header, or else the first matching rule, to an operation. */
  const inject = (op: RequestOp, answers: FaultAnswers = nativeAnswers(op), causesCallback = false): RequestHandler =>
    faultMiddleware({ faults, sleep: (ms) => timers.sleep(ms), logger }, op, answers, causesCallback);

  function markPaid(qr: QrRecord, callbackFault: Fault | null): void {
    qr.paidAt = new Date();
    qr.rrn = newRrn();
    store.saveQr(qr);
    logger.info({ reference: qr.reference, rrn: qr.rrn }, 'qr paid');
    if (qr.dialect !== 'native') return dialects.get(qr.dialect)?.paid?.(qr, callbackFault);
    const payload: CallbackPayload = {
      type: 'qris.paid',
      reference: qr.reference,
      id: qr.id,
      amount: qr.amount,
      paid_at: qr.paidAt.toISOString(),
      rrn: qr.rrn,
    };
    callbacks.send(qr.callbackUrl, payload, callbackFault);
  }

  /** Stores a new QR and, when configured, its auto-pay deadline. */
  function qrCreated(qr: QrRecord): void {
    store.saveQr(qr);
    logger.info({ reference: qr.reference, amount: qr.amount }, 'qr created');
    if (options.autoPaySeconds !== null) deadlines.at('qr.autopay', qr.reference, new Date(Date.now() + options.autoPaySeconds * 1000));
  }

  /** Stores an accepted disbursement and its settlement deadline. */
  function disbursementAccepted(d: DisbursementRecord, callbackFault: Fault | null): void {
    store.saveDisbursement(d);
    logger.info({ reference: d.reference, amount: d.amount }, 'disbursement accepted');
    deadlines.at('disbursement.settle', d.reference, new Date(Date.now() + options.disburseDelayMs), callbackFault);
  }

  deadlines.on('qr.autopay', (reference) => {
    const qr = store.qrs.get(reference);
    if (qr && qrStatus(qr) === 'PENDING') markPaid(qr, null);
  });
  deadlines.on('disbursement.settle', (reference, callbackFault) => {
    const d = store.disbursements.get(reference);
    if (d?.status === 'PROCESSING') settle(d, callbackFault);
  });

  function settle(d: DisbursementRecord, callbackFault: Fault | null): void {
    const outcome = disbursementOutcome(d.accountNumber);
    if (!outcome) return;
    d.status = outcome.status;
    d.failureReason = outcome.status === 'FAILED' ? outcome.reason : null;
    d.updatedAt = new Date();
    store.saveDisbursement(d);
    logger.info({ reference: d.reference, status: d.status }, 'disbursement settled');
    if (d.dialect !== 'native') return dialects.get(d.dialect)?.settled?.(d, callbackFault);
    callbacks.send(d.callbackUrl, { type: 'disbursement.updated', reference: d.reference, id: d.id, status: d.status, failure_reason: d.failureReason }, callbackFault);
  }

  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  // An answer may leave only once the changes it reports are in the journal: a SIGKILL right
  // after it must not forget what it said. Every way of answering ends in res.end.
  app.use((req, res, next) => {
    const end = res.end;
    res.end = function (this: Response, ...args: unknown[]) {
      journal.flush();
      return (end as (...a: unknown[]) => Response).apply(this, args);
    } as Response['end'];
    next();
  });
  // Raw bytes for every route: the signature covers the body exactly as sent.
  app.use(express.raw({ type: () => true, limit: '64kb' }));
  app.use((req, res, next) => {
    const started = performance.now();
    res.on('finish', () => logger.debug({ method: req.method, path: req.originalUrl.split('?')[0], status: res.statusCode, ms: Math.round(performance.now() - started) }, 'request'));
    next();
  });

  app.get('/healthz', (req, res) => {
    res.json({ status: 'ok', code });
  });

  const v1 = express.Router();
  v1.use(requireSignature);

  v1.post('/qris', inject('createQris'), (req, res) => {
    const body = parseBody(createQrisBody, req);
    const existing = store.qrs.get(body.reference);
    if (existing) {
      if (existing.amount !== body.amount) throw new SimError(409, 'REFERENCE_CONFLICT', `reference ${body.reference} already has a QR for ${existing.amount}`);
      return reply(res, 200, qrJson(existing));
    }
    const id = newId('qr');
    // A name with nothing printable in ASCII falls back to the configured one, as acquirers
    // print the registered merchant name rather than refuse the payment.
    const name = sanitizeQrisText(body.merchant_name ?? '', 25) || options.merchantName;
    const city = sanitizeQrisText(body.merchant_city ?? '', 15) || options.merchantCity;
    const qr: QrRecord = {
      id,
      reference: body.reference,
      amount: body.amount,
      qrisString: buildDynamicQris({
        merchantName: name,
        merchantCity: city,
        amount: body.amount,
        billNumber: body.reference,
        nmid: options.nmid,
        referenceLabel: id,
        terminalLabel: code.toUpperCase().slice(0, 25),
      }),
      expiresAt: body.expires_at ? new Date(body.expires_at) : null,
      callbackUrl: body.callback_url,
      createdAt: new Date(),
      paidAt: null,
      rrn: null,
      refunded: 0,
      dialect: 'native',
    };
    qrCreated(qr);
    reply(res, 201, qrJson(qr));
  });

  v1.get('/qris/:reference', inject('queryQris'), (req, res) => {
    const qr = store.qrs.get(String(req.params.reference));
    if (!qr) throw new SimError(404, 'QR_NOT_FOUND', `no QR with reference ${req.params.reference}`);
    reply(res, 200, qrJson(qr));
  });

  v1.post('/qris/:reference/refunds', inject('refund'), (req, res) => {
    const body = parseBody(refundBody, req);
    const qr = store.qrs.get(String(req.params.reference));
    if (!qr) throw new SimError(404, 'QR_NOT_FOUND', `no QR with reference ${req.params.reference}`);
    const existing = store.refunds.get(body.refund_reference);
    if (existing) {
      if (existing.reference !== qr.reference || existing.amount !== body.amount) {
        throw new SimError(409, 'REFERENCE_CONFLICT', `refund_reference ${body.refund_reference} was used for another refund`);
      }
      return reply(res, 200, refundJson(existing));
    }
    if (qrStatus(qr) !== 'PAID') throw new SimError(400, 'QR_NOT_PAID', `QR ${qr.reference} is ${qrStatus(qr)}`);
    if (body.amount > qr.amount - qr.refunded) throw new SimError(400, 'AMOUNT_EXCEEDS_REFUNDABLE', `at most ${qr.amount - qr.refunded} is refundable`);
    const refund = { id: newId('rfd'), refundReference: body.refund_reference, reference: qr.reference, amount: body.amount, createdAt: new Date() };
    qr.refunded += refund.amount;
    store.saveQr(qr);
    store.saveRefund(refund);
    if ((res.locals.fault as Fault | undefined)?.mode === 'double_refund') refundAgain(store, qr, refund);
    logger.info({ reference: qr.reference, refund_reference: refund.refundReference, amount: refund.amount }, 'refund succeeded');
    reply(res, 201, refundJson(refund));
  });

  v1.get('/qris/:reference/refunds/:refundReference', inject('queryRefund'), (req, res) => {
    const refund = store.refunds.get(String(req.params.refundReference));
    if (!refund || refund.reference !== String(req.params.reference)) throw new SimError(404, 'REFUND_NOT_FOUND', `no refund ${req.params.refundReference} of ${req.params.reference}`);
    reply(res, 200, refundJson(refund));
  });

  v1.post('/disbursements', inject('disburse', undefined, true), (req, res) => {
    const body = parseBody(disburseBody, req);
    const existing = store.disbursements.get(body.reference);
    if (existing) {
      if (existing.amount !== body.amount || existing.accountNumber !== body.account_number) {
        throw new SimError(409, 'REFERENCE_CONFLICT', `reference ${body.reference} was used for another disbursement`);
      }
      return reply(res, 200, disbursementJson(existing));
    }
    const now = new Date();
    const d: DisbursementRecord = {
      id: newId('dsb'),
      reference: body.reference,
      channel: body.channel,
      bankCode: body.bank_code ?? null,
      ewalletCode: body.ewallet_code ?? null,
      accountNumber: body.account_number,
      accountName: body.account_name ?? null,
      amount: body.amount,
      callbackUrl: body.callback_url,
      status: 'PROCESSING',
      failureReason: null,
      createdAt: now,
      updatedAt: now,
      dialect: 'native',
    };
    const money = (res.locals.fault as Fault | undefined)?.mode;
    if (money === 'changed_amount') d.amount += CHANGED_AMOUNT_DELTA;
    // lost_payout: accepted and answered, then forgotten (never stored, never settled).
    if (money === 'lost_payout') return reply(res, 201, disbursementJson(d));
    disbursementAccepted(d, (res.locals.callbackFault as Fault | undefined) ?? null);
    reply(res, 201, disbursementJson(d));
  });

  v1.get('/disbursements/:reference', inject('queryDisbursement'), (req, res) => {
    const d = store.disbursements.get(String(req.params.reference));
    if (!d) throw new SimError(404, 'DISBURSEMENT_NOT_FOUND', `no disbursement with reference ${req.params.reference}`);
    reply(res, 200, disbursementJson(d));
  });

  v1.post('/account-inquiry', inject('inquireAccount'), (req, res) => {
    const body = parseBody(inquiryBody, req);
    const name = accountHolder(body.account_number, body.account_name ?? null);
    if (!name) throw new SimError(404, 'ACCOUNT_NOT_FOUND', `no account ${body.account_number}`);
    reply(res, 200, {
      account_name: name,
      account_number: body.account_number,
      channel: body.channel,
      bank_code: body.bank_code ?? null,
      ewallet_code: body.ewallet_code ?? null,
    });
  });

  v1.use(nativeReport(store));
  app.use('/v1', v1);

  // Vendor dialects: the same store, faults and payer, spoken as each real gateway speaks.
  const dialect: DialectContext = {
    options,
    logger,
    store,
    journal,
    faults,
    timers,
    deadlines,
    signal: abort.signal,
    inject,
    reply,
    register(name, hooks) {
      dialects.set(name, hooks);
      callbacks.channel(name, hooks.channel);
    },
    sendCallback: (name, url, body, about, fault, takesFaults = true) => callbacks.sendAs({ channel: name, url, body, about }, fault, takesFaults),
    qrCreated,
    disbursementAccepted,
  };
  app.use('/xendit', xenditDialect(dialect));
  app.use('/midtrans', midtransDialect(dialect));
  app.use('/iris', irisDialect(dialect));
  app.use('/snap', snapDialect(dialect));

  // Everything that can run owed work is registered now: what the journal held resumes.
  callbacks.resume();
  deadlines.resume();

  // The payer's phone: no signature, any client may pay.
  app.post('/simulate/pay', (req, res) => {
    const body = parseBody(payBody, req);
    let callbackFault: Fault | null = null;
    const header = req.get('x-sim-fault');
    if (header !== undefined) {
      const parsed = parseFaultHeader(header);
      if (!parsed.ok) throw new SimError(400, 'INVALID_FAULT', parsed.error);
      if (!applies(parsed.fault.mode, 'callback')) throw new SimError(400, 'INVALID_FAULT', `X-Sim-Fault: ${parsed.fault.mode} does not apply to a payment's callback`);
      callbackFault = parsed.fault;
    }
    let ref = body.reference;
    if (ref === undefined) {
      // A payer's app scans the string and refuses a corrupt one before anything is paid.
      const parsed = parseQris(body.qris_string!);
      if (!parsed.ok) throw new SimError(400, 'INVALID_QRIS', parsed.error);
      ref = parsed.billNumber ?? '';
    }
    const qr = store.qrs.get(ref);
    if (!qr || (body.qris_string !== undefined && body.qris_string !== qr.qrisString)) throw new SimError(404, 'QR_NOT_FOUND', 'no such QR');
    const status = qrStatus(qr);
    if (status === 'PAID') throw new SimError(409, 'ALREADY_PAID', `QR ${qr.reference} was paid at ${qr.paidAt!.toISOString()}`);
    if (status === 'EXPIRED' && !body.force) throw new SimError(409, 'QR_EXPIRED', `QR ${qr.reference} expired; pass force: true to pay it late`);
    markPaid(qr, callbackFault);
    res.json({ reference: qr.reference, id: qr.id, status: 'PAID', amount: qr.amount, rrn: qr.rrn, paid_at: qr.paidAt!.toISOString() });
  });

  app.get('/admin/faults', requireAdmin, (req, res) => {
    res.json({ rules: faults.list() });
  });
  app.post('/admin/faults', requireAdmin, (req, res) => {
    const body = parseBody(z.union([faultRuleSchema, z.array(faultRuleSchema)]), req);
    const rules = (Array.isArray(body) ? body : [body]).map((rule) => faults.add(rule));
    logger.info({ rules }, 'fault rules added');
    res.status(201).json({ rules });
  });
  app.delete('/admin/faults', requireAdmin, (req, res) => {
    faults.clear();
    res.json({ rules: [] });
  });

  app.use((req, res) => {
    res.status(404).json(errorBody('ROUTE_NOT_FOUND', `no route ${req.method} ${req.path}`));
  });

  app.use((err: unknown, req: Request, res: Response, _next: NextFunction) => {
    if (err instanceof SimError) return reply(res, err.status, errorBody(err.code, err.message));
    const status = (err as { status?: unknown }).status;
    if (typeof status === 'number' && status >= 400 && status < 500) {
      return reply(res, status, errorBody('BAD_REQUEST', (err as Error).message)); // body-parser: too large, aborted
    }
    logger.error({ err }, 'unhandled error');
    reply(res, 500, errorBody('INTERNAL', 'internal error'));
  });

  return {
    app,
    shutdown() {
      timers.stop();
      abort.abort();
    },
    /** Writes what is pending and closes the state file (after shutdown). */
    closeState: () => journal.close(),
  };
}

export interface RunningSimulator {
  url: string;
  port: number;
  stop(): Promise<void>;
}

/** Listens on host:port (0 = ephemeral). stop() returns once every connection is closed. */
export async function startSimulator(options: SimulatorOptions & { host: string; port: number }): Promise<RunningSimulator> {
  const { app, shutdown, closeState } = createSimulatorApp(options);
  const server = app.listen(options.port, options.host);
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  const wildcard = options.host === '0.0.0.0' || options.host === '::';
  const host = wildcard ? '127.0.0.1' : options.host.includes(':') ? `[${options.host}]` : options.host;
  return {
    url: `http://${host}:${port}`,
    port,
    async stop() {
      shutdown();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // Held (timeout-fault) and keep-alive sockets would otherwise block close() for minutes.
      server.closeAllConnections();
      await closed;
      await closeState();
    },
  };
}
