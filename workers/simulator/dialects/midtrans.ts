// The simulator speaking midtrans's API: placeholder router until issue 18 lands the dialect.
import { Router } from 'express';
import type { DialectContext } from '../dialect.ts';

export function midtransDialect(_ctx: DialectContext): Router {
  return Router();
}
