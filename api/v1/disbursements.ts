// V1 disbursements (spec 4.3): WALLET merchants only. POST checks the request in the
// contract's order and creates it in one transaction (db/disbursements.ts); the disbursement
// worker sends it to a vendor afterwards, so the answer is always PENDING (or IN_REVIEW).
// A beneficiary_id fills the destination from the saved beneficiary (db/beneficiaries.ts), so
// channel is required only without one.
import { Router, type Request } from 'express';
import { z } from 'zod';
import type { AppContext } from '../context.ts';
import { destinationOf, type Destination } from '../../db/beneficiaries.ts';
import { ApiError } from '../../db/errors.ts';
import { createDisbursement } from '../../db/disbursements.ts';
import { disbursementStatus, findMerchantDisbursement, listMerchantDisbursements } from '../../db/disbursements.sql.ts';
import { dayRange, oneOf, knownQuery } from '../http/list-filters.ts';
import { checkNotifyUrl } from '../../db/notify-url.ts';
import { pageMeta, sendData, sendPage } from '../http/envelope.ts';
import { pagination } from '../http/pagination.ts';
import { normalizePhone, phoneField } from '../http/phone.ts';
import { expects, idempotencyKeyOf, notifyUrlField, parseBody } from '../http/validate.ts';
import { requireWalletMerchant } from '../http/wallet.ts';
import { presentDisbursement } from '../../db/present/disbursements.ts';

const optionalText = (max: number) => z.string().trim().max(max).nullish().transform((v) => v || null);

/** 5 to 34 digits, or empty (not given). */
export const accountNumber = expects(z.string().trim().regex(/^(\d{5,34})?$/), '5 to 34 digits').nullish().transform((v) => v || null);

// Only the shape is checked here; the rules (and their order) live in db/disbursements.ts.
// Messages come from api/http/validate.ts.
export const createBody = z.strictObject({
  // Required, here or as the Idempotency-Key header (keyOf below): the body's field is the spec's.
  idempotency_key: z
    .string()
    .min(1)
    .max(255)
    .optional()
    .describe('Required unless the Idempotency-Key header carries the key; when both are sent they must be equal. Unique: a repeat gives 409 DUPLICATE_IDEMPOTENCY_KEY'),
  channel: z.enum(['BANK', 'EWALLET']).nullish().transform((v) => v ?? null),
  bank_short_code: optionalText(32),
  account_number: accountNumber,
  account_name: optionalText(255),
  ewallet_provider: optionalText(32),
  ewallet_phone: phoneField().nullish().transform((v) => v || null),
  amount: z.unknown(),
  notify_url: notifyUrlField().nullish(),
  beneficiary_id: z.uuid().nullish(),
  // Pay even when the bank names another account holder than account_name (a beneficiary's
  // NAME_MISMATCH, or the vendor's inquiry before the transfer); refused otherwise.
  accept_name_mismatch: z
    .boolean()
    .optional()
    .describe('Pay even when the bank names another account holder than account_name (a NAME_MISMATCH beneficiary, or the inquiry before the transfer); refused otherwise'),
});

/**
 * The checks of a disbursement body past its shape, shared with the CSV import: the e-wallet
 * phone (returned normalised to 62…, or null) and the notify_url. Throws INVALID_BODY.
 */
export function checkContactFields(body: { ewallet_phone?: string | null; notify_url?: string | null }, allowlist: readonly string[]): string | null {
  let phone: string | null = null;
  if (body.ewallet_phone) {
    phone = normalizePhone(body.ewallet_phone);
    if (!phone) throw new ApiError('INVALID_BODY', 'ewallet_phone: must be an Indonesian phone number');
  }
  if (body.notify_url) {
    const problem = checkNotifyUrl(body.notify_url, allowlist);
    if (problem) throw new ApiError('INVALID_BODY', `notify_url: ${problem}`);
  }
  return phone;
}

/**
 * The disbursement's idempotency key: the body's idempotency_key (the spec's field) or the
 * Idempotency-Key header the orders and refunds take; both sent must be equal. Either way it is
 * the disbursement's unique key (a repeat is 409 DUPLICATE_IDEMPOTENCY_KEY), not a replay key.
 */
