// Legacy disbursement API (spec 4.10, 5.4): get-balance, create (bank), create-ewallet and
// query under the RSA X-SIGNATURE header. Same disbursements, wallet, ledger and idempotency key
// space as V1: the legacy orderId is the disbursement's idempotency key and creation is V1's
// createDisbursement with api LEGACY, so the two APIs cannot debit twice for one key or see two
// balances. Only the envelope, field names, decimal-string amounts, WIB times and messages differ.
//
// Order of checks: clientId present, client known and active, public key stored, X-SIGNATURE
// over the raw body (nothing else of the body is looked at before the caller is proven), the
// merchant pays out from a WALLET, the body's shape, the e-wallet code and DANA minimum, then
// the service's rules in the V1 order (orderId unused, bank, limit, daily limit, balance).
import { Router, type Request } from 'express';
import { z } from 'zod';
import { notifyUrlField } from '../http/validate.ts';
import type { AppContext } from '../context.ts';
import { createDisbursement, type DisbursementRequest } from '../../db/disbursements.ts';
import { findByIdempotencyKey } from '../../db/disbursements.sql.ts';
import { ApiError, type ErrorCode } from '../../db/errors.ts';
import { walletBalance } from '../../db/ledger.ts';
import { findMerchantByLegacyClientId, getMoneySettings, legacyClientSecretOf, type MerchantRow } from '../../db/merchants.ts';
import { checkNotifyUrl } from '../../db/notify-url.ts';
import { normalizePhone } from '../http/phone.ts';
import { legacyAmount, presentLegacyDisbursement, presentLegacyDisbursementCreated } from '../../db/present/disbursements.ts';
import { disbursementExists, disbursementNotFound, LegacyError, legacyMessages } from './errors.ts';
import { signedText, verifyXSignature } from './rsa-signature.ts';

/** Spec 4.10 / 8: the smallest DANA payout. */
const DANA_MINIMUM = 20_000;

const clientId = z.string().min(1).max(255);
const orderId = z.string().min(1).max(255);
const requestAmount = z.number().int().min(1);
const notifyUrl = notifyUrlField().nullish().transform((v) => v || null);

export const clientBody = z.object({ clientId });

export const bankBody = z.object({
  clientId,
  orderId,
  bankCode: z.string().trim().min(1).max(32),
  accountNumber: z.string().regex(/^\d{5,34}$/),
  accountName: z.string().trim().min(1).max(255),
  requestAmount,
  notifyUrl,
});

export const ewalletBody = z.object({
  clientId,
  orderId,
  ewalletCode: z.string().trim().min(1).max(32),
  // Spec 4.10: digits only, beginning with 08 (the local form; stored as 62…), 8 to 12 national
  // digits as api/http/phone.ts takes them.
  accountNumber: z.string().regex(/^08\d{7,11}$/),
  requestAmount,
  notifyUrl,
});

export const queryBody = z.object({ clientId, orderId });

function parse<S extends z.ZodType>(schema: S, body: unknown): z.infer<S> {
  const result = schema.safeParse(body);
  if (!result.success) throw new LegacyError(400, legacyMessages.invalidParameters);
  return result.data;
}

function success(data: unknown) {
  return { code: 200, message: 'Success', data };
}

/** Spec 5.4: the signature covers the exact bytes received, whatever their JSON says. */
async function authenticate(ctx: AppContext, req: Request): Promise<MerchantRow> {
  const { clientId } = parse(clientBody, req.body);
  req.legacyClientId = clientId;
  const refuse = (message: string) => {
    ctx.throttle.failed(req, 'legacy_rsa');
    return new LegacyError(401, message);
  };
  const merchant = await findMerchantByLegacyClientId(ctx.pool, clientId);
  if (!merchant || merchant.status !== 'ACTIVE') throw refuse(legacyMessages.invalidClient);
  if (!merchant.legacy_public_key) throw refuse(legacyMessages.publicKeyNotSet);
  const text = signedText(clientId, legacyClientSecretOf(ctx.sealer, merchant), req.rawBody ?? Buffer.alloc(0));
  if (!verifyXSignature(merchant.legacy_public_key, text, req.get('x-signature'))) throw refuse(legacyMessages.invalidXSignature);
  if (merchant.settlement_type !== 'WALLET') throw new LegacyError(400, legacyMessages.notWalletMerchant);
  return merchant;
}

function checkedNotifyUrl(ctx: AppContext, url: string | null): string | null {
  if (url && checkNotifyUrl(url, ctx.config.NOTIFY_URL_ALLOWLIST)) throw new LegacyError(400, legacyMessages.invalidParameters);
  return url;
}

