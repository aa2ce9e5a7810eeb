// The shape of an ops command. Each command declares its flags (node:util parseArgs), a zod
// schema that turns them into typed input, and a run function returning one result object:
// printed as JSON with --json, else as the command's human text.
import type { PgBoss } from 'pg-boss';
import type { z } from 'zod';
import type { Pool } from '../../db/pool.ts';
import type { Sealer } from '../../db/secrets.ts';

export interface OpsContext {
  pool(): Promise<Pool>;
  boss(): Promise<PgBoss>;
  sealer(): Sealer;
  databaseUrl: string;
}

export interface Command<S extends z.ZodType = z.ZodType> {
  name: string;
  summary: string;
  usage: string;
  flags: Record<string, { type: 'string' | 'boolean'; multiple?: boolean }>;
  /** Flags that take a secret: each also accepts --NAME-file PATH|- (scripts/ops/secret-input.ts). */
  secretFlags?: readonly string[];
  input: S;
  /** exitCode: non-zero for a result that is itself a failure (an audit that found problems). */
  run(ctx: OpsContext, input: z.infer<S>): Promise<{ json: unknown; text: string; exitCode?: number }>;
}

export function command<S extends z.ZodType>(c: Command<S>): Command<S> {
  return c;
}

/** A refusal the operator can act on: printed without a stack trace, exit code 1. */
export class OpsError extends Error {}
