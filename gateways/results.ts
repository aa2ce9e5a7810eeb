// The Outcome constructors every connector answers with, and the "not found" answers of the
// reads, written once (Kasir's side; the simulator's dialects never import this).
import type { DisbursementStatus, Outcome, QrisStatus } from './gateway.ts';

export const ok = <T>(value: T): Outcome<T> => ({ kind: 'ok', value });
/** The vendor surely did nothing: the caller may try the next vendor. */
export const failed = (reason: string): Outcome<never> => ({ kind: 'failed', reason });
/** The bank names another account holder than the payout's, which did not accept that: no vendor may pay it. */
export const nameMismatch = (reason: string): Outcome<never> => ({ kind: 'failed', reason, payoutRefusal: 'ACCOUNT_NAME_MISMATCH' });
/** The vendor may have acted: never sent elsewhere, settled by reading this vendor. */
export const unknown = (reason: string): Outcome<never> => ({ kind: 'unknown', reason });
/** The vendor may have acted and no read at it can tell: an operator settles it (gateway.ts, the rule). */
export const unresolvable = (reason: string): Outcome<never> => ({ kind: 'unknown', reason, unresolvable: true });

/** A QR read's answer when the vendor proves it never took the reference. */
export const QR_NOT_FOUND: QrisStatus = Object.freeze({ status: 'NOT_FOUND', vendorOrderId: null, qrisString: null, paidAt: null, rrn: null, amount: null });
/** A payout read's answer when the vendor proves it never took the reference. */
export const PAYOUT_NOT_FOUND: DisbursementStatus = Object.freeze({ status: 'NOT_FOUND', vendorDisbursementId: null, failureReason: null });

/** A header's single value by case-insensitive name (null when absent or repeated). */
export function headerOf(headers: Record<string, string | string[] | undefined>, name: string): string | null {
  for (const [key, value] of Object.entries(headers)) if (key.toLowerCase() === name) return typeof value === 'string' ? value : null;
  return null;
}

/**
 * Runs `work` over `items` with at most `inFlight` calls at once, answers in the items' order:
 * a day's record-by-record reads at a vendor without a list, polite to its rate limits.
 */
export async function inBatches<T, R>(items: readonly T[], work: (item: T) => Promise<R>, inFlight: number): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(inFlight, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        results[i] = await work(items[i]);
      }
    }),
  );
  return results;
}
