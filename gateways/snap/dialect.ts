// The simulator speaking SNAP BI, as a provider's sandbox would, written from the standard as
// ../shared/vendors/CONTRACTS.md part 3 describes it and independently of Kasir's adapter
// (gateways/snap*.ts), so a mistake on one side shows up as a failing test instead of
// cancelling out. Mounted at /snap: the signed EndpointUrl is the full path (/snap/v1.0/...).
//
// - POST /v1.0/access-token/b2b issues tokens (SHA256withRSA over `clientKey|timestamp`, checked
//   with the partner's public key) that expire after SIMULATOR_SNAP_TOKEN_SECONDS.
// - Every service call is checked: each mandatory header, the token, the partner id, the
//   HMAC-SHA512 signature with the client secret, the timestamp's freshness, and X-EXTERNAL-ID
//   (numeric, at most 36, unique per Jakarta day: a reuse is 409xx00). An id is taken when the
//   request is processed, so an injected error (which does no work) takes none.
// - QR MPM generate/query/refund, account inquiry, interbank transfer and transfer status run
//   over the shared store: `simulate:pay` pays a SNAP QR, and its payment notify is sent signed
//   (RSA with the provider key, or HMAC with a token fetched from Kasir) to the notify URL.
// - Notifies as the providers' pages show them, harshest first: originalReferenceNo always,
//   originalPartnerReferenceNo only with SIMULATOR_SNAP_NOTIFY_PARTNER_REFERENCE=send (optional
//   at Finpay, absent at Netzme); statuses other than 00 too (Finpay notifies 00-07, NICEPAY's
//   example is 05): POST /snap/admin/close {reference, status} cancels, fails, expires or rejects
//   a QR and notifies that status.
// - Inquiry and transfer as Midtrans takes them: beneficiaryBankCode of 7 digits (3-digit BI code
//   and 4-digit branch; SIMULATOR_SNAP_BANK_CODE_DIGITS=3 for providers such as Espay), and the
//   transfer's sourceAccountNo (SIMULATOR_SNAP_SOURCE_ACCOUNT_NO, 0000000000 for an aggregator),
//   transactionDate and additionalInfo.remark mandatory.
// - The query needs originalReferenceNo (Finpay, Qoin, PayCloud, iFortepay mark it mandatory)
//   and lists no refunds (the standard's answer has no such field).
// - Faults: the shared rules and X-Sim-Fault (error and reject answer in SNAP's format without
//   doing the work, timeout does the work and never answers, bad_qris corrupts qrContent);
//   callback modes apply to notifies; POST /snap/admin/expire-tokens expires every token at once.
import { createHash, createHmac, createPrivateKey, createPublicKey, generateKeyPair, randomBytes, randomInt, sign, timingSafeEqual, verify, type KeyObject } from 'node:crypto';
import { promisify } from 'node:util';
import { Router, type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import got from 'got';
import { z } from 'zod';
import { buildDynamicQris, QRIS_MAX_AMOUNT } from '../qris.ts';
import { readBody, type DialectContext } from '../simulator/dialect.ts';
import { loopbackOnly } from '../simulator/loopback.ts';
import type { Fault, RequestOp } from '../simulator/faults.ts';
import { accountHolder } from '../simulator/magic.ts';
import { newRrn, qrStatus, type DisbursementRecord, type QrRecord, type RefundRecord } from '../simulator/store.ts';
import { historyList } from './report-dialect.ts';

const generateKeyPairAsync = promisify(generateKeyPair);

/** A request held by the timeout fault waits this long at most. */
const HOLD_MS = 10 * 60 * 1000;
const MAX_SKEW_MS = 5 * 60 * 1000;
const NOTIFY_TIMEOUT_MS = 5000;

class SnapError extends Error {
  status: number;
  service: string;
  caseCode: string;
  constructor(status: number, service: string, caseCode: string, message: string) {
    super(message);
    this.status = status;
    this.service = service;
    this.caseCode = caseCode;
  }
}

interface Keys {
  providerPrivate: KeyObject;
  providerPublicPem: string;
  partnerPublic: KeyObject;
  partnerPublicPem: string;
  /** Only when the simulator generated the partner's pair (no SIMULATOR_SNAP_PARTNER_PUBLIC_KEY). */
  partnerPrivatePem: string | null;
}

const jakarta = (at: Date) => `${new Date(at.getTime() + 7 * 3600_000).toISOString().slice(0, 19)}+07:00`;
const jakartaDay = (at: Date) => jakarta(at).slice(0, 10);
const amountOf = (rupiah: number) => ({ value: `${rupiah}.00`, currency: 'IDR' });
const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

/** The standard's minified body, as a Java provider computes it: parsed and written back compact. */
function minified(raw: Buffer): string {
  if (raw.length === 0) return '';
  try {
    return JSON.stringify(JSON.parse(raw.toString('utf8')));
  } catch {
    return raw.toString('utf8');
  }
}


const amountBody = z.object({ value: z.string().regex(/^\d{1,16}\.\d{2}$/), currency: z.literal('IDR') });
const generateBody = z.object({
  partnerReferenceNo: z.string().regex(/^[A-Za-z0-9._-]{1,25}$/),
  amount: amountBody,
  merchantId: z.string().min(1).max(64),
  terminalId: z.string().max(16).optional(),
  validityPeriod: z.iso.datetime({ offset: true }).optional(),
  additionalInfo: z.record(z.string(), z.unknown()).optional(),
});
/** originalReferenceNo is mandatory, as Finpay, Qoin, PayCloud and iFortepay mark it (docs/vendors/snap.md). */
const queryBody = z.object({
  originalReferenceNo: z.string().min(1).max(64),
  originalPartnerReferenceNo: z.string().min(1).max(64).optional(),
  originalExternalId: z.string().max(36).optional(),
  serviceCode: z.string().regex(/^\d{2}$/),
  merchantId: z.string().min(1).max(64).optional(),
});
const refundBody = z.object({
  merchantId: z.string().min(1).max(64),
  originalPartnerReferenceNo: z.string().min(1).max(64),
  originalReferenceNo: z.string().min(1).max(64),
  partnerRefundNo: z.string().min(1).max(64),
  refundAmount: amountBody,
  reason: z.string().max(256).optional(),
});
/** beneficiaryBankCode: 7 digits where the provider takes the 3-digit BI code and a 4-digit branch (Midtrans), else 3. */
const bankCode = (digits: 3 | 7) => z.string().regex(digits === 7 ? /^\d{7}$/ : /^\d{3}$/);
const inquiryBody = (digits: 3 | 7) => z.object({ beneficiaryBankCode: bankCode(digits), beneficiaryAccountNo: z.string().regex(/^\d{5,34}$/) });
/** Midtrans's interbank transfer: sourceAccountNo, transactionDate and additionalInfo.remark are mandatory. */
const transferBody = (digits: 3 | 7) =>
  z.object({
    partnerReferenceNo: z.string().min(1).max(64),
    amount: amountBody,
    beneficiaryAccountName: z.string().min(1).max(100),
    beneficiaryAccountNo: z.string().regex(/^\d{5,34}$/),
    beneficiaryBankCode: bankCode(digits),
    beneficiaryEmail: z.string().max(50).optional(),
    sourceAccountNo: z.string().regex(/^\d{1,19}$/),
    transactionDate: z.iso.datetime({ offset: true }),
    additionalInfo: z.object({ remark: z.string().min(1).max(50) }).catchall(z.unknown()),
  });
const statusBody = z.object({
  originalPartnerReferenceNo: z.string().min(1).max(64),
  originalReferenceNo: z.string().max(64).optional(),
  serviceCode: z.literal('18'),
  transactionDate: z.string().optional(),
});

/** Whole rupiah from a checked amount body; fractions are refused as the amount's format. */
function rupiah(amount: { value: string }, service: string, field: string): number {
  const [whole, cents] = amount.value.split('.');
  const value = Number(whole);
  if (cents !== '00' || value < 1 || value > QRIS_MAX_AMOUNT) throw new SnapError(400, service, '01', `Invalid Field Format ${field}`);
  return value;
}

function parse<T extends z.ZodType>(schema: T, req: Request, service: string): z.output<T> {
  const body = readBody(schema, req);
  if (body.ok) return body.data;
  if (body.notJson) throw new SnapError(400, service, '00', 'Bad Request');
  throw new SnapError(400, service, body.missing ? '02' : '01', `${body.missing ? 'Invalid Mandatory Field' : 'Invalid Field Format'} ${body.field}`);
}

export function snapDialect(ctx: DialectContext): Router {
  const cfg = ctx.options.dialects.snap;
  const log = ctx.logger.child({ dialect: 'snap' });
  const router = Router();

  let keysPromise: Promise<Keys> | null = null;
  const keys = () => (keysPromise ??= loadKeys());
  /** Private keys generated for want of configured ones (snap.key): Kasir's copies stay good across a restart. */
  const generatedKeys = new Map(ctx.journal.loaded('snap.key', z.string()));
  async function generated(name: 'provider' | 'partner'): Promise<KeyObject> {
    const saved = generatedKeys.get(name);
    if (saved) return createPrivateKey(saved);
    const { privateKey } = await generateKeyPairAsync('rsa', { modulusLength: 2048 });
    ctx.journal.put('snap.key', name, privateKey.export({ type: 'pkcs8', format: 'pem' }).toString());
    if (name === 'partner') log.warn('SNAP partner key pair generated: fetch it from GET /snap/admin/keys');
    return privateKey;
  }
  async function loadKeys(): Promise<Keys> {
    const provider = cfg.privateKeyPem ? createPrivateKey(cfg.privateKeyPem) : await generated('provider');
    let partnerPrivatePem: string | null = null;
    let partnerPublic: KeyObject;
    if (cfg.partnerPublicKeyPem) {
      partnerPublic = createPublicKey(cfg.partnerPublicKeyPem);
    } else {
      const partnerPrivate = await generated('partner');
      partnerPublic = createPublicKey(partnerPrivate);
      partnerPrivatePem = partnerPrivate.export({ type: 'pkcs8', format: 'pem' }).toString();
    }
    return {
      providerPrivate: provider,
      providerPublicPem: createPublicKey(provider).export({ type: 'spki', format: 'pem' }).toString(),
      partnerPublic,
      partnerPublicPem: partnerPublic.export({ type: 'spki', format: 'pem' }).toString(),
      partnerPrivatePem,
    };
  }

  /** token → expiry (ms); journaled as snap.token while valid, so a restart does not log Kasir out. */
  const tokens = new Map<string, number>();
  for (const [token, until] of ctx.journal.loaded('snap.token', z.number())) {
    if (until > Date.now()) tokens.set(token, until);
    else ctx.journal.remove('snap.token', token);
  }
  /** X-EXTERNAL-IDs taken, by Jakarta day; earlier days are forgotten. */
  let externalIds = { day: '', ids: new Set<string>() };
  const stats = { tokenRequests: 0, calls: {} as Record<string, number>, rejected: {} as Record<string, number>, notifiesSent: 0, notifyAnswers: {} as Record<string, number> };
  /** A URL set through the admin route outlasts a restart, like the dashboard setting it stands for. */
  let notifyUrl = new Map(ctx.journal.loaded('snap.setting', z.string())).get('notify_url') ?? cfg.notifyUrl;
  /** The token Kasir issued the simulator for HMAC notifies, and until when. */
  let kasirToken: { token: string; until: number } | null = null;

  function refuse(res: Response, err: SnapError) {
    stats.rejected[err.message] = (stats.rejected[err.message] ?? 0) + 1;
    ctx.reply(res, err.status, { responseCode: `${err.status}${err.service}${err.caseCode}`, responseMessage: err.message });
  }

  // ---------------------------------------------------------------- access token

  router.post('/v1.0/access-token/b2b', async (req, res) => {
    const { partnerPublic } = await keys();
    stats.tokenRequests++;
    const timestamp = req.get('x-timestamp');
    const clientKey = req.get('x-client-key');
    const signature = req.get('x-signature');
    if (!timestamp || !clientKey || !signature) throw new SnapError(400, '73', '02', 'Invalid Mandatory Field X-TIMESTAMP, X-CLIENT-KEY, X-SIGNATURE');
    const at = Date.parse(timestamp);
    if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,3})?(Z|[+-]\d{2}:\d{2})$/.test(timestamp) || Number.isNaN(at)) throw new SnapError(400, '73', '01', 'Invalid Field Format X-TIMESTAMP');
    if (Math.abs(Date.now() - at) > MAX_SKEW_MS) throw new SnapError(401, '73', '00', 'Unauthorized. Stale X-TIMESTAMP');
    if (clientKey !== cfg.clientKey) throw new SnapError(401, '73', '00', 'Unauthorized. Unknown client');
    let valid = false;
    try {
      valid = verify('sha256', Buffer.from(`${clientKey}|${timestamp}`), partnerPublic, Buffer.from(signature, 'base64'));
    } catch {
      valid = false;
    }
    if (!valid) throw new SnapError(401, '73', '00', 'Unauthorized. Signature');
    const body = parse(z.object({ grantType: z.literal('client_credentials').optional(), grant_type: z.literal('client_credentials').optional() }), req, '73');
    if (!body.grantType && !body.grant_type) throw new SnapError(400, '73', '02', 'Invalid Mandatory Field grantType');
    const token = randomBytes(24).toString('base64url');
    tokens.set(token, Date.now() + cfg.tokenSeconds * 1000);
    ctx.journal.put('snap.token', token, tokens.get(token)!);
    ctx.reply(res, 200, { responseCode: '2007300', responseMessage: 'Successful', accessToken: token, tokenType: 'Bearer', expiresIn: String(cfg.tokenSeconds) });
  });

  // ---------------------------------------------------------------- service calls

  /** Checks everything a SNAP service request must carry; the external id is taken later. */
  const authenticate =
    (service: string): RequestHandler =>
    async (req, res, next) => {
      await keys();
      const need = (name: string) => {
        const value = req.get(name);
        if (!value) throw new SnapError(400, service, '02', `Invalid Mandatory Field ${name.toUpperCase()}`);
        return value;
      };
      if (!String(req.get('content-type') ?? '').startsWith('application/json')) throw new SnapError(400, service, '01', 'Invalid Field Format Content-Type');
      const timestamp = need('x-timestamp');
      const authorization = need('authorization');
      const signature = need('x-signature');
      const partnerId = need('x-partner-id');
      const externalId = need('x-external-id');
      const channelId = need('channel-id');
      const at = Date.parse(timestamp);
      if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,3})?(Z|[+-]\d{2}:\d{2})$/.test(timestamp) || Number.isNaN(at)) throw new SnapError(400, service, '01', 'Invalid Field Format X-TIMESTAMP');
      if (!/^\d{1,36}$/.test(externalId)) throw new SnapError(400, service, '01', 'Invalid Field Format X-EXTERNAL-ID');
      if (!/^\d{1,5}$/.test(channelId)) throw new SnapError(400, service, '01', 'Invalid Field Format CHANNEL-ID');
      const token = /^Bearer (\S+)$/.exec(authorization)?.[1];
      const expiry = token ? tokens.get(token) : undefined;
      if (!token || expiry === undefined || expiry <= Date.now()) throw new SnapError(401, service, '01', 'Invalid Token (B2B)');
      if (partnerId !== cfg.partnerId) throw new SnapError(401, service, '00', 'Unauthorized. Unknown partner');
      if (Math.abs(Date.now() - at) > MAX_SKEW_MS) throw new SnapError(401, service, '00', 'Unauthorized. Stale X-TIMESTAMP');
      const path = req.originalUrl.split('?')[0];
      const expected = createHmac('sha512', cfg.clientSecret).update(`POST:${path}:${token}:${sha256(minified(req.body as Buffer))}:${timestamp}`).digest();
      const given = Buffer.from(signature, 'base64');
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw new SnapError(401, service, '00', 'Unauthorized. Signature');
      res.locals.externalId = externalId;
      stats.calls[req.path] = (stats.calls[req.path] ?? 0) + 1;
      next();
    };

  /** The fault for this request (X-Sim-Fault or a rule), answered in SNAP's format with the service's code. */
  const fault = (op: RequestOp, service: string) =>
    ctx.inject(op, {
      invalid: (message) => new SnapError(400, service, '00', message),
      error: (status) => ({ responseCode: `${status}${service}${status === 500 ? '01' : '00'}`, responseMessage: status === 504 ? 'Timeout' : status === 500 ? 'Internal Server Error' : 'General Error' }),
      reject: (status) => ({ responseCode: `${status}${service}00`, responseMessage: 'Simulated refusal' }),
      rejectStatus: 400,
    });

  /** Takes the request's X-EXTERNAL-ID for today: a second use the same day is 409xx00. */
  function takeExternalId(res: Response, service: string): void {
    const day = jakartaDay(new Date());
    if (externalIds.day !== day) externalIds = { day, ids: new Set() };
    const id = res.locals.externalId as string;
    if (externalIds.ids.has(id)) throw new SnapError(409, service, '00', 'Conflict');
    externalIds.ids.add(id);
  }

  const service = (path: string, op: RequestOp, code: string, handler: (req: Request, res: Response) => void) =>
    router.post(path, authenticate(code), fault(op, code), (req, res) => {
      takeExternalId(res, code);
      handler(req, res);
    });

  const findQr = (body: { originalPartnerReferenceNo?: string; originalReferenceNo?: string }) => {
    const byRef = body.originalPartnerReferenceNo !== undefined ? ctx.store.qrs.get(body.originalPartnerReferenceNo) : undefined;
    const qr = byRef ?? [...ctx.store.qrs.values()].find((q) => q.id === body.originalReferenceNo);
    if (!qr || !qr.id.startsWith('A1') || (body.originalReferenceNo !== undefined && qr.id !== body.originalReferenceNo)) return null;
    return qr;
  };


  service('/v1.0/qr/qr-mpm-generate', 'createQris', '47', (req, res) => {
    const body = parse(generateBody, req, '47');
    if (body.merchantId !== cfg.merchantId) throw new SnapError(404, '47', '08', 'Invalid Merchant');
    const amount = rupiah(body.amount, '47', 'amount.value');
    if (ctx.store.qrs.has(body.partnerReferenceNo)) throw new SnapError(409, '47', '01', 'Duplicate partnerReferenceNo');
    const id = `A1${jakartaDay(new Date()).replaceAll('-', '')}${randomBytes(8).toString('hex').toUpperCase()}`;
    const qr: QrRecord = {
      id,
      reference: body.partnerReferenceNo,
      amount,
      qrisString: buildDynamicQris({
        merchantName: ctx.options.merchantName,
        merchantCity: ctx.options.merchantCity,
        amount,
        billNumber: body.partnerReferenceNo,
        nmid: ctx.options.nmid,
        referenceLabel: id,
        terminalLabel: (body.terminalId ?? 'SNAP').slice(0, 25),
      }),
      expiresAt: body.validityPeriod ? new Date(body.validityPeriod) : null,
      callbackUrl: notifyUrl ?? '',
      createdAt: new Date(),
      paidAt: null,
      rrn: null,
      refunded: 0,
      dialect: 'snap',
    };
    ctx.qrCreated(qr);
    const f = res.locals.fault as Fault | undefined;
    const qrContent = f?.mode === 'bad_qris' ? qr.qrisString.slice(0, -4) + (parseInt(qr.qrisString.slice(-4), 16) ^ 0xffff).toString(16).toUpperCase().padStart(4, '0') : qr.qrisString;
    ctx.reply(res, 200, {
      responseCode: '2004700',
      responseMessage: 'Successful',
      referenceNo: qr.id,
      partnerReferenceNo: qr.reference,
      qrContent,
      merchantName: ctx.options.merchantName,
      ...(body.terminalId ? { terminalId: body.terminalId } : {}),
    });
  });

  service('/v1.0/qr/qr-mpm-query', 'queryQris', '51', (req, res) => {
    const body = parse(queryBody, req, '51');
    if (body.serviceCode !== cfg.qrQueryServiceCode) throw new SnapError(400, '51', '01', 'Invalid Field Format serviceCode');
    if (body.merchantId !== undefined && body.merchantId !== cfg.merchantId) throw new SnapError(404, '51', '08', 'Invalid Merchant');
    const qr = findQr(body);
    if (!qr) throw new SnapError(404, '51', '01', 'Transaction Not Found');
    const status = qrStatus(qr);
    const latest = status === 'PAID' ? (qr.refunded >= qr.amount ? '04' : '00') : status === 'EXPIRED' ? '08' : '03';
    const desc = { '00': 'Success', '03': 'Pending', '04': 'Refunded', '08': 'Expired' }[latest];
    ctx.reply(res, 200, {
      responseCode: '2005100',
      responseMessage: 'Successful',
      originalReferenceNo: qr.id,
      originalPartnerReferenceNo: qr.reference,
      serviceCode: body.serviceCode,
      latestTransactionStatus: latest,
      transactionStatusDesc: desc,
      ...(qr.paidAt ? { paidTime: jakarta(qr.paidAt) } : {}),
      amount: amountOf(qr.amount),
      // No refund list: the standard's query answer has none (a provider's additionalInfo may).
      ...(qr.rrn ? { additionalInfo: { rrn: qr.rrn } } : {}),
    });
  });

  service('/v1.0/qr/qr-mpm-refund', 'refund', '78', (req, res) => {
    const body = parse(refundBody, req, '78');
    if (body.merchantId !== cfg.merchantId) throw new SnapError(404, '78', '08', 'Invalid Merchant');
    const amount = rupiah(body.refundAmount, '78', 'refundAmount.value');
    const qr = findQr(body);
    if (!qr) throw new SnapError(404, '78', '01', 'Transaction Not Found');
    if (ctx.store.refunds.has(body.partnerRefundNo)) throw new SnapError(409, '78', '01', 'Duplicate partnerReferenceNo');
    if (qrStatus(qr) !== 'PAID') throw new SnapError(404, '78', '00', 'Invalid Transaction Status');
    if (amount > qr.amount - qr.refunded) throw new SnapError(404, '78', '13', 'Invalid Amount');
    const refund: RefundRecord = { id: `R${randomBytes(8).toString('hex').toUpperCase()}`, refundReference: body.partnerRefundNo, reference: qr.reference, amount, createdAt: new Date() };
    qr.refunded += amount;
    ctx.store.saveQr(qr);
    ctx.store.saveRefund(refund);
    log.info({ reference: qr.reference, partnerRefundNo: refund.refundReference, amount }, 'refund succeeded');
    ctx.reply(res, 200, {
      responseCode: '2007800',
      responseMessage: 'Successful',
      originalPartnerReferenceNo: qr.reference,
      originalReferenceNo: qr.id,
      refundNo: refund.id,
      partnerRefundNo: refund.refundReference,
      refundAmount: amountOf(amount),
      refundTime: jakarta(refund.createdAt),
    });
  });

  service('/v1.0/account-inquiry-external', 'inquireAccount', '16', (req, res) => {
    const body = parse(inquiryBody(cfg.bankCodeDigits), req, '16');
    const name = accountHolder(body.beneficiaryAccountNo);
    if (!name) throw new SnapError(404, '16', '11', 'Invalid Account');
    ctx.reply(res, 200, {
      responseCode: '2001600',
      responseMessage: 'Successful',
      referenceNo: `I${randomBytes(8).toString('hex').toUpperCase()}`,
      beneficiaryAccountName: name,
      beneficiaryAccountNo: body.beneficiaryAccountNo,
      beneficiaryBankCode: body.beneficiaryBankCode,
    });
  });

  service('/v1.0/transfer-interbank', 'disburse', '18', (req, res) => {
    const body = parse(transferBody(cfg.bankCodeDigits), req, '18');
    if (body.sourceAccountNo !== cfg.sourceAccountNo) throw new SnapError(404, '18', '11', 'Invalid Account sourceAccountNo');
    const amount = rupiah(body.amount, '18', 'amount.value');
    if (ctx.store.disbursements.has(body.partnerReferenceNo)) throw new SnapError(409, '18', '01', 'Duplicate partnerReferenceNo');
    if (!accountHolder(body.beneficiaryAccountNo)) throw new SnapError(404, '18', '11', 'Invalid Account');
    const now = new Date();
    const d: DisbursementRecord = {
      id: `T${randomBytes(8).toString('hex').toUpperCase()}`,
      reference: body.partnerReferenceNo,
      channel: 'BANK',
      bankCode: body.beneficiaryBankCode,
      ewalletCode: null,
      accountNumber: body.beneficiaryAccountNo,
      accountName: body.beneficiaryAccountName,
      amount,
      callbackUrl: '',
      status: 'PROCESSING',
      failureReason: null,
      createdAt: now,
      updatedAt: now,
      // SNAP has no transfer notify here (no settled hook): the final status is read with the status inquiry.
      dialect: 'snap',
    };
    ctx.disbursementAccepted(d, null);
    ctx.reply(res, 200, {
      responseCode: '2001800',
      responseMessage: 'Successful',
      referenceNo: d.id,
      partnerReferenceNo: d.reference,
      amount: amountOf(amount),
      beneficiaryAccountNo: d.accountNumber,
      beneficiaryBankCode: d.bankCode,
    });
  });

  service('/v1.0/transaction-history-list', 'queryQris', '12', historyList(ctx));

  service('/v1.0/transfer/status', 'queryDisbursement', '36', (req, res) => {
    const body = parse(statusBody, req, '36');
    const d = ctx.store.disbursements.get(body.originalPartnerReferenceNo);
    if (!d || !d.id.startsWith('T')) throw new SnapError(404, '36', '01', 'Transaction Not Found');
    const latest = d.status === 'SUCCESS' ? '00' : d.status === 'FAILED' ? '06' : '03';
    ctx.reply(res, 200, {
      responseCode: '2003600',
      responseMessage: 'Successful',
      originalReferenceNo: d.id,
      originalPartnerReferenceNo: d.reference,
      serviceCode: '18',
      transactionDate: jakarta(d.createdAt),
      amount: amountOf(d.amount),
      beneficiaryAccountNo: d.accountNumber,
      beneficiaryBankCode: d.bankCode,
      latestTransactionStatus: latest,
      transactionStatusDesc: d.status === 'FAILED' ? (d.failureReason ?? 'Failed') : d.status === 'SUCCESS' ? 'Success' : 'Pending',
    });
  });

  // ---------------------------------------------------------------- payment notify

  function signedNotifyPath(url: string) {
    return new URL(url).pathname;
  }

  /** A token from Kasir's own access-token endpoint, beside the notify URL (HMAC mode). */
  async function tokenFromKasir(url: string): Promise<string | null> {
    if (kasirToken && kasirToken.until > Date.now()) return kasirToken.token;
    const { providerPrivate } = await keys();
    const tokenUrl = url.replace(/\/v1\.0\/qr\/qr-mpm-notify$/, '/v1.0/access-token/b2b');
    const timestamp = jakarta(new Date());
    try {
      const response = await got.post(tokenUrl, {
        body: JSON.stringify({ grantType: 'client_credentials' }),
        headers: {
          'content-type': 'application/json',
          'x-timestamp': timestamp,
          'x-client-key': cfg.clientKey,
          'x-signature': sign('sha256', Buffer.from(`${cfg.clientKey}|${timestamp}`), providerPrivate).toString('base64'),
        },
        timeout: { request: NOTIFY_TIMEOUT_MS },
        retry: { limit: 0 },
        throwHttpErrors: false,
        signal: ctx.signal,
      });
      const body = JSON.parse(response.body) as { accessToken?: string; expiresIn?: string };
      if (response.statusCode !== 200 || !body.accessToken) {
        log.warn({ status: response.statusCode, body: response.body.slice(0, 200) }, 'no token from the partner for an HMAC notify');
        return null;
      }
      kasirToken = { token: body.accessToken, until: Date.now() + (Number(body.expiresIn) || 900) * 1000 - 30_000 };
      return kasirToken.token;
    } catch (error) {
      log.warn({ error: (error as { code?: string }).code }, 'partner token request failed');
      return null;
    }
  }

  async function notifyHeaders(url: string, body: string): Promise<Record<string, string> | null> {
    const timestamp = jakarta(new Date());
    const path = signedNotifyPath(url);
    const common = {
      'content-type': 'application/json',
      'x-timestamp': timestamp,
      'x-partner-id': cfg.partnerId,
      'x-external-id': `${Date.now()}${randomInt(0, 1e9)}`,
      'channel-id': '95221',
    };
    if (cfg.notifySignature === 'rsa') {
      const { providerPrivate } = await keys();
      return { ...common, 'x-signature': sign('sha256', Buffer.from(`POST:${path}:${sha256(body)}:${timestamp}`), providerPrivate).toString('base64') };
    }
    const token = await tokenFromKasir(url);
    if (!token) return null;
    const signature = createHmac('sha512', cfg.clientSecret).update(`POST:${path}:${token}:${sha256(body)}:${timestamp}`).digest('base64');
    return { ...common, authorization: `Bearer ${token}`, 'x-signature': signature };
  }

  /** Counts Kasir's answers to notifies: its responseCode, or the HTTP status without one. */
  function recordAnswer(status: number, text: string): void {
    stats.notifiesSent++;
    let answered = `HTTP ${status}`;
    try {
      const code = (JSON.parse(text) as { responseCode?: unknown }).responseCode;
      if (typeof code === 'string') answered = code;
    } catch {
      // not JSON: the HTTP status says it
    }
    stats.notifyAnswers[answered] = (stats.notifyAnswers[answered] ?? 0) + 1;
  }

  const STATUS_DESC: Record<string, string> = { '00': 'Success', '01': 'Initiated', '02': 'Paying', '03': 'Pending', '04': 'Refunded', '05': 'Canceled', '06': 'Failed', '07': 'Not found', '08': 'Expired', '09': 'Rejected' };

  function sendNotify(qr: QrRecord, override: Fault | null, status = '00'): void {
    const url = notifyUrl;
    if (!url) return void log.warn({ reference: qr.reference }, 'no SNAP notify URL set: not notified');
    const body = JSON.stringify({
      originalReferenceNo: qr.id,
      ...(cfg.notifyPartnerReference ? { originalPartnerReferenceNo: qr.reference } : {}),
      latestTransactionStatus: status,
      transactionStatusDesc: STATUS_DESC[status],
      amount: amountOf(qr.amount),
      ...(status === '00' ? { additionalInfo: { rrn: qr.rrn ?? newRrn(), paidTime: jakarta(qr.paidAt ?? new Date()) } } : {}),
    });
    // Re-signed on every attempt (a fresh timestamp); the body stays byte for byte the same.
    ctx.sendCallback('snap', url, body, { dialect: 'snap', reference: qr.reference }, override);
  }

  ctx.register('snap', { channel: { headers: notifyHeaders, onAnswer: recordAnswer }, paid: sendNotify });

  // ---------------------------------------------------------------- admin (loopback only)

  const admin = Router();
  admin.use(loopbackOnly('SNAP admin'));
  admin.get('/keys', async (req, res) => {
    const k = await keys();
    res.json({
      partner_id: cfg.partnerId,
      client_key: cfg.clientKey,
      client_secret: cfg.clientSecret,
      merchant_id: cfg.merchantId,
      provider_public_key: k.providerPublicPem,
      partner_public_key: k.partnerPublicPem,
      partner_private_key: k.partnerPrivatePem,
      notify_signature: cfg.notifySignature,
      qr_query_service_code: cfg.qrQueryServiceCode,
    });
  });
  admin.get('/stats', (req, res) => {
    res.json({
      token_requests: stats.tokenRequests,
      calls: stats.calls,
      rejected: stats.rejected,
      notifies_sent: stats.notifiesSent,
      notify_answers: stats.notifyAnswers,
      live_tokens: [...tokens.values()].filter((t) => t > Date.now()).length,
    });
  });
  // What a provider's dashboard or the payer's side does to an unpaid QR: it can no longer be
  // paid, and the provider notifies that status.
  admin.post('/close', (req, res) => {
    const parsed = z.object({ reference: z.string().min(1), status: z.enum(['01', '02', '03', '05', '06', '07', '08', '09']) }).safeParse(JSON.parse((req.body as Buffer).toString('utf8') || '{}'));
    if (!parsed.success) return void res.status(400).json({ error: { code: 'VALIDATION_ERROR', message: 'reference, and status 01-03 or 05-09' } });
    const qr = ctx.store.qrs.get(parsed.data.reference);
    if (!qr || qr.dialect !== 'snap') return void res.status(404).json({ error: { code: 'QR_NOT_FOUND', message: 'no SNAP QR with that reference' } });
    if (qr.paidAt) return void res.status(409).json({ error: { code: 'ALREADY_PAID', message: 'a paid QR is not closed' } });
    if (['05', '06', '08', '09'].includes(parsed.data.status)) {
      qr.expiresAt = new Date();
      ctx.store.saveQr(qr);
    }
    sendNotify(qr, null, parsed.data.status);
    res.json({ reference: qr.reference, status: parsed.data.status });
  });
  admin.post('/expire-tokens', (req, res) => {
    let expired = 0;
    for (const [token, until] of tokens) {
      if (until > Date.now()) expired++;
      tokens.set(token, 0);
      ctx.journal.remove('snap.token', token);
    }
    log.info({ expired }, 'tokens expired on request');
    res.json({ expired });
  });
  admin.put('/notify-url', (req, res) => {
    const parsed = z.object({ url: z.url({ protocol: /^https?$/ }) }).safeParse(JSON.parse((req.body as Buffer).toString('utf8') || '{}'));
    if (!parsed.success) return void res.status(400).json({ error: { code: 'VALIDATION_ERROR', message: 'url: an http(s) URL' } });
    notifyUrl = parsed.data.url;
    ctx.journal.put('snap.setting', 'notify_url', notifyUrl);
    kasirToken = null;
    res.json({ url: notifyUrl });
  });
  router.use('/admin', admin);

  router.use((req, res) => {
    res.status(404).json({ responseCode: '4040002', responseMessage: `Invalid Routing ${req.method} ${req.path}` });
  });
  router.use((err: unknown, req: Request, res: Response, next: NextFunction) => {
    if (err instanceof SnapError) return refuse(res, err);
    if (err instanceof SyntaxError) return refuse(res, new SnapError(400, '00', '00', 'Bad Request'));
    next(err);
  });
  return router;
}
