// Disbursements as the contract shows them: V1 (spec 2.3), legacy (2.9, decimal strings and
// WIB times), and the webhook body of each (DESIGN 6: V1 object plus `event`; legacy-created
// ones in the legacy query shape). Pure functions of a row.
import type { DisbursementRow } from '../disbursements.sql.ts';
import { iso, wib } from './time.ts';

export function presentDisbursement(d: DisbursementRow) {
  return {
    id: d.id,
    ref_code: d.ref_code,
    idempotency_key: d.idempotency_key,
    channel: d.channel,
    bank_id: d.bank_id,
    bank_short_code: d.bank_short_code,
    account_number: d.account_number,
    account_name: d.account_name,
    ewallet_provider: d.ewallet_provider,
    ewallet_phone: d.ewallet_phone,
    request_amount: d.request_amount,
    fee: d.fee,
    final_amount: d.request_amount,
    total_debit: d.total_debit,
    vendor_disbursement_id: d.vendor_disbursement_id,
    source: d.source,
    status: d.status,
    // Why a FAILED one failed (ACCOUNT_NAME_MISMATCH, the vendor's code, NO_VENDOR...): not in
    // spec 2.3, added so a merchant can act on it. Null otherwise (a REJECTED one's reason is
    // the operator's note, not the merchant's to read).
    failure_reason: d.status === 'FAILED' ? d.failure_reason : null,
    requested_at: iso(d.requested_at),
    created_at: iso(d.created_at),
  };
}

/** Whole Rupiah as the legacy API writes amounts: "150000.00". */
export function legacyAmount(rupiah: number): string {
  return `${rupiah}.00`;
}

/** The legacy e-wallet account number: the local 08… form of the stored 62… phone. */
export function legacyPhone(phone: string | null): string | null {
  return phone === null ? null : phone.startsWith('62') ? `0${phone.slice(2)}` : phone;
}

export function presentLegacyDisbursement(d: DisbursementRow) {
  const amounts = {
    requestAmount: legacyAmount(d.request_amount),
    disbursementFee: legacyAmount(d.fee),
    disbursementAmount: legacyAmount(d.request_amount),
    status: d.status,
    requestAt: wib(d.requested_at),
  };
  if (d.channel === 'BANK') {
    return {
      refCode: d.ref_code,
      orderId: d.idempotency_key,
      accountNumber: d.account_number,
      accountName: d.account_name,
      bank: { name: d.bank_name, code: d.bank_short_code },
      method: 'BANK_ACCOUNT',
      ...amounts,
    };
  }
  return {
    refCode: d.ref_code,
    orderId: d.idempotency_key,
    method: 'EWALLET',
    ewallet: { code: d.ewallet_provider, accountNumber: legacyPhone(d.ewallet_phone) },
    ...amounts,
  };
}

/**
 * The answer to a legacy create (spec 4.10): a bank create lists no `method` (only the query of
 * a bank disbursement shows BANK_ACCOUNT); an e-wallet create shows method EWALLET. Otherwise
 * the query shape. Status is PENDING, or IN_REVIEW above the merchant's review threshold.
 */
export function presentLegacyDisbursementCreated(d: DisbursementRow) {
  const shown = presentLegacyDisbursement(d);
  if (d.channel !== 'BANK') return shown;
  const { method: _method, ...bank } = shown;
  return bank;
}

export function disbursementWebhookBody(d: DisbursementRow, event: string): Record<string, unknown> {
  return d.api === 'LEGACY' ? presentLegacyDisbursement(d) : { ...presentDisbursement(d), event };
}
