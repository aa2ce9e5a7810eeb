// Test data built through the same service functions the ops CLI uses.
import { randomBytes } from 'node:crypto';
import { createBrand } from '../../db/brands.ts';
import { createMerchant, setMerchantStatus, type MerchantStatus } from '../../db/merchants.ts';
import { defaultBrand } from '../../db/brands.ts';
import type { Pool } from '../../db/pool.ts';
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
