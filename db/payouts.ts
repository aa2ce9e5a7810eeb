// Payouts as vendors see them: a reference Kasir sent, recorded with the kind of payout it
// belongs to (migration 016). A vendor's final word on a reference is applied to that payout
// by its kind; nothing parses a reference to guess what it is.
import type { PgBoss } from 'pg-boss';
import { z } from 'zod';
import { completeDisbursement, returnDisbursement } from './disbursements.ts';
import { lockDisbursement } from './disbursements.sql.ts';
import type { PayoutCompletion } from './payout-outcome.ts';
import { sql, type Db, type Pool } from './pool.ts';
import { completeSettlement } from './settlements.ts';
import type { Speaker } from './vendor-binding.ts';

export type PayoutKindName = 'DISBURSEMENT' | 'SETTLEMENT';

/**
 * Records the reference a payout goes out under and the vendor it is about to be sent to; the
 * same reference claimed again (for the next vendor, or the same one after a crash) adds its
 * vendor once.
 */
export async function recordPayoutReference(db: Db, reference: string, kind: PayoutKindName, payoutId: string, vendorCode: string): Promise<void> {
  await db.query(sql.unsafe`
    insert into payout_references (reference, kind, payout_id, vendors) values (${reference}, ${kind}, ${payoutId}, array[${vendorCode}]::text[])
    on conflict (reference) do update
      set vendors = case when ${vendorCode} = any(payout_references.vendors) then payout_references.vendors
                         else array_append(payout_references.vendors, ${vendorCode}) end`);
}

const findPayoutReferenceRow = z.object({ kind: z.enum(['DISBURSEMENT', 'SETTLEMENT']), payout_id: z.string(), vendors: z.array(z.string()) });

/** A reference Kasir sent: its payout, and the vendors it was sent to (empty: not known, sent before they were kept). */
export function findPayoutReference(db: Db, reference: string) {
  return db.maybeOne(sql.type(findPayoutReferenceRow)`
    select kind, payout_id, vendors from payout_references where reference = ${reference}`);
}

/**
 * Applies a vendor's final word on a reference (a callback) to the payout recorded under it,
 * bound to the vendor holding it (db/vendor-binding.ts). 'unknown' for a reference Kasir never sent.
 */
export async function completePayout(
  tx: Db,
  boss: PgBoss,
  reference: string,
  outcome: PayoutCompletion,
  speaker: Speaker,
): Promise<'completed' | 'already_final' | 'contradicted' | 'not_its_record' | 'unknown'> {
  const payout = await findPayoutReference(tx, reference);
  if (!payout) return 'unknown';
  if (payout.kind === 'DISBURSEMENT') return completeDisbursement(tx, boss, { id: payout.payout_id }, outcome, speaker);
  // By reference, not id: an answer about an earlier attempt of a retried settlement completes
  // nothing (a payment of one is recorded as a contradiction, bound to the vendors it went to).
  return completeSettlement(tx, boss, { reference }, outcome, speaker);
}

/**
 * A vendor's read shows a payout it had completed reversed (the money is back at the vendor):
 * a disbursement returns its debit to the wallet once (returnDisbursement). A settlement payout is
 * not returned on its own: the vendor's FAILED against PAID is recorded as a contradiction for
 * an operator (vendor:conflicts), as before; one still in flight simply fails.
 */
export async function returnPayout(
  tx: Db,
  boss: PgBoss,
  reference: string,
  outcome: { vendorDisbursementId: string | null; reason: string },
  speaker: Speaker,
): Promise<'completed' | 'already_final' | 'contradicted' | 'not_its_record' | 'unknown'> {
  const payout = await findPayoutReference(tx, reference);
  if (!payout) return 'unknown';
  if (payout.kind === 'DISBURSEMENT') return returnDisbursement(tx, boss, { id: payout.payout_id }, outcome, speaker);
  return completeSettlement(tx, boss, { reference }, { status: 'FAILED', ...outcome }, speaker);
}

