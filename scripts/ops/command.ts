// The shape of an ops command. Each command declares its flags (node:util parseArgs), a schema
// that turns them into typed input (zod's, or for the lists a few checks of their own: see
// scripts/ops/lists.ts), and a run function returning one result object: printed as JSON with
// --json, else as the command's human text.
import type { PgBoss } from 'pg-boss';
import type { Pool } from '../../db/pool.ts';
import type { Reader } from '../../db/plain-reader.ts';
import type { Sealer } from '../../db/secrets.ts';

export interface OpsContext {
  pool(): Promise<Pool>;
  /** One plain node-postgres session, for reads that need nothing of slonik (db/operator-lists.ts). */
  reader(): Promise<Reader>;
  boss(): Promise<PgBoss>;
  sealer(): Promise<Sealer>;
  databaseUrl: string;
}

/** One problem with the flags, shaped as zod reports it (path: the flag, message: what is wrong). */
export interface InputIssue {
  path: readonly PropertyKey[];
  code: string;
  message: string;
}

/** What scripts/ops.ts asks of a command's input schema: zod's safeParse, or its shape. */
export interface InputSchema<T> {
  safeParse(values: unknown): { success: true; data: T } | { success: false; error: { issues: readonly InputIssue[] } };
}

export interface Command<T = any> {
  name: string;
  summary: string;
  usage: string;
  flags: Record<string, { type: 'string' | 'boolean'; multiple?: boolean }>;
  /** Flags that take a secret: each also accepts --NAME-file PATH|- (scripts/ops/secret-input.ts). */
  secretFlags?: readonly string[];
  input: InputSchema<T>;
  /** exitCode: non-zero for a result that is itself a failure (an audit that found problems). */
  run(ctx: OpsContext, input: T): Promise<{ json: unknown; text: string; exitCode?: number }>;
}

export function command<T>(c: Command<T>): Command<T> {
  return c;
}

/** A refusal the operator can act on: printed without a stack trace, exit code 1. */
export class OpsError extends Error {}
