// The simulator speaking Midtrans Iris (payouts), as app.sandbox.midtrans.com/iris would, written
// from ../shared/vendors/CONTRACTS.md part 2.4 and independently of Kasir's adapter. Mounted at
// /iris: a vendor's Iris base URL is <sim>/iris and the paths are /api/v1/....
//
// - Basic auth with an Iris key as the username: SIMULATOR_IRIS_CREATOR_KEY creates payouts,
//   SIMULATOR_IRIS_APPROVER_KEY approves or rejects them; either reads. An unknown key is 401, a
//   key of the other role 403.
// - POST /payouts makes `queued` payouts with a reference_no of Iris's own (Kasir's reference
//   rides in notes); a repeat with the same X-Idempotency-Key answers the first result and makes
//   nothing (docs.midtrans.com, Payouts API headers). An account that approves on its own
//   answers `processed` (account ending …5555: approved, settles after the delay) or `completed`
//   (…3333: paid at once), as Iris documents create answers (gateways/simulator/magic.ts);
//   otherwise nothing moves until POST /payouts/approve {reference_nos, otp} with the
//   approver's current two-factor code (midtrans-go iris/request.go ApprovePayoutReq sends otp
//   always; the dashboard requires approver 2FA): a TOTP (RFC 6238, SHA-1, 6 digits, 30 s, one
//   step either side) of SIMULATOR_IRIS_APPROVER_TOTP_SECRET, computed here from the RFC on its
//   own. A missing or wrong code approves nothing. Then the shared store
//   settles it after SIMULATOR_DISBURSE_DELAY_MS by the account-number magic (gateways/simulator/
//   magic.ts): completed, failed (error_code 002) or stuck in processing.
// - Notifications ({reference_no, amount, status, updated_at, error_code?, error_message?},
//   Iris-Signature = SHA-512 hex of body + SIMULATOR_IRIS_MERCHANT_KEY) go to
//   SIMULATOR_IRIS_NOTIFY_URL (or PUT /iris/admin/notify-url) on approved, completed, failed and
//   rejected. Callback faults (duplicate, out of order, drop, latency) apply to them.
// - Faults: the shared rules (disburse = create, queryDisbursement = read, inquireAccount =
//   account validation); POST /iris/admin/approve-fault {mode: error|reject|timeout, count}
//   (error and reject do not approve, timeout approves and never answers); POST
//   /iris/admin/garble {count}: the next answers are cut-off JSON after doing the work.
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { Router, type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { z } from 'zod';
import { QRIS_MAX_AMOUNT } from '../qris.ts';
import { readBody, type DialectContext } from '../simulator/dialect.ts';
import { loopbackOnly } from '../simulator/loopback.ts';
import type { Fault, RequestOp } from '../simulator/faults.ts';
import { accountHolder, irisAutoApproval } from '../simulator/magic.ts';
import type { DisbursementRecord } from '../simulator/store.ts';
import { irisStatements } from './iris-report-dialect.ts';

const HOLD_MS = 10 * 60 * 1000;

/** The banks this sandbox pays to, as GET /beneficiary_banks lists them. */
const BANKS: ReadonlyArray<{ code: string; name: string }> = [
  { code: 'bca', name: 'Bank Central Asia' },
  { code: 'mandiri', name: 'Bank Mandiri' },
  { code: 'bni', name: 'Bank Negara Indonesia' },
  { code: 'bri', name: 'Bank Rakyat Indonesia' },
  { code: 'cimb', name: 'Bank CIMB Niaga' },
  { code: 'permata', name: 'Bank Permata' },
  { code: 'danamon', name: 'Bank Danamon' },
  { code: 'btn', name: 'Bank Tabungan Negara' },
  { code: 'mega', name: 'Bank Mega' },
  { code: 'panin', name: 'Bank Panin' },
];

class IrisError extends Error {
  http: number;
  errors: unknown;
  constructor(http: number, message: string, errors?: unknown) {
    super(message);
    this.http = http;
    this.errors = errors;
  }
}

type IrisStatus = 'queued' | 'approved' | 'processed' | 'completed' | 'failed' | 'rejected';

interface Payout {
  referenceNo: string;
  name: string;
  account: string;
  bank: string;
  email: string | null;
  amount: number;
  notes: string;
  state: 'queued' | 'approved' | 'rejected';
  createdAt: Date;
  updatedAt: Date;
}

const payoutRecord = z.object({
  referenceNo: z.string(),
  name: z.string(),
  account: z.string(),
  bank: z.string(),
  email: z.string().nullable(),
  amount: z.number().int(),
  notes: z.string(),
  state: z.enum(['queued', 'approved', 'rejected']),
  createdAt: z.coerce.date(),
  updatedAt: z.coerce.date(),
});

const amountString = z.string().regex(/^\d{1,16}(\.\d{1,2})?$/, 'must be digits with at most 2 decimals');
const payoutsBody = z.object({
  payouts: z
    .array(
      z.object({
        beneficiary_name: z.string().min(1).max(100),
        beneficiary_account: z.string().regex(/^\d{5,34}$/, 'must be 5..34 digits'),
        beneficiary_bank: z.string().min(1).max(20),
        beneficiary_email: z.email().optional(),
        amount: amountString,
        notes: z.string().min(1).max(100),
      }),
    )
    .min(1)
    .max(100),
});
const approveBody = z.object({ reference_nos: z.array(z.string().min(1)).min(1), otp: z.string() });

/** RFC 4648 base32 → bytes (the form an authenticator app is given a secret in). */
function base32(text: string): Buffer {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  let bits = 0;
  let value = 0;
  const out: number[] = [];
  for (const c of text.replace(/=+$/, '')) {
    value = (value << 5) | alphabet.indexOf(c);
    bits += 5;
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 0xff);
      bits -= 8;
    }
  }
  return Buffer.from(out);
}

