// Brands: the API domain decides which brand a caller sees, and a merchant belongs to exactly
// one brand. Unknown hosts resolve to the default brand (exactly one, by a partial unique index).
// A merchant's key works only on its brand's domain, so its orders are all made under its brand,
// and the URLs they hand to payers are on that brand's domain (brandBaseUrl).
import { z } from 'zod';
import { sql, type Db } from './pool.ts';
import { idRow } from './row-shapes.ts';

const brandRow = z.object({
  id: z.string(),
  domain: z.string(),
  name: z.string(),
  logo_url: z.string().nullable(),
  support_email: z.string().nullable(),
  is_default: z.boolean(),
  /** The checkout page's language when the payer's browser names neither (api/checkout/page.ts). */
  checkout_language: z.enum(['id', 'en']),
});
export type BrandRow = z.infer<typeof brandRow>;

const columns = sql.fragment`id, domain, name, logo_url, support_email, is_default, checkout_language`;

export async function listBrands(db: Db): Promise<readonly BrandRow[]> {
  return db.any(sql.type(brandRow)`select ${columns} from brands order by domain`);
}

export async function findBrandByDomain(db: Db, domain: string): Promise<BrandRow | null> {
  return db.maybeOne(sql.type(brandRow)`select ${columns} from brands where domain = ${domain.toLowerCase()}`);
}

export async function createBrand(
  db: Db,
  input: { domain: string; name: string; logoUrl: string | null; supportEmail: string | null; checkoutLanguage?: 'id' | 'en' },
): Promise<BrandRow> {
  return db.one(sql.type(brandRow)`
    insert into brands (domain, name, logo_url, support_email, checkout_language)
    values (${input.domain.toLowerCase()}, ${input.name}, ${input.logoUrl}, ${input.supportEmail}, ${input.checkoutLanguage ?? 'id'})
    returning ${columns}`);
}

/** Sets a brand's checkout language; false when no brand has the domain. */
export async function setCheckoutLanguage(db: Db, domain: string, language: 'id' | 'en'): Promise<boolean> {
  const updated = await db.maybeOneFirst(sql.type(idRow)`
    update brands set checkout_language = ${language} where domain = ${domain.toLowerCase()} returning id`);
  return updated !== null;
}

export async function findBrandById(db: Db, id: string): Promise<BrandRow> {
  return db.one(sql.type(brandRow)`select ${columns} from brands where id = ${id}`);
}

/**
 * Where a brand's public pages live (the checkout page and QR image an order links to):
 * PUBLIC_BASE_URL for the default brand, else the same URL on the brand's domain. One deployment
 * serves every brand's domain, so scheme, port and path prefix are PUBLIC_BASE_URL's; only the
 * host differs, and the page on it shows that brand (api/checkout.ts resolves it from the Host).
 * A domain no URL can hold (never one brand:create accepts) falls back to PUBLIC_BASE_URL.
 */
export function brandBaseUrl(publicBaseUrl: string, brand: Pick<BrandRow, 'domain' | 'is_default'>): string {
  if (brand.is_default) return publicBaseUrl;
  const url = new URL(publicBaseUrl);
  url.hostname = brand.domain;
  if (url.hostname !== brand.domain) return publicBaseUrl;
  return url.href.replace(/\/$/, '');
}

export async function defaultBrand(db: Db): Promise<BrandRow> {
  return db.one(sql.type(brandRow)`select ${columns} from brands where is_default`);
}
