// Brand resolution from the Host header. Brands change rarely and every request needs one,
// so each host's answer (including "unknown host: default brand") is cached for a few seconds:
// a brand created by the ops CLI is seen by every API process within BRAND_CACHE_MS.
import type { NextFunction, Request, Response } from 'express';
import { defaultBrand, findBrandByDomain, type BrandRow } from '../../db/brands.ts';
import type { Db } from '../../db/pool.ts';

const BRAND_CACHE_MS = 5_000;

export function hostOf(req: Request): string {
  const host = String(req.headers.host ?? '').toLowerCase();
  // Strip the port, keeping bracketed IPv6 literals whole.
  return host.startsWith('[') ? host.slice(0, host.indexOf(']') + 1) : host.split(':')[0];
}

export function brandResolver(db: Db) {
  const cache = new Map<string, { brand: BrandRow; until: number }>();

  async function resolve(host: string): Promise<BrandRow> {
    const hit = cache.get(host);
    if (hit && hit.until > Date.now()) return hit.brand;
    const brand = (host && (await findBrandByDomain(db, host))) || (await defaultBrand(db));
    if (cache.size > 10_000) cache.clear(); // unbounded Host values must not grow memory
    cache.set(host, { brand, until: Date.now() + BRAND_CACHE_MS });
    return brand;
  }

  return async (req: Request, _res: Response, next: NextFunction) => {
    req.brand = await resolve(hostOf(req));
    next();
  };
}

export function presentBrand(brand: BrandRow) {
  return {
    name: brand.name,
    domain: brand.domain,
    logo_url: brand.logo_url,
    support_email: brand.support_email,
  };
}
