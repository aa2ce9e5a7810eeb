// Wallet movements as the V1 API shows them (DESIGN 6: balance movement record).
import type { MovementRow } from '../ledger.sql.ts';
import { iso } from './time.ts';

export function presentMovement(m: MovementRow) {
  return {
    id: m.id,
    type: m.type,
    amount: m.amount,
    balance_before: m.balance_before,
    balance_after: m.balance_after,
    reference_type: m.reference_type,
    reference_id: m.reference_id,
    ref_code: m.ref_code,
    description: m.description,
    created_at: iso(m.created_at),
  };
}
