// Banks and e-wallets as GET /v1/banks and GET /v1/ewallets show them. An e-wallet's logo_url
// is stored as a path on Kasir's own public base URL (or an absolute URL an operator chose) and
// is always answered absolute.
import type { BankRow, EwalletRow } from '../master-data.ts';

/** The spec leaves the bank record open: the e-wallet record's shape, with the BI code. */
export function presentBank(bank: BankRow) {
  return {
    id: bank.id,
    name: bank.name,
    short_code: bank.short_code,
    bi_code: bank.bi_code,
    is_enabled: bank.is_enabled,
    sort_order: bank.sort_order,
  };
}

export function presentEwallet(ewallet: EwalletRow, baseUrl: string) {
  return {
    id: ewallet.id,
    name: ewallet.name,
    short_code: ewallet.short_code,
    logo_url: ewallet.logo_url.startsWith('/') ? `${baseUrl}${ewallet.logo_url}` : ewallet.logo_url,
    is_enabled: ewallet.is_enabled,
    sort_order: ewallet.sort_order,
  };
}
