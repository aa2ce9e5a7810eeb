// Kasir's bank short codes → the codes Iris takes as beneficiary_bank (its GET /beneficiary_banks
// list). Only codes seen in Midtrans's own SDK tests (mandiri, danamon) are confirmed; the rest
// follow Iris's lowercase naming and must be checked against the account's list before going
// live (docs/vendors/midtrans.md; `ops vendor:check` reports any that Iris does not list). A
// bank not here is refused before anything is sent.
export const IRIS_BANKS: Readonly<Record<string, string>> = {
  BCA: 'bca',
  MANDIRI: 'mandiri',
  BNI: 'bni',
  BRI: 'bri',
  CIMB: 'cimb',
  PERMATA: 'permata',
  DANAMON: 'danamon',
  BTN: 'btn',
  MEGA: 'mega',
  PANIN: 'panin',
};

/** The Iris code of a Kasir bank short code (case-insensitive), or null when none is known. */
export function irisBankOf(shortCode: string | null): string | null {
  if (!shortCode) return null;
  const key = shortCode.toUpperCase();
  return Object.hasOwn(IRIS_BANKS, key) ? IRIS_BANKS[key] : null;
}
