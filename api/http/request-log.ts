// A request id per request (the caller's X-Request-Id if sane, else a fresh one), echoed in the
// response and bound to one access-log line. Headers are not logged: they carry keys.
import { randomUUID } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import { logger } from '../../db/logger.ts';

const SANE_ID = /^[A-Za-z0-9._-]{1,100}$/;

export function requestLog(req: Request, res: Response, next: NextFunction): void {
  const given = req.get('x-request-id');
  req.requestId = given && SANE_ID.test(given) ? given : randomUUID();
  res.setHeader('X-Request-Id', req.requestId);
  const started = process.hrtime.bigint();
  res.on('finish', () => {
    if (!logger.isLevelEnabled('info')) return;
    logger.info(
      {
        requestId: req.requestId,
        method: req.method,
        path: req.path,
        status: res.statusCode,
        ms: Number(process.hrtime.bigint() - started) / 1e6,
        merchant: req.merchant?.id,
      },
      'request',
    );
  });
  next();
}
