// The hosted checkout page: GET /pay/<ref_code> shows the payer the merchant's name, the amount,
// the QR (/qr/<token>.png) and a countdown, and follows the order through GET /pay/<ref>/status
// until it is paid (then on to the merchant's return_url through GET /pay/<ref>/return) or
// expired. No API key: the 50 random bits of a ref code are the capability, as the QR token is
// for the image. Only what a payer may know leaves here: merchant name, amount, and
// PENDING/PAID/EXPIRED with their times; customer fields, vendor details, metadata and the
// return URL itself (until paid) never do. REFUNDED is shown as PAID: the payer did pay, and a
// refund is between merchant and payer, told through the merchant's own channels.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Router, type Request, type Response } from 'express';
import type { AppContext } from './context.ts';
import { ApiError } from '../db/errors.ts';
import type { BrandRow } from '../db/brands.ts';
import { findCheckoutOrder, type CheckoutOrderRow } from '../db/orders.sql.ts';
import { checkoutPage, notFoundPage, pageLanguage, type PageAssets, type PageBrand } from './checkout/page.ts';
import { formatRupiah } from '../db/present/rupiah.ts';
import { iso } from '../db/present/time.ts';

export type PublicStatus = 'PENDING' | 'PAID' | 'EXPIRED';

/** The payer's view of an order's status; null for an order the page does not show. */
export function publicStatus(status: CheckoutOrderRow['status']): PublicStatus | null {
  switch (status) {
    case 'PENDING':
    case 'EXPIRED':
      return status;
    case 'PAID':
    case 'REFUNDED':
      return 'PAID';
    default:
      return null;
  }
}

/** An absolute http(s) URL without credentials, normalised, else null: a redirect target or a logo. */
export function absoluteHttpUrl(url: string | null): string | null {
  if (!url) return null;
  try {
    const parsed = new URL(url);
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return null;
    if (parsed.username || parsed.password) return null;
    return parsed.href;
  } catch {
    return null;
  }
}

interface Asset {
  body: Buffer;
  type: string;
  path: string;
}

function loadAsset(file: string, type: string): Asset {
  const body = readFileSync(new URL(`./checkout/${file}`, import.meta.url));
  const version = createHash('sha256').update(body).digest('base64url').slice(0, 12);
  return { body, type, path: `/pay/assets/${file}?v=${version}` };
}

const REF_SHAPE = /^[A-Za-z0-9-]{1,64}$/;

export function checkoutRoutes(ctx: AppContext): Router {
  const router = Router();
  const assets = {
    'checkout.js': loadAsset('checkout.js', 'text/javascript'),
    'checkout.css': loadAsset('checkout.css', 'text/css'),
    'favicon.svg': loadAsset('favicon.svg', 'image/svg+xml'),
  };
  const assetPaths: PageAssets = { script: assets['checkout.js'].path, style: assets['checkout.css'].path, icon: assets['favicon.svg'].path };

  // The file names carry a content hash (?v=), so a cached copy is always the one the page asked for.
  router.get('/pay/assets/:file', (req, res) => {
    const file = String(req.params.file);
    if (!Object.hasOwn(assets, file)) throw new ApiError('NOT_FOUND', 'No such asset');
    const asset = assets[file as keyof typeof assets];
    res.setHeader('Cache-Control', 'public, max-age=31536000, immutable');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.type(asset.type).send(asset.body);
  });

  router.get('/pay/:ref_code', async (req, res) => {
    const found = await visibleOrder(ctx, req);
    const brand = pageBrand(req.brand);
    const lang = pageLanguage(req.get('accept-language'), req.brand.checkout_language);
    securityHeaders(res, brand);
    res.setHeader('Vary', 'Accept-Language');
    res.setHeader('Content-Language', lang);
    if (!found) return void res.status(404).type('html').send(notFoundPage(brand, assetPaths, lang));
    const { row, status } = found;
    const ref = encodeURIComponent(row.ref_code);
    res.type('html').send(
      checkoutPage({
        brand,
        assets: assetPaths,
        ref: row.ref_code,
        merchantName: row.merchant_name,
        amountText: formatRupiah(row.amount),
        status,
        qrPath: row.has_qr ? `/qr/${row.qr_token}.png` : null,
        expiresAt: row.expires_at?.toISOString() ?? null,
        expiresInMs: row.expires_at ? row.expires_at.getTime() - Date.now() : null,
        statusPath: `/pay/${ref}/status`,
        returnPath: absoluteHttpUrl(row.return_url) ? `/pay/${ref}/return` : null,
      }, lang),
    );
  });

  router.get('/pay/:ref_code/status', async (req, res) => {
    const found = await visibleOrder(ctx, req);
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('Referrer-Policy', 'no-referrer');
    if (!found) throw new ApiError('NOT_FOUND', 'No such payment');
    res.json({
      status: found.status,
      paid_at: found.status === 'PAID' ? iso(found.row.paid_at) : null,
      expires_at: iso(found.row.expires_at),
    });
  });

  // The redirect happens here rather than in the page so the rule is the server's: only a paid
  // order leaves for its return_url, and only to an http(s) URL. Anything else goes back to the page.
  router.get('/pay/:ref_code/return', async (req, res) => {
    const found = await visibleOrder(ctx, req);
    const brand = pageBrand(req.brand);
    securityHeaders(res, brand);
    if (!found) return void res.status(404).type('html').send(notFoundPage(brand, assetPaths, pageLanguage(req.get('accept-language'), req.brand.checkout_language)));
    const target = found.status === 'PAID' ? absoluteHttpUrl(found.row.return_url) : null;
    res.redirect(303, target ?? `/pay/${encodeURIComponent(found.row.ref_code)}`);
  });

  return router;
}

async function visibleOrder(ctx: AppContext, req: Request): Promise<{ row: CheckoutOrderRow; status: PublicStatus } | null> {
  const ref = String(req.params.ref_code);
  const row = REF_SHAPE.test(ref) ? await findCheckoutOrder(ctx.pool, ref) : null;
  const status = row ? publicStatus(row.status) : null;
  return row && status ? { row, status } : null;
}

function pageBrand(brand: BrandRow): PageBrand {
  return { name: brand.name, logoUrl: absoluteHttpUrl(brand.logo_url), supportEmail: brand.support_email };
}

/**
 * Same-origin everything: the script and style are Kasir's own files (no inline code, so no
 * nonce), images are the QR plus the brand's logo host. No framing (a payment page inside
 * someone else's frame invites clickjacking), no referrer (the URL is the capability), no caching.
 */
function securityHeaders(res: Response, brand: PageBrand) {
  const logoOrigin = brand.logoUrl ? ` ${new URL(brand.logoUrl).origin}` : '';
  res.setHeader(
    'Content-Security-Policy',
    `default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'${logoOrigin}; connect-src 'self'; ` +
      `base-uri 'none'; form-action 'none'; frame-ancestors 'none'`,
  );
  res.setHeader('Referrer-Policy', 'no-referrer');
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('X-Frame-Options', 'DENY');
}
