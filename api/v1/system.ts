// Unauthenticated endpoints: GET /healthz (a bare {status, db} as load balancers and probes
// expect; 503 when Postgres is unreachable) and GET /v1/brand (brand of the calling domain).
import { Router, type Request, type Response } from 'express';
import type { AppContext } from '../context.ts';
import { sendData } from '../http/envelope.ts';
import { presentBrand } from '../http/brand.ts';
import { sql } from '../../db/pool.ts';

const HEALTH_TIMEOUT_MS = 2_000;

/** Mounted before brand resolution, which itself needs the database. */
export function healthCheck(ctx: AppContext) {
  return async (_req: Request, res: Response) => {
    const ok = await Promise.race([
      ctx.pool.oneFirst(sql.unsafe`select 1`).then(() => true, () => false),
      new Promise<boolean>((resolve) => setTimeout(resolve, HEALTH_TIMEOUT_MS, false).unref()),
    ]);
    res.status(ok ? 200 : 503).json({ status: ok ? 'ok' : 'unavailable', db: ok ? 'ok' : 'unreachable' });
  };
}

export function brandRoutes(): Router {
  const router = Router();
  router.get('/v1/brand', (req, res) => sendData(res, presentBrand(req.brand)));
  return router;
}
