// Test data built through the same service functions the ops CLI uses.
import { randomBytes, randomUUID } from 'node:crypto';
import { createBrand } from '../../db/brands.ts';
import { createMerchant, setMerchantStatus, type MerchantStatus } from '../../db/merchants.ts';
import { defaultBrand } from '../../db/brands.ts';
import type { NewOrder } from '../../db/orders.sql.ts';
import type { Pool } from '../../db/pool.ts';
import { newQrToken, newRefCode } from '../../db/ref-codes.ts';
import type { Sealer } from '../../db/secrets.ts';

export interface MerchantOptions {
  settlement?: 'WALLET' | 'MANUAL';
  webhookSecret?: string | null;
  notifyUrl?: string | null;
  brandId?: string;
  status?: MerchantStatus;
}

export async function makeMerchant(ctx: { pool: Pool; sealer: Sealer }, options: MerchantOptions = {}) {
  const brandId = options.brandId ?? (await defaultBrand(ctx.pool)).id;
  const merchant = await createMerchant(ctx.pool, ctx.sealer, {
    name: `Toko ${randomBytes(3).toString('hex')}`,
    settlementType: options.settlement ?? 'WALLET',
    brandId,
    webhookSecret: options.webhookSecret ?? null,
    notifyUrl: options.notifyUrl ?? null,
  });
  if (options.status && options.status !== 'ACTIVE') await setMerchantStatus(ctx.pool, merchant.merchant_id, options.status);
  return merchant;
}

export async function makeBrand(ctx: { pool: Pool }, domain = `${randomBytes(4).toString('hex')}.example.test`) {
  return createBrand(ctx.pool, { domain, name: `Brand ${domain}`, logoUrl: `https://${domain}/logo.png`, supportEmail: `help@${domain}` });
}

/** A V1 create attempt as the API builds it, for tests that call the create's statements directly. */
export function newAttempt(merchantId: string, merchantOrderId = `INV-${randomUUID()}`): NewOrder {
  return {
    id: randomUUID(),
    merchantId,
    refCode: newRefCode('ORD'),
    merchantOrderId,
    api: 'V1',
    amount: 15_000,
    customerName: null,
    customerEmail: null,
    customerPhone: null,
    notifyUrl: null,
    returnUrl: null,
    metadataJson: null,
    expireMinutes: 15,
    qrToken: newQrToken(),
  };
}
