// Legacy order API (spec 4.10, 5.3): /api/order/create and /api/order/query, signed with
// SHA-512 over "clientId|orderId|totalAmount|clientSecret". Same orders table and the same
// merchant order namespace as V1; only the envelope, field names, timestamps (WIB) and the
// reuse rule differ: a legacy create never returns an existing order, it says the id is used.
import { createHash } from 'node:crypto';
import { Router, type Request } from 'express';
import { z } from 'zod';
import { emailAddress, notifyUrlField } from '../http/validate.ts';
import type { AppContext } from '../context.ts';
import { ApiError } from '../../db/errors.ts';
import { findMerchantByLegacyClientId, legacyClientSecretOf, type MerchantRow } from '../../db/merchants.ts';
import { checkNotifyUrl } from '../../db/notify-url.ts';
import { findLiveOrderByMerchantOrderId } from '../../db/orders.sql.ts';
import { constantTimeEqual } from '../../db/secrets.ts';
import { presentLegacyOrder } from '../../db/present/orders.ts';
import { attemptedOrder, createOrderAndWait } from '../order-create.ts';
import { LegacyError, legacyMessages } from './errors.ts';

export const createBody = z.object({
  clientId: z.string().min(1),
  orderId: z.string().min(1).max(255),
  totalAmount: z.number().int().min(1).max(9_999_999_999_999),
  paymentType: z.string().min(1),
  signature: z.string().min(1),
  customerName: z.string().min(1).max(255),
  customerEmail: emailAddress().max(254).nullish(),
  customerPhone: z.string().regex(/^62\d{8,13}$/).nullish(),
  notifyUrl: notifyUrlField().nullish(),
  returnUrl: z.url({ protocol: /^https?$/ }).max(2048).nullish(),
});

export const queryBody = z.object({
  clientId: z.string().min(1),
  orderId: z.string().min(1).max(255),
  signature: z.string().min(1),
});

function parse<S extends z.ZodType>(schema: S, body: unknown): z.infer<S> {
  const result = schema.safeParse(body);
  if (!result.success) throw new LegacyError(400, legacyMessages.invalidParameters);
  return result.data;
}

export function sha512(text: string): string {
  return createHash('sha512').update(text, 'utf8').digest('hex');
}

async function authenticate(ctx: AppContext, req: Request, clientId: string, signature: string, signed: (secret: string) => string): Promise<MerchantRow> {
  req.legacyClientId = clientId;
  const refuse = (message: string) => {
    ctx.throttle.failed(req, 'legacy_signature');
    return new LegacyError(401, message);
  };
  const merchant = await findMerchantByLegacyClientId(ctx.pool, clientId);
  if (!merchant || merchant.status !== 'ACTIVE') throw refuse(legacyMessages.invalidClient);
  const expected = sha512(signed(legacyClientSecretOf(ctx.sealer, merchant)));
  if (!constantTimeEqual(expected, signature.toLowerCase())) throw refuse(legacyMessages.invalidSignature);
  return merchant;
}

function success(data: unknown) {
  return { code: 200, message: 'Success', data };
}

export function legacyOrderRoutes(ctx: AppContext): Router {
  const router = Router();

  router.post('/api/order/create', async (req: Request, res) => {
    const body = parse(createBody, req.body);
    const merchant = await authenticate(ctx, req, body.clientId, body.signature, (secret) =>
      `${body.clientId}|${body.orderId}|${body.totalAmount}|${secret}`,
    );
    if (body.paymentType !== 'QRIS') throw new LegacyError(400, legacyMessages.merchantSettingInvalid);
    if (body.notifyUrl && checkNotifyUrl(body.notifyUrl, ctx.config.NOTIFY_URL_ALLOWLIST)) {
      throw new LegacyError(400, legacyMessages.invalidParameters);
    }

    let outcome;
    try {
      outcome = await createOrderAndWait(ctx, {
        merchantId: merchant.id,
        merchantOrderId: body.orderId,
        api: 'LEGACY',
        amount: body.totalAmount,
        customerName: body.customerName,
        customerEmail: body.customerEmail ?? null,
        customerPhone: body.customerPhone ?? null,
        notifyUrl: body.notifyUrl ?? null,
        returnUrl: body.returnUrl ?? null,
        metadataJson: null,
        expireMinutes: 60,
        idempotency: null,
      });
    } catch (err) {
      // Any live order on this id (either API, any amount, confirmed or not) means "used".
      if (err instanceof ApiError && (err.code === 'MERCHANT_ORDER_ID_REUSED' || err.code === 'ORDER_PENDING_CONFIRMATION')) {
        throw new LegacyError(400, legacyMessages.orderIdUsed);
      }
      throw err;
    }
    if (outcome.kind !== 'attempted') throw new LegacyError(400, legacyMessages.orderIdUsed);
    const order = await attemptedOrder(ctx, outcome.orderId);
    if (!order || order.status === 'CREATING') {
      throw new LegacyError(503, 'Order is pending confirmation at the gateway; query it before retrying');
    }
    if (order.status === 'FAILED') {
      if (order.failure_code === 'NO_VENDOR') throw new LegacyError(400, legacyMessages.merchantSettingInvalid);
      throw new LegacyError(503, 'Payment gateway error; retry later');
    }
    res.status(200).json(success(presentLegacyOrder(order)));
  });

  router.post('/api/order/query', async (req, res) => {
    const body = parse(queryBody, req.body);
    const merchant = await authenticate(ctx, req, body.clientId, body.signature, (secret) => `${body.clientId}|${body.orderId}|${secret}`);
    const order = await findLiveOrderByMerchantOrderId(ctx.pool, merchant.id, body.orderId);
    if (!order || order.status === 'CREATING') throw new LegacyError(404, `Order with orderId ${body.orderId} not found.`);
    res.status(200).json(success(presentLegacyOrder(order)));
  });

  return router;
}
