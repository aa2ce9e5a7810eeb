// Brands: the API domain decides which brand a caller sees, and a merchant belongs to exactly
// one brand. Unknown hosts resolve to the default brand (exactly one, by a partial unique index).
import { z } from 'zod';
import { sql, type Db } from './pool.ts';

const brandRow = z.object({
  id: z.string(),
  domain: z.string(),
  name: z.string(),
  logo_url: z.string().nullable(),
  support_email: z.string().nullable(),
  is_default: z.boolean(),
});
export type BrandRow = z.infer<typeof brandRow>;

const columns = sql.fragment`id, domain, name, logo_url, support_email, is_default`;

export async function listBrands(db: Db): Promise<readonly BrandRow[]> {
  return db.any(sql.type(brandRow)`select ${columns} from brands order by domain`);
}

export async function findBrandByDomain(db: Db, domain: string): Promise<BrandRow | null> {
  return db.maybeOne(sql.type(brandRow)`select ${columns} from brands where domain = ${domain.toLowerCase()}`);
}

export async function createBrand(
  db: Db,
  input: { domain: string; name: string; logoUrl: string | null; supportEmail: string | null },
): Promise<BrandRow> {
  return db.one(sql.type(brandRow)`
    insert into brands (domain, name, logo_url, support_email)
    values (${input.domain.toLowerCase()}, ${input.name}, ${input.logoUrl}, ${input.supportEmail})
    returning ${columns}`);
}

export async function defaultBrand(db: Db): Promise<BrandRow> {
  return db.one(sql.type(brandRow)`select ${columns} from brands where is_default`);
}