function keyOf(req: Request, fromBody: string | undefined): string {
  const header = idempotencyKeyOf(req);
  if (header !== undefined && fromBody !== undefined && header !== fromBody) {
    throw new ApiError('INVALID_BODY', `idempotency_key "${fromBody}" and the Idempotency-Key header "${header}" differ: send one, or both equal`);
  }
  const key = fromBody ?? header;
  if (key === undefined) throw new ApiError('INVALID_BODY', 'idempotency_key: is required (in the body, or as the Idempotency-Key header)');
  return key;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function disbursementRoutes(ctx: AppContext): Router {
  const router = Router();
  router.use('/v1/disbursements', requireWalletMerchant);

  router.post('/v1/disbursements', async (req, res) => {
    const body = parseBody(createBody, req.body);
    const idempotencyKey = keyOf(req, body.idempotency_key);
    const phone = checkContactFields(body, ctx.config.NOTIFY_URL_ALLOWLIST);
    const given: Destination = {
      channel: body.channel,
      bankShortCode: body.bank_short_code,
      accountNumber: body.account_number,
      accountName: body.account_name,
      ewalletProvider: body.ewallet_provider,
      ewalletPhone: phone,
    };
    const beneficiaryId = body.beneficiary_id?.toLowerCase() ?? null;
    const acceptNameMismatch = body.accept_name_mismatch === true;
    const to = beneficiaryId ? await destinationOf(ctx.pool, req.merchant.id, beneficiaryId, given, acceptNameMismatch) : given;
    if (!to.channel) throw new ApiError('INVALID_BODY', 'channel: is required without beneficiary_id (BANK or EWALLET)');
    const settings = req.moneySettings;
    const disbursement = await createDisbursement(ctx.pool, ctx.boss, settings, {
      merchantId: req.merchant.id,
      api: 'V1',
      source: 'API',
      idempotencyKey,
      channel: to.channel,
      bankShortCode: to.bankShortCode,
      accountNumber: to.accountNumber,
      accountName: to.accountName,
      ewalletProvider: to.ewalletProvider,
      ewalletPhone: to.ewalletPhone,
      amount: body.amount,
      notifyUrl: body.notify_url ?? null,
      beneficiaryId,
      acceptNameMismatch,
    }, ctx.masterData);
    sendData(res, presentDisbursement(disbursement), 201);
  });

  router.get('/v1/disbursements', knownQuery('page', 'limit', 'status', 'idempotency_key', 'date_from', 'date_to'), async (req, res) => {
    const { page, limit } = pagination(req, { limit: 10, max: 50 });
    const key = req.query.idempotency_key;
    if (key !== undefined && (typeof key !== 'string' || !createBody.shape.idempotency_key.safeParse(key).success)) {
      throw new ApiError('INVALID_BODY', 'idempotency_key: must be one string of 1 to 255 characters');
    }
    const filter = { status: oneOf(req, 'status', disbursementStatus.options), idempotencyKey: key, ...dayRange(req) };
    // Looking up a key is looking for what was just made: the primary, never a lagging replica.
    const db = key === undefined ? ctx.replica.reads() : ctx.pool;
    const [rows, total] = await listMerchantDisbursements(db, req.merchant.id, page, limit, filter);
    sendPage(res, rows.map(presentDisbursement), pageMeta(page, limit, total));
  });

  router.get('/v1/disbursements/:id', async (req, res) => {
    sendData(res, presentDisbursement(await merchantDisbursement(ctx, req)));
  });

  return router;
}

/** By UUID or ref_code; another merchant's is as unknown as a missing one. */
async function merchantDisbursement(ctx: AppContext, req: Request) {
  const key = String(req.params.id);
  const where = UUID.test(key) ? { id: key.toLowerCase() } : /^DSB-\d+-[0-9A-Z]+$/.test(key) ? { refCode: key } : null;
  const found = where ? await findMerchantDisbursement(ctx.pool, req.merchant.id, where) : null;
  if (!found) throw new ApiError('DISBURSEMENT_NOT_FOUND');
  return found;
}