const SERVICE_MESSAGES: Partial<Record<ErrorCode, string>> = {
  BANK_NOT_FOUND: legacyMessages.bankUnusable,
  BANK_DISABLED: legacyMessages.bankUnusable,
  AMOUNT_EXCEEDS_LIMIT: legacyMessages.amountAboveLimit,
  DAILY_LIMIT_EXCEEDED: legacyMessages.dailyLimitExceeded,
  INSUFFICIENT_BALANCE: legacyMessages.insufficientBalance,
  NOT_WALLET_MERCHANT: legacyMessages.notWalletMerchant,
};

/** V1's service with the legacy orderId as key; its error codes become spec 7's messages. */
async function create(ctx: AppContext, merchant: MerchantRow, request: Omit<DisbursementRequest, 'merchantId' | 'api' | 'source' | 'beneficiaryId'>) {
  const settings = await getMoneySettings(ctx.pool, merchant.id);
  try {
    return await createDisbursement(ctx.pool, ctx.boss, settings, { ...request, merchantId: merchant.id, api: 'LEGACY', source: 'API', beneficiaryId: null }, ctx.masterData);
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    if (err.code === 'DUPLICATE_IDEMPOTENCY_KEY') throw new LegacyError(400, disbursementExists(request.idempotencyKey));
    // Shape and amount were checked above, so the only INVALID_BODY left on an e-wallet is its
    // provider, disabled between the cache read below and the service's own lookup.
    if (err.code === 'INVALID_BODY' && request.channel === 'EWALLET') throw new LegacyError(400, legacyMessages.invalidEwalletCode);
    const message = SERVICE_MESSAGES[err.code];
    throw message ? new LegacyError(400, message) : err;
  }
}

export function legacyDisbursementRoutes(ctx: AppContext): Router {
  const router = Router();

  router.post('/api/disbursement/get-balance', async (req, res) => {
    const merchant = await authenticate(ctx, req);
    const balance = await walletBalance(ctx.pool, merchant.id);
    res.status(200).json(success({ clientId: merchant.legacy_client_id, balance: legacyAmount(balance) }));
  });

  router.post('/api/disbursement/create', async (req, res) => {
    const merchant = await authenticate(ctx, req);
    const body = parse(bankBody, req.body);
    const disbursement = await create(ctx, merchant, {
      idempotencyKey: body.orderId,
      channel: 'BANK',
      bankShortCode: body.bankCode,
      accountNumber: body.accountNumber,
      accountName: body.accountName,
      ewalletProvider: null,
      ewalletPhone: null,
      amount: body.requestAmount,
      notifyUrl: checkedNotifyUrl(ctx, body.notifyUrl),
    });
    res.status(200).json(success(presentLegacyDisbursementCreated(disbursement)));
  });

  router.post('/api/disbursement/create-ewallet', async (req, res) => {
    const merchant = await authenticate(ctx, req);
    const body = parse(ewalletBody, req.body);
    const phone = normalizePhone(body.accountNumber);
    if (!phone) throw new LegacyError(400, legacyMessages.invalidParameters);
    const notify = checkedNotifyUrl(ctx, body.notifyUrl);
    const code = body.ewalletCode.toUpperCase();
    // The enabled list is cached per process and dropped on every change (api/v1/master-data.ts).
    const enabled = await ctx.masterData.ewallets.get();
    if (!enabled.some((e) => e.short_code === code)) throw new LegacyError(400, legacyMessages.invalidEwalletCode);
    if (code === 'DANA' && body.requestAmount < DANA_MINIMUM) throw new LegacyError(400, legacyMessages.danaMinimum);
    const disbursement = await create(ctx, merchant, {
      idempotencyKey: body.orderId,
      channel: 'EWALLET',
      bankShortCode: null,
      accountNumber: null,
      accountName: null,
      ewalletProvider: code,
      ewalletPhone: phone,
      amount: body.requestAmount,
      notifyUrl: notify,
    });
    res.status(200).json(success(presentLegacyDisbursementCreated(disbursement)));
  });

  // One key space: a disbursement created through V1 is found by its idempotency_key too.
  router.post('/api/disbursement/query', async (req, res) => {
    const merchant = await authenticate(ctx, req);
    const body = parse(queryBody, req.body);
    const disbursement = await findByIdempotencyKey(ctx.pool, merchant.id, body.orderId);
    if (!disbursement) throw new LegacyError(404, disbursementNotFound(body.orderId));
    res.status(200).json(success(presentLegacyDisbursement(disbursement)));
  });

  return router;
}
