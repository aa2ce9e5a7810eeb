// Idempotency-Key for V1 POSTs other than order creation (docs/decisions.md): Stripe's rules.
// - The same key and body get the stored answer, byte for byte.
// - The same key with another body (or on another endpoint) is refused: IDEMPOTENCY_KEY_REUSED.
// - A concurrent repeat waits: the first request's uncommitted claim holds the key's index
//   entry, so the second INSERT blocks until the first commits (then it replays) or rolls back
//   (then it does the work itself).
// Only successful answers are stored: the claim is written in the transaction that does the
// work, so a refusal (422, 409, ...) rolls it back and a retry is judged afresh.
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { sql, type Db } from './pool.ts';
import { ApiError } from './errors.ts';
import type { Pool } from './pool.ts';
import { constantTimeEqual } from './secrets.ts';
import { countRow } from './row-shapes.ts';

export interface IdempotentRequest {
  merchantId: string;
  key: string;
  /** The endpoint, e.g. 'refund:ORD-…': part of what the key promises. */
  operation: string;
  rawBody: Buffer;
}

export type Claim = { kind: 'fresh' } | { kind: 'replay'; status: number; body: string };

const held = z.object({ operation: z.string(), request_hash: z.instanceof(Buffer), response_status: z.number(), response_body: z.string() });

const hashOf = (r: IdempotentRequest) => createHash('sha256').update(r.operation).update('\n').update(r.rawBody).digest();

const claimKeyRow = z.object({ claimed: z.boolean() });

/**
 * Claims the key inside `tx` (with a placeholder answer that `storeAnswer` replaces before the
 * commit), or returns the answer stored for it. Throws IDEMPOTENCY_KEY_REUSED on a mismatch.
 */
export async function claimKey(tx: Db, r: IdempotentRequest): Promise<Claim> {
  const hash = hashOf(r);
  const claimed = await tx.maybeOneFirst(sql.type(claimKeyRow)`
    insert into idempotent_responses (merchant_id, key, operation, request_hash, response_status, response_body)
    values (${r.merchantId}, ${r.key}, ${r.operation}, ${sql.binary(hash)}, 0, '')
    on conflict do nothing
    returning true as claimed`);
  if (claimed) return { kind: 'fresh' };
  const row = await tx.maybeOne(sql.type(held)`
    select operation, request_hash, response_status, response_body from idempotent_responses
    where merchant_id = ${r.merchantId} and key = ${r.key}`);
  // Deleted by the sweep between the two statements (a key past its TTL): claim it afresh.
  if (!row) return claimKey(tx, r);
  if (!constantTimeEqual(row.request_hash, hash)) throw new ApiError('IDEMPOTENCY_KEY_REUSED');
  return { kind: 'replay', status: row.response_status, body: row.response_body };
}

/** Stores the answer for a fresh claim, in the same transaction as the work. */
export async function storeAnswer(tx: Db, r: Pick<IdempotentRequest, 'merchantId' | 'key'>, status: number, body: string): Promise<void> {
  await tx.query(sql.unsafe`
    update idempotent_responses set response_status = ${status}, response_body = ${body}
    where merchant_id = ${r.merchantId} and key = ${r.key}`);
}

/** Deletes up to `limit` answers older than `olderThanHours`; returns how many (the sweep). */
export function deleteAnswersOlderThan(db: Db, olderThanHours: number, limit: number) {
  return deleteKeysOlderThan(db, 'idempotent_responses', olderThanHours, limit);
}

/**
 * Deletes up to `limit` rows of a key table (primary key merchant_id, key) created more than
 * `olderThanHours` ago, oldest first over its created_at index; returns how many. SKIP LOCKED:
 * a key some request holds is left for the next pass.
 */
export function deleteKeysOlderThan(db: Db, table: 'idempotent_responses' | 'idempotency_keys', olderThanHours: number, limit: number) {
  const t = sql.identifier([table]);
  return db.oneFirst(sql.type(countRow)`
    with old as (
      select merchant_id as old_merchant_id, key as old_key from ${t}
      where created_at < now() - make_interval(hours => ${olderThanHours})
      order by created_at
      limit ${limit}
      for update skip locked
    ), deleted as (
      delete from ${t} using old where merchant_id = old_merchant_id and key = old_key
      returning 1
    )
    select count(*)::int as n from deleted`);
}

/** A stored or fresh answer: the V1 envelope's bytes and its status. */
export interface Answer {
  status: number;
  body: string;
  /** The stored answer of an earlier request with the same key. */
  replayed: boolean;
}

/**
 * Runs `work` in one transaction with the key's claim and its answer, so the answer a client
 * may lose is the one a retry gets: without a key, it just runs. `work` receives the open
 * transaction and must do all its writes in it (a data function given `tx` nests in it).
 */
export function idempotent(pool: Pool, request: IdempotentRequest | null, work: (tx: Db) => Promise<{ status: number; body: string }>): Promise<Answer> {
  return pool.transaction(async (tx) => {
    if (request) {
      const claim = await claimKey(tx, request);
      if (claim.kind === 'replay') return { status: claim.status, body: claim.body, replayed: true };
    }
    const answer = await work(tx);
    if (request) await storeAnswer(tx, request, answer.status, answer.body);
    return { ...answer, replayed: false };
  });
}
