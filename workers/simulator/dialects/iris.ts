// The simulator speaking iris's API: placeholder router until issue 18 lands the dialect.
import { Router } from 'express';
import type { DialectContext } from '../dialect.ts';

export function irisDialect(_ctx: DialectContext): Router {
  return Router();
}