/** RFC 4226 HOTP with RFC 6238's time step as the counter: 6 digits, HMAC-SHA-1. */
function totpAt(secret: Buffer, step: number): string {
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(step));
  const mac = createHmac('sha1', secret).update(counter).digest();
  const offset = mac[mac.length - 1] & 0x0f;
  const code = (mac.readUInt32BE(offset) & 0x7fffffff) % 1_000_000;
  return String(code).padStart(6, '0');
}

/** A code of the current 30-second step, or one step either side (clock drift, RFC 6238 §5.2). */
function validOtp(secret: Buffer, otp: string, now = Date.now()): boolean {
  if (!/^\d{6}$/.test(otp)) return false;
  const step = Math.floor(now / 30_000);
  return [step - 1, step, step + 1].some((s) => timingSafeEqual(Buffer.from(totpAt(secret, s)), Buffer.from(otp)));
}
const rejectBody = z.object({ reference_nos: z.array(z.string().min(1)).min(1), reject_reason: z.string().min(1).max(100) });


function parse<T extends z.ZodType>(schema: T, req: Request): z.output<T> {
  const body = readBody(schema, req);
  if (body.ok) return body.data;
  if (body.notJson) throw new IrisError(400, 'Request body is not valid JSON');
  throw new IrisError(400, 'An error occurred when processing the request', [`${body.field} ${body.message}`]);
}

