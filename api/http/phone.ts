// Indonesian phone numbers for V1: accept 08…, 8…, +62…, 62… with spaces, dashes, dots or
// parentheses, and store the international form: 62 followed by digits only.
const SEPARATORS = /[\s\-.()]/g;

export function normalizePhone(input: string): string | null {
  const compact = input.replace(SEPARATORS, '');
  if (!/^\+?\d+$/.test(compact)) return null;
  const digits = compact.replace(/^\+/, '');
  let national: string;
  if (digits.startsWith('62')) national = digits.slice(2);
  else if (digits.startsWith('0')) national = digits.slice(1);
  else if (digits.startsWith('8')) national = digits;
  else return null;
  if (national.startsWith('0')) return null;
  // National significant numbers are 8 to 12 digits (mobile 8xx…, landlines with area codes).
  if (national.length < 8 || national.length > 12) return null;
  return `62${national}`;
}
