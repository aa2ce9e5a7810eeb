// A request id per request (the caller's X-Request-Id if sane, else a fresh one), echoed in the
// response and bound to one access-log line. Headers are not logged: they carry keys.
// The same finish hook feeds the request duration histogram, labelled with the Express route
// pattern that took the request (routers hold full paths), never the raw path: a path carries
// ref codes and ids, and every distinct label value is a time series.
import { randomUUID } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import { logger } from '../../db/logger.ts';
import { observeHttpRequest } from '../../db/metrics.ts';

const SANE_ID = /^[A-Za-z0-9._-]{1,100}$/;

declare module 'express-serve-static-core' {
  interface Request {
    /** The legacy API's clientId, once a legacy request names one (for the access log). */
    legacyClientId?: string;
  }
}

export function requestLog(req: Request, res: Response, next: NextFunction): void {
  const given = req.get('x-request-id');
  req.requestId = given && SANE_ID.test(given) ? given : randomUUID();
  res.setHeader('X-Request-Id', req.requestId);
  const started = process.hrtime.bigint();
  res.on('finish', () => {
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    const route: unknown = req.route?.path;
    observeHttpRequest(req.method, typeof route === 'string' ? route : 'unmatched', res.statusCode, ms / 1000);
    if (!logger.isLevelEnabled('info')) return;
    logger.info(
      {
        requestId: req.requestId,
        method: req.method,
        path: req.path,
        status: res.statusCode,
        ms,
        merchant: req.merchant?.id,
        // The client's address (X-Forwarded-For only from the proxies TRUST_PROXY names).
        ip: req.ip,
        ...(req.legacyClientId ? { legacyClientId: req.legacyClientId } : {}),
      },
      'request',
    );
  });
  next();
}
