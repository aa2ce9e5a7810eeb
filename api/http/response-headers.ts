// Headers every answer of the API carries by default. JSON answers hold merchants' data (orders,
// balances, customers): no browser or proxy may keep a copy (no-store), and no browser may read
// one as another type, such as HTML (nosniff). Routes serving what may be cached — the QR PNG,
// checkout assets, master data, the docs — set their own Cache-Control afterwards, which replaces
// this default; the error handler puts no-store back on any error.
// HSTS only when PUBLIC_BASE_URL is https (TLS then ends at Kasir or its load balancer): one
// year, without includeSubDomains or preload, which would bind the operator's other hosts too.
import type { NextFunction, Request, Response } from 'express';

const HSTS = 'max-age=31536000';

export function defaultHeaders(publicBaseUrl: string) {
  const https = new URL(publicBaseUrl).protocol === 'https:';
  return (_req: Request, res: Response, next: NextFunction): void => {
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Cache-Control', 'no-store');
    if (https) res.setHeader('Strict-Transport-Security', HSTS);
    next();
  };
}
