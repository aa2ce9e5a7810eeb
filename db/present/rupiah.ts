// Rupiah as Indonesians write it: "Rp150.000" (thousands separated by '.', no decimals, no space).
// Written out rather than through Intl, whose id-ID output ("Rp 150.000" with a no-break space)
// depends on the ICU data the runtime ships.

/** `formatRupiah(150000)` → `"Rp150.000"`. Amounts are whole rupiah (integers). */
export function formatRupiah(amount: number): string {
  if (!Number.isSafeInteger(amount)) throw new RangeError(`not a whole rupiah amount: ${amount}`);
  const digits = String(Math.abs(amount));
  const grouped = digits.replace(/\B(?=(\d{3})+$)/g, '.');
  return `${amount < 0 ? '-' : ''}Rp${grouped}`;
}
