// Payouts as vendors see them: a reference Kasir sent, recorded with the kind of payout it
// belongs to (migration 016). A vendor's final word on a reference is applied to that payout
// by its kind; nothing parses a reference to guess what it is.
import type { PgBoss } from 'pg-boss';
import { z } from 'zod';
import { completeDisbursement } from './disbursements.ts';
import { sql, type Db } from './pool.ts';
import { completeSettlement } from './settlements.ts';

export type PayoutKindName = 'DISBURSEMENT' | 'SETTLEMENT';

export type PayoutCompletion =
  | { status: 'SUCCESS'; vendorDisbursementId: string | null }
  | { status: 'FAILED'; vendorDisbursementId: string | null; reason: string };

/** Records the reference a payout goes out under; a re-claim of the same reference is a no-op. */
export async function recordPayoutReference(db: Db, reference: string, kind: PayoutKindName, payoutId: string): Promise<void> {
  await db.query(sql.unsafe`
    insert into payout_references (reference, kind, payout_id) values (${reference}, ${kind}, ${payoutId})
    on conflict (reference) do nothing`);
}

export function findPayoutReference(db: Db, reference: string) {
  return db.maybeOne(sql.type(z.object({ kind: z.enum(['DISBURSEMENT', 'SETTLEMENT']), payout_id: z.string() }))`
    select kind, payout_id from payout_references where reference = ${reference}`);
}

/**
 * Applies a vendor's final word on a reference (a callback) to the payout recorded under it.
 * 'unknown' for a reference Kasir never sent.
 */
export async function completePayout(
  tx: Db,
  boss: PgBoss,
  reference: string,
  outcome: PayoutCompletion,
  source: string,
): Promise<'completed' | 'already_final' | 'unknown'> {
  const payout = await findPayoutReference(tx, reference);
  if (!payout) return 'unknown';
  if (payout.kind === 'DISBURSEMENT') return completeDisbursement(tx, boss, { id: payout.payout_id }, outcome, source);
  // By reference, not id: an answer about an earlier attempt of a retried settlement completes nothing.
  return completeSettlement(tx, boss, { reference }, outcome, source);
}

/**
 * The statements both payout tables share: the same vendor columns and the same life (waiting
 * for the worker, then in flight at a vendor). `waiting` are the statuses a quiet chain can be
 * stuck in.
 */
export function payoutStatements(table: 'disbursements' | 'settlements', waiting: readonly string[]) {
  const t = sql.identifier([table]);
  return {
    /** Records what the vendor said without a status change (its id, or that no call is pending). */
    noteVendorAnswer(db: Db, id: string, answer: { vendorDisbursementId: string | null; vendorCallPending: boolean }) {
      return db.query(sql.unsafe`
        update ${t}
        set vendor_disbursement_id = coalesce(${answer.vendorDisbursementId}, vendor_disbursement_id),
            vendor_call_pending = ${answer.vendorCallPending}, updated_at = now()
        where id = ${id}`);
    },
    /**
     * Payouts whose job chain has gone quiet (not picked up, or not heard of at the vendor) for
     * longer than a healthy chain ever stays quiet; each is touched so that it is picked again
     * only after another quiet period.
     */
    claimStale(db: Db, olderThanSeconds: number, limit: number) {
      return db.any(sql.type(z.object({ id: z.string(), status: z.string() }))`
        with stale as (
          select id from ${t}
          where status = any(${sql.array([...waiting], 'text')}) and updated_at < now() - make_interval(secs => ${olderThanSeconds})
          order by updated_at limit ${limit}
          for update skip locked
        )
        update ${t} p set updated_at = now() from stale where p.id = stale.id
        returning p.id, p.status`);
    },
  };
}
