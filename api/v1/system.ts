// Unauthenticated endpoints: GET /healthz (a bare {status, db} as load balancers and probes
// expect, plus `sandbox: true` while a vendor is marked --sandbox; 503 when Postgres is
// unreachable) and GET /v1/brand (brand of the calling domain).
import { Router, type Request, type Response } from 'express';
import type { AppContext } from '../context.ts';
import { sendData } from '../http/envelope.ts';
import { presentBrand } from '../http/brand.ts';
import { sandboxVendorCodes } from '../../db/vendors.ts';

const HEALTH_TIMEOUT_MS = 2_000;

/** Mounted before brand resolution, which itself needs the database. */
export function healthCheck(ctx: AppContext) {
  return async (_req: Request, res: Response) => {
    // The read that proves Postgres answers is the one that says whether a vendor's sandbox is
    // wired in: a payment simulated in its dashboard credits wallets with no money received.
    const sandboxVendors = await Promise.race([
      sandboxVendorCodes(ctx.pool).catch(() => null),
      new Promise<null>((resolve) => setTimeout(resolve, HEALTH_TIMEOUT_MS, null).unref()),
    ]);
    const ok = sandboxVendors !== null;
    res.status(ok ? 200 : 503).json({
      status: ok ? 'ok' : 'unavailable',
      db: ok ? 'ok' : 'unreachable',
      ...(sandboxVendors?.length ? { sandbox: true } : {}),
    });
  };
}

export function brandRoutes(): Router {
  const router = Router();
  router.get('/v1/brand', (req, res) => sendData(res, presentBrand(req.brand)));
  return router;
}
