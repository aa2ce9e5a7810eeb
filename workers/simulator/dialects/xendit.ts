// The simulator speaking xendit's API: placeholder router until issue 18 lands the dialect.
import { Router } from 'express';
import type { DialectContext } from '../dialect.ts';

export function xenditDialect(_ctx: DialectContext): Router {
  return Router();
}
