// Whether two spellings name the same account holder: the name a merchant typed and the one the
// bank gave in an account inquiry. Banks spell names their own way (capitals, dots, a title the
// merchant left out), so names are compared after normalising case, punctuation, spacing and
// common Indonesian titles and degrees; anything else that differs is a different holder.
// Pure, so the verify worker, the disbursement rules and the connectors share one reading.

/** Titles and degrees that banks add or drop, compared without their dots (S.Kom → SKOM). */
const TITLES = new Set([
  'BAPAK', 'BPK', 'BP', 'IBU', 'SDR', 'SDRI', 'SAUDARA', 'SAUDARI', 'TUAN', 'TN', 'NYONYA', 'NY', 'NONA', 'NN',
  'MR', 'MRS', 'MS', 'MISS', 'DR', 'DRS', 'DRA', 'IR', 'PROF', 'H', 'HJ', 'HAJI', 'HAJJAH',
  'SE', 'SH', 'SKOM', 'ST', 'SPD', 'SSOS', 'SAB', 'SSI', 'AMD', 'MM', 'MBA', 'MSC', 'MKOM', 'MT', 'MPD',
]);

/** The words of a name that identify its holder: upper case, letters and digits only, no titles. */
export function holderWords(name: string): string[] {
  return name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toUpperCase()
    .replace(/[.,'`’]/g, '')
    .split(/[^A-Z0-9]+/)
    .filter((word) => word.length > 0 && !TITLES.has(word));
}

/** Whether two names are the same holder once normalised (never true for a name with no words left). */
export function sameHolder(a: string, b: string): boolean {
  const left = holderWords(a).join(' ');
  return left.length > 0 && left === holderWords(b).join(' ');
}
