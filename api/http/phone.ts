// Indonesian phone numbers for V1: accept 08…, 8…, +62…, 62… with spaces, dashes, dots or
// parentheses, and store the international form: 62 followed by digits only.
import { z } from 'zod';
import { expects } from './validate.ts';

const SEPARATORS = /[\s\-.()]/g;

/**
 * Exactly the inputs normalizePhone accepts, as one regular expression, so the OpenAPI document
 * can show the rule (a request body's zod schema carries it): separators anywhere, an optional
 * leading +, then 62 or 0 and a national number not starting with 0, or a national number starting
 * with 8; 8 to 12 national digits. The empty string is "no phone" (the fields are optional).
 * test/api/openapi-validators.test.ts holds the two equal.
 */
const S = '[\\s.()-]*';
export const PHONE_PATTERN = new RegExp(`^(?:${S}(?:\\+${S})?(?:6${S}2${S}[1-9]|0${S}[1-9]|8)(?:${S}\\d){7,11}${S})?$`);

/** A phone field of a V1 body: PHONE_PATTERN (normalizePhone then stores it as 62…). */
export function phoneField() {
  return expects(z.string().max(64).regex(PHONE_PATTERN), 'an Indonesian phone number');
}

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
