// Beneficiaries as the contract shows them (spec 2.4). Kasir has no organisations: a merchant
// is an organisation of one, so organization_id is the merchant's id (docs/decisions.md).
import type { BeneficiaryRow } from '../beneficiaries.sql.ts';
import { iso } from './time.ts';

export function presentBeneficiary(b: BeneficiaryRow) {
  return {
    id: b.id,
    organization_id: b.merchant_id,
    merchant_id: b.merchant_id,
    label: b.label,
    channel: b.channel,
    bank_id: b.bank_id,
    bank_short_code: b.bank_short_code,
    account_number: b.account_number,
    account_name: b.account_name,
    ewallet_provider: b.ewallet_provider,
    ewallet_phone: b.ewallet_phone,
    verification_status: b.verification_status,
    verified_name: b.verified_name,
    is_default: b.is_default,
    is_enabled: b.is_enabled,
    created_at: iso(b.created_at),
    updated_at: iso(b.updated_at),
  };
}
