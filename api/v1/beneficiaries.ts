// Beneficiaries (spec 4.5): a merchant's saved payout destinations. Open to every merchant, not
// only WALLET ones (the contract restricts disbursements and balance, not these). POST answers
// at once with verification_status PENDING; the disbursement worker verifies afterwards.
// POST /v1/beneficiaries/{id}/verify asks for a new check, idempotent while one runs; writes
// here need the beneficiaries permission (owner, ops: api/http/roles.ts).
import { Router } from 'express';
import { z } from 'zod';
import type { AppContext } from '../context.ts';
import { createBeneficiary, requestVerification } from '../../db/beneficiaries.ts';
import { findMerchantBeneficiary, listMerchantBeneficiaries, softDeleteBeneficiary } from '../../db/beneficiaries.sql.ts';
import { ApiError } from '../../db/errors.ts';
import { sendData, sendStored } from '../http/envelope.ts';
import { normalizePhone, phoneField } from '../http/phone.ts';
import { idempotentRequest, parseBody } from '../http/validate.ts';
import { idempotent } from '../../db/idempotency.ts';
import { toJson } from '../../db/present/json-text.ts';
import { uuidParam } from '../http/wallet.ts';
import { accountNumber } from './disbursements.ts';
import { presentBeneficiary } from '../../db/present/beneficiaries.ts';
import { knownQuery } from '../http/list-filters.ts';

const optionalText = (max: number) => z.string().trim().max(max).nullish().transform((v) => v || null);

// Only the shape is checked here; the destination rules live in db/beneficiaries.ts. Messages
// come from api/http/validate.ts.
export const createBody = z.strictObject({
  channel: z.enum(['BANK', 'EWALLET']),
  label: optionalText(255),
  bank_short_code: optionalText(32),
  account_number: accountNumber,
  account_name: optionalText(255),
  ewallet_provider: optionalText(32),
  ewallet_phone: phoneField().nullish().transform((v) => v || null),
  is_default: z.boolean().nullish().transform((v) => v ?? false),
});

export function beneficiaryRoutes(ctx: AppContext): Router {
  const router = Router();

  router.get('/v1/beneficiaries', knownQuery(), async (req, res) => {
    sendData(res, (await listMerchantBeneficiaries(ctx.pool, req.merchant.id)).map(presentBeneficiary));
  });

  router.post('/v1/beneficiaries', async (req, res) => {
    const body = parseBody(createBody, req.body);
    let phone: string | null = null;
    if (body.ewallet_phone) {
      phone = normalizePhone(body.ewallet_phone);
      if (!phone) throw new ApiError('INVALID_BODY', 'ewallet_phone: must be an Indonesian phone number');
    }
    const answer = await idempotent(ctx.pool, idempotentRequest(req, 'beneficiary'), async (tx) => {
      const beneficiary = await createBeneficiary(tx, ctx.boss, {
        merchantId: req.merchant.id,
        channel: body.channel,
        label: body.label,
        bankShortCode: body.bank_short_code,
        accountNumber: body.account_number,
        accountName: body.account_name,
        ewalletProvider: body.ewallet_provider,
        ewalletPhone: phone,
        isDefault: body.is_default,
      });
      return { status: 201, body: toJson({ success: true, data: presentBeneficiary(beneficiary) }) };
    });
    sendStored(res, answer.status, answer.body, answer.replayed);
  });

  router.get('/v1/beneficiaries/:id', async (req, res) => {
    const found = await findMerchantBeneficiary(ctx.pool, req.merchant.id, uuidParam(req, 'id'));
    if (!found) throw new ApiError('BENEFICIARY_NOT_FOUND');
    sendData(res, presentBeneficiary(found));
  });

  // 200 with the beneficiary either way: PENDING with a new check queued, or, while a check is
  // already PENDING, as it is (a repeat queues nothing).
  router.post('/v1/beneficiaries/:id/verify', async (req, res) => {
    const beneficiary = await requestVerification(ctx.pool, ctx.boss, req.merchant.id, uuidParam(req, 'id'));
    sendData(res, presentBeneficiary(beneficiary));
  });

  router.delete('/v1/beneficiaries/:id', async (req, res) => {
    const deleted = await softDeleteBeneficiary(ctx.pool, req.merchant.id, uuidParam(req, 'id'));
    if (!deleted) throw new ApiError('BENEFICIARY_NOT_FOUND');
    sendData(res, { deleted: true });
  });

  return router;
}