const payoutStatusRow = z.object({ id: z.string(), status: z.string() });

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
    /** No read at the vendor can settle this payout: it waits for an operator (ops payouts:settle). */
    markUnresolved(db: Db, id: string, reason: string) {
      return db.query(sql.unsafe`
        update ${t} set unresolved_at = now(), unresolved_reason = ${reason.slice(0, 500)}, updated_at = now()
        where id = ${id} and status = any(${sql.array([...waiting], 'text')})`);
    },
    /**
     * Payouts whose job chain has gone quiet (not picked up, or not heard of at the vendor) for
     * longer than a healthy chain ever stays quiet; each is touched so that it is picked again
     * only after another quiet period.
     */
    claimStale(db: Db, olderThanSeconds: number, limit: number) {
      return db.any(sql.type(payoutStatusRow)`
        with stale as (
          select id from ${t}
          where status = any(${sql.array([...waiting], 'text')}) and unresolved_at is null
            and updated_at < now() - make_interval(secs => ${olderThanSeconds})
          order by updated_at limit ${limit}
          for update skip locked
        )
        update ${t} p set updated_at = now() from stale where p.id = stale.id
        returning p.id, p.status`);
    },
  };
}

/** Why an operator may not settle a payout by hand. */
export class SettleRefused extends Error {}

/**
 * An operator settles a payout that is in flight at a vendor which lost it (reconciliation keeps
 * hearing "not found" after the vendor had accepted it): SUCCESS when the money provably
 * arrived, FAILED when it provably did not (the debit returns, once). The reason and the
 * vendor's evidence are kept with the outcome. Only an in-flight payout can be settled: one
 * waiting, in review or already final is refused, so no money moves twice.
 */
export async function settlePayoutByHand(
  pool: Pool,
  boss: PgBoss,
  ref: string,
  outcome: { status: 'SUCCESS' | 'FAILED'; reason: string; evidence: string | null; vendorDisbursementId: string | null },
): Promise<{ kind: PayoutKindName; id: string; status: string }> {
  const source = { kasir: 'operator' };
  const note = `settled by an operator: ${outcome.reason}${outcome.evidence ? ` (evidence: ${outcome.evidence})` : ''}`;
  const completion: PayoutCompletion =
    outcome.status === 'SUCCESS'
      ? { status: 'SUCCESS', vendorDisbursementId: outcome.vendorDisbursementId }
      : { status: 'FAILED', vendorDisbursementId: outcome.vendorDisbursementId, reason: `OPERATOR: ${note}` };
  return pool.transaction(async (tx) => {
    if (ref.startsWith('DSB-')) {
      const d = await lockDisbursement(tx, { refCode: ref });
      if (!d) throw new SettleRefused(`no disbursement ${ref}`);
      if (d.status !== 'ON_PROCESS') throw new SettleRefused(`disbursement ${ref} is ${d.status}: only one ON_PROCESS at a vendor can be settled by hand`);
      await completeDisbursement(tx, boss, { id: d.id }, completion, source, { operator_reason: outcome.reason, evidence: outcome.evidence });
      return { kind: 'DISBURSEMENT' as const, id: d.id, status: outcome.status };
    }
    const s = await tx.maybeOne(sql.type(payoutStatusRow)`
      select id, status from settlements where ref_code = ${ref} for update`);
    if (!s) throw new SettleRefused(`no settlement ${ref}`);
    if (s.status !== 'PROCESSING') throw new SettleRefused(`settlement ${ref} is ${s.status}: only one PROCESSING at a vendor can be settled by hand`);
    await completeSettlement(tx, boss, { id: s.id }, completion, source);
    return { kind: 'SETTLEMENT' as const, id: s.id, status: outcome.status === 'SUCCESS' ? 'PAID' : 'FAILED' };
  });
}
