// The simulator speaking SNAP BI: placeholder router until issue 20 lands the dialect.
import { Router } from 'express';
import type { DialectContext } from '../dialect.ts';

export function snapDialect(_ctx: DialectContext): Router {
  return Router();
}