export function irisDialect(ctx: DialectContext): Router {
  const cfg = ctx.options.dialects.iris;
  const log = ctx.logger.child({ dialect: 'iris' });
  const router = Router();
  // Journaled as iris.payout (by reference_no) and iris.setting, so a restart keeps them.
  const payouts = new Map<string, Payout>(ctx.journal.loaded('iris.payout', payoutRecord));
  const stats = { calls: {} as Record<string, number>, rejected: {} as Record<string, number>, notificationsSent: 0, notifyAnswers: {} as Record<string, number>, notified: [] as string[] };
  /** A URL set through the admin route outlasts a restart, like the dashboard setting it stands for. */
  let notifyUrl = new Map(ctx.journal.loaded('iris.setting', z.string())).get('notify_url') ?? cfg.notifyUrl;
  const savePayout = (p: Payout) => ctx.journal.put('iris.payout', p.referenceNo, p);
  /** The shared store's record of an approved payout (same reference). */
  const recordOf = (p: Payout): DisbursementRecord | null => (p.state === 'approved' ? (ctx.store.disbursements.get(p.referenceNo) ?? null) : null);
  let garble = 0;
  let approveFaults: { mode: 'error' | 'reject' | 'timeout'; count: number } | null = null;

  const send = (res: Response, http: number, body: Record<string, unknown>) => {
    if (garble > 0 && (res.locals.fault as Fault | undefined)?.mode !== 'timeout') {
      garble--;
      return void res.status(http).type('application/json').send(JSON.stringify(body).slice(0, 16));
    }
    ctx.reply(res, http, body);
  };

  const as =
    (...roles: Array<'creator' | 'approver'>): RequestHandler =>
    (req, res, next) => {
      const auth = /^Basic (\S+)$/.exec(req.get('authorization') ?? '')?.[1];
      const user = auth ? Buffer.from(auth, 'base64').toString('utf8').replace(/:$/, '') : null;
      const role = user === cfg.creatorKey ? 'creator' : user === cfg.approverKey ? 'approver' : null;
      const key = `${req.method} ${req.route?.path ?? req.path}`;
      if (!role) {
        stats.rejected.unauthorized = (stats.rejected.unauthorized ?? 0) + 1;
        return void res.status(401).json({ error_message: 'Unauthorized', errors: ['Invalid API key'] });
      }
      if (!roles.includes(role)) {
        stats.rejected.forbidden = (stats.rejected.forbidden ?? 0) + 1;
        return void res.status(403).json({ error_message: 'Forbidden', errors: [`the ${role} key cannot do this`] });
      }
      stats.calls[key] = (stats.calls[key] ?? 0) + 1;
      next();
    };

  /** The request's fault, answered in Iris's error shape (the shared middleware, simulator/faults.ts). */
  const fault = (op: RequestOp, causesCallback = false) =>
    ctx.inject(
      op,
      {
        invalid: (message) => new IrisError(400, message),
        error: () => ({ error_message: 'Internal server error' }),
        reject: (status) => ({ error_message: status === 429 ? 'Too many requests' : 'Simulated refusal' }),
        rejectStatus: 400,
      },
      causesCallback,
    );

  const statusOf = (p: Payout): IrisStatus => {
    if (p.state !== 'approved') return p.state;
    const record = recordOf(p);
    if (!record || record.status === 'PROCESSING') return 'approved';
    return record.status === 'SUCCESS' ? 'completed' : 'failed';
  };
  const failureOf = (p: Payout) => (statusOf(p) === 'failed' ? { error_code: '002', error_message: `Invalid destination account number (${recordOf(p)?.failureReason ?? 'FAILED'})` } : {});

  function payoutJson(p: Payout) {
    return {
      amount: `${p.amount}.00`,
      beneficiary_name: p.name,
      beneficiary_account: p.account,
      bank: BANKS.find((b) => b.code === p.bank)?.name ?? p.bank,
      reference_no: p.referenceNo,
      notes: p.notes,
      beneficiary_email: p.email,
      status: statusOf(p),
      created_by: 'kasir-creator',
      created_at: p.createdAt.toISOString(),
      updated_at: p.updatedAt.toISOString(),
      ...failureOf(p),
    };
  }

  // ---------------------------------------------------------------- API

  router.get('/api/v1/ping', (req, res) => void res.type('text/plain').send('pong'));

  router.get('/api/v1/beneficiary_banks', as('creator', 'approver'), (req, res) => {
    send(res, 200, { beneficiary_banks: BANKS });
  });

  /**
   * X-Idempotency-Key → the create's answer: the same key again answers the first result, as
   * Iris documents (kept 24 h there; here for the process's life, not journaled).
   */
  const createdByKey = new Map<string, Record<string, unknown>>();

  router.post('/api/v1/payouts', as('creator'), fault('disburse'), (req, res) => {
    const key = req.get('x-idempotency-key');
    const earlier = key === undefined ? undefined : createdByKey.get(key);
    if (earlier) return void send(res, 201, earlier);
    const body = parse(payoutsBody, req);
    const errors: string[] = [];
    for (const [i, p] of body.payouts.entries()) {
      if (!BANKS.some((b) => b.code === p.beneficiary_bank)) errors.push(`payouts[${i}].beneficiary_bank is not a supported bank`);
      const [whole, cents] = p.amount.split('.');
      if ((cents && !/^0+$/.test(cents)) || Number(whole) < 1 || Number(whole) > QRIS_MAX_AMOUNT) errors.push(`payouts[${i}].amount is invalid`);
    }
    if (errors.length) throw new IrisError(400, 'An error occurred when creating payouts', errors);
    const now = new Date();
    const made = body.payouts.map((p) => {
      const payout: Payout = {
        referenceNo: randomBytes(9).toString('hex'),
        name: p.beneficiary_name,
        account: p.beneficiary_account,
        bank: p.beneficiary_bank,
        email: p.beneficiary_email ?? null,
        amount: Number(p.amount.split('.')[0]),
        notes: p.notes,
        state: 'queued',
        createdAt: now,
        updatedAt: now,
      };
      payouts.set(payout.referenceNo, payout);
      savePayout(payout);
      // An account that approves on its own (magic endings): no approver is waited for.
      const auto = irisAutoApproval(payout.account);
      if (auto) approve(payout, auto === 'completed' ? 'SUCCESS' : 'PROCESSING');
      log.info({ reference_no: payout.referenceNo, notes: payout.notes, amount: payout.amount, status: auto ?? 'queued' }, 'payout created');
      return { status: auto ?? 'queued', reference_no: payout.referenceNo };
    });
    if (key !== undefined) createdByKey.set(key, { payouts: made });
    send(res, 201, { payouts: made });
  });

  /** Hands an approved payout to the shared store: PROCESSING settles after the delay, SUCCESS is paid now. */
  function approve(p: Payout, status: 'PROCESSING' | 'SUCCESS'): void {
    p.state = 'approved';
    p.updatedAt = new Date();
    savePayout(p);
    const record: DisbursementRecord = {
      id: p.referenceNo,
      reference: p.referenceNo,
      channel: 'BANK',
      bankCode: p.bank,
      ewalletCode: null,
      accountNumber: p.account,
      accountName: p.name,
      amount: p.amount,
      callbackUrl: notifyUrl ?? '',
      status,
      failureReason: null,
      createdAt: p.createdAt,
      updatedAt: p.updatedAt,
      dialect: 'iris',
    };
    ctx.disbursementAccepted(record, null);
    notify(p, null);
  }

  function takeApproveFault(): 'error' | 'reject' | 'timeout' | null {
    if (!approveFaults || approveFaults.count < 1) return null;
    const { mode } = approveFaults;
    if (--approveFaults.count === 0) approveFaults = null;
    return mode;
  }

  const approverSecret = base32(cfg.approverTotpSecret);
  router.post('/api/v1/payouts/approve', as('approver'), (req, res) => {
    const body = parse(approveBody, req);
    if (!validOtp(approverSecret, body.otp)) throw new IrisError(401, 'Invalid OTP', ['otp is not the approver\'s current code']);
    const mode = takeApproveFault();
    if (mode === 'error') return void res.status(500).json({ error_message: 'Internal server error' });
    if (mode === 'reject') return void res.status(400).json({ error_message: 'Simulated refusal', errors: ['approval refused'] });
    const found = body.reference_nos.map((ref) => payouts.get(ref));
    if (found.some((p) => !p)) throw new IrisError(404, 'Payout not found', ['reference_nos contains an unknown reference_no']);
    if (found.some((p) => p!.state !== 'queued')) throw new IrisError(400, 'An error occurred when approving payouts', ['only queued payouts can be approved']);
    for (const p of found as Payout[]) approve(p, 'PROCESSING');
    if (mode === 'timeout') {
      const cancel = ctx.timers.after(HOLD_MS, () => res.destroy());
      res.on('close', cancel);
      return;
    }
    send(res, 200, { status: 'ok' });
  });

  router.post('/api/v1/payouts/reject', as('approver'), (req, res) => {
    const body = parse(rejectBody, req);
    const found = body.reference_nos.map((ref) => payouts.get(ref));
    if (found.some((p) => !p)) throw new IrisError(404, 'Payout not found', ['reference_nos contains an unknown reference_no']);
    if (found.some((p) => p!.state !== 'queued')) throw new IrisError(400, 'An error occurred when rejecting payouts', ['only queued payouts can be rejected']);
    for (const p of found as Payout[]) {
      p.state = 'rejected';
      p.updatedAt = new Date();
      savePayout(p);
      notify(p, null);
    }
    send(res, 200, { status: 'ok' });
  });

  router.get('/api/v1/payouts/:ref', as('creator', 'approver'), fault('queryDisbursement'), (req, res) => {
    const p = payouts.get(String(req.params.ref));
    if (!p) throw new IrisError(404, 'Payout not found');
    send(res, 200, payoutJson(p));
  });

  router.get('/api/v1/account_validation', as('creator', 'approver'), fault('inquireAccount'), (req, res) => {
    const bank = typeof req.query.bank === 'string' ? req.query.bank : '';
    const account = typeof req.query.account === 'string' ? req.query.account : '';
    if (!BANKS.some((b) => b.code === bank)) throw new IrisError(400, 'An error occurred when doing account validation', { bank: ['Bank is not supported'] });
    if (!/^\d{5,34}$/.test(account)) throw new IrisError(400, 'An error occurred when doing account validation', { account: ['Account number is invalid'] });
    const name = accountHolder(account);
    if (!name) throw new IrisError(400, 'An error occurred when doing account validation', { account: ['Account does not exist'] });
    send(res, 200, { account_name: name, account_no: account, bank_name: bank });
  });

  // ---------------------------------------------------------------- notifications

  /** Counts Kasir's answers by HTTP status (the admin stats). */
  function recordAnswer(status: number): void {
    stats.notificationsSent++;
    stats.notifyAnswers[String(status)] = (stats.notifyAnswers[String(status)] ?? 0) + 1;
  }


  function notify(p: Payout, override: Fault | null): void {
    const url = notifyUrl;
    if (!url) return void log.warn({ reference_no: p.referenceNo }, 'no Iris notification URL set: not notified');
    const status = statusOf(p);
    const body = JSON.stringify({ reference_no: p.referenceNo, amount: `${p.amount}.00`, status, updated_at: p.updatedAt.toISOString().replace(/\.\d{3}Z$/, 'Z'), ...failureOf(p) });
    stats.notified.push(`${p.referenceNo}:${status}`);
    // Fault rules aim at the final notifications, not the intermediate ones (approved...).
    const final = status === 'completed' || status === 'failed';
    ctx.sendCallback('iris', url, body, { dialect: 'iris', reference_no: p.referenceNo }, override, final);
  }

  ctx.register('iris', {
    channel: { headers: (url, body) => ({ 'iris-signature': createHash('sha512').update(body + cfg.merchantKey).digest('hex') }), onAnswer: recordAnswer },
    settled(d, callbackFault) {
      const p = payouts.get(d.reference);
      if (!p) return;
      p.updatedAt = d.updatedAt;
      savePayout(p);
      notify(p, callbackFault);
    },
  });

  // ---------------------------------------------------------------- admin (loopback only)

  const admin = Router();
  admin.use(loopbackOnly('Iris admin'));
  const json = (req: Request) => JSON.parse((req.body as Buffer).toString('utf8') || '{}') as unknown;
  admin.get('/stats', (req, res) => {
    res.json({
      calls: stats.calls,
      rejected: stats.rejected,
      notifications_sent: stats.notificationsSent,
      notify_answers: stats.notifyAnswers,
      notified: stats.notified,
      payouts: [...payouts.values()].map((p) => ({ reference_no: p.referenceNo, notes: p.notes, status: statusOf(p), amount: p.amount })),
    });
  });
  admin.put('/notify-url', (req, res) => {
    const parsed = z.object({ url: z.url({ protocol: /^https?$/ }) }).safeParse(json(req));
    if (!parsed.success) return void res.status(400).json({ error: { code: 'VALIDATION_ERROR', message: 'url: an http(s) URL' } });
    notifyUrl = parsed.data.url;
    ctx.journal.put('iris.setting', 'notify_url', notifyUrl);
    res.json({ url: notifyUrl });
  });
  admin.post('/approve-fault', (req, res) => {
    const parsed = z.object({ mode: z.enum(['error', 'reject', 'timeout']), count: z.number().int().min(1).max(100).default(1) }).safeParse(json(req));
    if (!parsed.success) return void res.status(400).json({ error: { code: 'VALIDATION_ERROR', message: 'mode: error|reject|timeout, count: 1..100' } });
    approveFaults = parsed.data;
    res.json(approveFaults);
  });
  admin.post('/garble', (req, res) => {
    const parsed = z.object({ count: z.number().int().min(0).max(100) }).safeParse(json(req));
    if (!parsed.success) return void res.status(400).json({ error: { code: 'VALIDATION_ERROR', message: 'count: 0..100' } });
    garble = parsed.data.count;
    res.json({ garble });
  });
  router.use('/admin', admin);

  router.use(irisStatements({ payouts, recordOf, auth: as('creator', 'approver') }));

  router.use((req, res) => {
    res.status(404).json({ error_message: `Not found: ${req.method} ${req.path}` });
  });
  router.use((err: unknown, req: Request, res: Response, next: NextFunction) => {
    if (err instanceof IrisError) {
      stats.rejected[err.message] = (stats.rejected[err.message] ?? 0) + 1;
      return send(res, err.http, { error_message: err.message, ...(err.errors === undefined ? {} : { errors: err.errors }) });
    }
    next(err);
  });
  return router;
}
