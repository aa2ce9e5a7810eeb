// Settlements as the contract shows them (spec 2.5), and their webhook body (the V1 object plus
// `event`, DESIGN 6). Pure functions of a row.
import type { SettlementRow } from '../settlements.sql.ts';
import { iso } from './time.ts';

export function presentSettlement(s: SettlementRow) {
  return {
    id: s.id,
    ref_code: s.ref_code,
    settlement_date: s.settlement_date,
    period_start: iso(s.period_start),
    period_end: iso(s.period_end),
    gross_amount: s.gross_amount,
    mdr_total: s.mdr_total,
    platform_fee: s.platform_fee,
    aggregator_fee: s.aggregator_fee,
    refund_total: s.refund_total,
    disbursement_fee: s.disbursement_fee,
    net_payout: s.net_payout,
    order_count: s.order_count,
    bank_id: s.bank_id,
    bank_short_code: s.bank_short_code,
    account_number: s.account_number,
    account_name: s.account_name,
    status: s.status,
    created_at: iso(s.created_at),
    updated_at: iso(s.updated_at),
  };
}

export function settlementWebhookBody(s: SettlementRow, event: string): Record<string, unknown> {
  return { ...presentSettlement(s), event };
}
