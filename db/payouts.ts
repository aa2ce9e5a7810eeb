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
