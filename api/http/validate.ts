// Request validation with zod. Every V1 body problem becomes 400 INVALID_BODY naming the field,
// and its message is written here, from zod's issue code, for every field alike: what the field
// must be, then what was received ("amount: must be an integer number of Rupiah; got the string
// \"150000\""). Schemas carry no messages of their own; a field whose rule zod cannot put in
// words (a pattern, a unit) says what it expects once, with `expects`.
//
// V1 bodies are strict objects: a field the endpoint does not know is refused and named, with the
// known field it was probably meant to be, before anything else is looked at (a misspelt optional
// field would otherwise be dropped without a word).
import type { Request } from 'express';
import { z } from 'zod';
import { ApiError, describeReceived } from '../../db/errors.ts';

/** What a field expects, in words, where its zod type does not say it (patterns, units). */
export const expectations = z.registry<{ expects: string }>();

/** `schema` expects `words` ("5 to 34 digits"): the phrase its type and format errors use. */
export function expects<S extends z.ZodType>(schema: S, words: string): S {
  expectations.add(schema, { expects: words });
  return schema;
}

/**
 * An e-mail address as the document's `format: email` reads it (RFC 5321 host names): zod's own
 * pattern lets a domain label start or end with a hyphen (`siti@shop-.example.com`), which JSON
 * Schema validators refuse, so an address the server kept would fail the document's schema in
 * every later answer. The local part is zod's; every label is 1 to 63 letters, digits or inner
 * hyphens, the last one 2 to 63 letters. Stricter than both, never looser than either.
 */
export const EMAIL_PATTERN = /^(?:[A-Za-z0-9_'+\-]+\.)*[A-Za-z0-9_'+\-]*[A-Za-z0-9_+\-]@(?:[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,63}$/;

/** An e-mail address (EMAIL_PATTERN), shown in the document as `format: email` with the pattern. */
export function emailAddress() {
  return z.email({ pattern: EMAIL_PATTERN });
}

/**
 * A notify URL's form, as the document shows it: http or https, `//`, a host name or bracketed
 * IPv6 address without credentials, an optional port, then anything without white space; or
 * empty (none). new URL() alone would take `http:example.com` or `https://user:pw@host`, forms
 * no client means and the document could not state. The host's address rules (no private or
 * local destinations unless allowlisted) stay with db/notify-url.ts: they depend on the
 * deployment's NOTIFY_URL_ALLOWLIST, and the description says so.
 */
export const NOTIFY_URL_PATTERN = /^(?:[hH][tT][tT][pP][sS]?:\/\/(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._~-]+)(?::[0-9]{1,5})?(?:[/?#]\S*)?)?$/;

/** A notify URL field (V1 notify_url, legacy notifyUrl): NOTIFY_URL_PATTERN, at most 2048 characters. */
export function notifyUrlField() {
  return expects(z.string().max(2048).regex(NOTIFY_URL_PATTERN), 'an http(s) URL without credentials')
    .describe('http(s) URL, at most 2048 characters, no credentials; private, loopback and link-local destinations are refused unless the deployment allowlists them (400)');
}

/** The largest amount: 13 digits, what QRIS tag 54 can carry. */
export const MAX_AMOUNT = 9_999_999_999_999;

/** A positive amount of whole Rupiah, at most MAX_AMOUNT. */
export function rupiahAmount() {
  return expects(z.number().int().min(1).max(MAX_AMOUNT), 'an integer number of Rupiah');
}

export function parseBody<S extends z.ZodType>(schema: S, body: unknown): z.infer<S> {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new ApiError('INVALID_BODY', `Request body must be a JSON object; got ${describeReceived(body)}`);
  }
  const result = schema.safeParse(body);
  if (result.success) return result.data;
  throw new ApiError('INVALID_BODY', bodyProblems(schema, body, result.error.issues)[0]);
}

/**
 * Every problem of `body` against `schema`, one message each, the one a client should fix first
 * first: unknown fields (a misspelling explains the other problems), then zod's order.
 */
export function bodyProblems(schema: z.ZodType, body: unknown, issues: readonly z.core.$ZodIssue[] = schema.safeParse(body).error?.issues ?? []): string[] {
  const unknown = issues.filter((i) => i.code === 'unrecognized_keys');
  const rest = issues.filter((i) => i.code !== 'unrecognized_keys');
  return [...unknown, ...preferred(rest)].map((issue) => messageOf(schema, body, issue));
}

/**
 * Of two issues for one field, the one that names the field's own rule: a number past the
 * safe-integer range is reported by zod twice (the range, then the field's maximum).
 */
function preferred(issues: z.core.$ZodIssue[]): z.core.$ZodIssue[] {
  const key = (i: z.core.$ZodIssue) => i.path.map(String).join('\u0000');
  return issues.filter((issue, index) =>
    !(issue.code === 'too_big' && issue.origin === 'int' && issues.some((other, j) => j !== index && key(other) === key(issue) && other.code === 'too_big')));
}

/** The message of one issue: `<field>: <what it must be>; got <what was sent>`. */
export function messageOf(root: z.ZodType, body: unknown, issue: z.core.$ZodIssue): string {
  const path = issue.path.map(String);
  if (issue.code === 'unrecognized_keys') return unknownFields(root, path, issue.keys);
  const field = path.join('.');
  const at = lookup(body, path);
  const words = rule(fieldSchema(root, path), issue, at.value);
  const text = at.present && issue.code !== 'custom' ? `${words}; got ${describeReceived(at.value)}` : words;
  return field ? `${field}: ${text}` : text;
}

/** What the field must be, from the issue's code (and the field's own `expects`, if any). */
function rule(schema: z.ZodType | undefined, issue: z.core.$ZodIssue, value: unknown): string {
  const expected = schema && expectations.get(schema)?.expects;
  switch (issue.code) {
    case 'invalid_type':
      if (value === undefined) return 'is required';
      return `must be ${expected ?? TYPES[issue.expected] ?? issue.expected}`;
    case 'too_small':
      if (issue.origin === 'string') return Number(issue.minimum) <= 1 ? 'must not be empty' : `must be at least ${issue.minimum} characters`;
      if (issue.origin === 'array' || issue.origin === 'set') return `must have at least ${issue.minimum} items`;
      return `must be at least ${issue.inclusive ? issue.minimum : `more than ${issue.minimum}`}`;
    case 'too_big':
      if (issue.origin === 'string') return `must be at most ${issue.maximum} characters`;
      if (issue.origin === 'array' || issue.origin === 'set') return `must have at most ${issue.maximum} items`;
      return `must be at most ${issue.inclusive ? issue.maximum : `less than ${issue.maximum}`}`;
    case 'invalid_value':
      return issue.values.length === 1 ? `must be ${JSON.stringify(issue.values[0])}` : `must be one of ${issue.values.map((v) => String(v)).join(', ')}`;
    case 'invalid_format':
      return `must be ${expected ?? FORMATS[issue.format] ?? `in the ${issue.format} format`}`;
    case 'not_multiple_of':
      return `must be a multiple of ${issue.divisor}`;
    case 'invalid_union':
    case 'invalid_key':
    case 'invalid_element':
      return `must be ${expected ?? 'a valid value'}`;
    default:
      return issue.message;
  }
}

const TYPES: Record<string, string> = {
  string: 'a string',
  number: 'a number',
  int: 'an integer',
  boolean: 'true or false',
  object: 'an object',
  record: 'an object',
  array: 'an array',
  null: 'null',
};

const FORMATS: Record<string, string> = {
  email: 'an e-mail address',
  url: 'an http(s) URL',
  uuid: 'a UUID',
  guid: 'a UUID',
  date: 'a date as YYYY-MM-DD',
  datetime: 'an ISO 8601 date and time',
  regex: 'in the documented format',
};

/** `Received unknown parameter: bank_code. Did you mean bank_short_code?` */
function unknownFields(root: z.ZodType, path: string[], keys: string[]): string {
  const known = Object.keys(objectShape(fieldSchema(root, path)) ?? {});
  const where = path.length ? ` in ${path.join('.')}` : '';
  const named = keys.map((k) => {
    const near = closestName(k, known);
    return near ? `${k} (did you mean ${near}?)` : k;
  });
  const hint = keys.includes('currency') && !known.includes('currency') ? '. Amounts are whole Rupiah; no currency is sent' : '';
  return `Received unknown parameter${keys.length > 1 ? 's' : ''}${where}: ${named.join(', ')}${hint}`;
}

/**
 * The known name `name` was probably meant to be, or null: a small edit away (a typo, another
 * case or separator), or the same words with one added or left out (bank_code for
 * bank_short_code, phone for ewallet_phone).
 */
export function closestName(name: string, known: readonly string[]): string | null {
  const norm = (s: string) => s.toLowerCase().replace(/[^a-z0-9]/g, '');
  const words = (s: string) => s.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase().split(/[^a-z0-9]+/).filter(Boolean);
  let best: { name: string; score: number } | null = null;
  for (const candidate of known) {
    const distance = editDistance(norm(name), norm(candidate));
    const a = words(name);
    const b = words(candidate);
    const common = a.filter((w) => b.includes(w));
    // One shared word counts only when it says something (phone, amount; not id or url).
    const telling = common.length >= 2 || common.some((w) => w.length >= 5);
    const nested = telling && (common.length === a.length || common.length === b.length);
    const close = distance <= Math.max(1, Math.floor(Math.min(norm(name).length, norm(candidate).length) / 4));
    if (!close && !nested) continue;
    const score = close ? distance : 10 + Math.abs(a.length - b.length) + distance / 100;
    if (!best || score < best.score) best = { name: candidate, score };
  }
  return best?.name ?? null;
}

/** Levenshtein distance with adjacent transpositions. */
function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...new Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0][j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.length][b.length];
}

/** The value at `path` in the body, and whether the body has it at all. */
function lookup(body: unknown, path: string[]): { present: boolean; value: unknown } {
  let value = body;
  for (const key of path) {
    if (value === null || typeof value !== 'object' || !Object.hasOwn(value, key)) return { present: false, value: undefined };
    value = (value as Record<string, unknown>)[key];
  }
  return { present: value !== undefined, value };
}

/** The schema of the field at `path`, its optional, nullable, default and transform wrappers removed. */
export function fieldSchema(root: z.ZodType, path: readonly string[]): z.ZodType | undefined {
  let schema: z.ZodType | undefined = unwrap(root);
  for (const key of path) {
    const shape = objectShape(schema);
    if (shape) schema = unwrap(shape[key]);
    else if (schema instanceof z.ZodRecord) schema = unwrap(schema.def.valueType as z.ZodType);
    else if (schema instanceof z.ZodArray) schema = unwrap(schema.def.element as z.ZodType);
    else return undefined;
  }
  return schema;
}

function objectShape(schema: z.ZodType | undefined): Record<string, z.ZodType> | undefined {
  return schema instanceof z.ZodObject ? (schema.shape as Record<string, z.ZodType>) : undefined;
}

function unwrap(schema: z.ZodType | undefined): z.ZodType | undefined {
  let s = schema;
  for (;;) {
    if (!s || expectations.has(s)) return s;
    if (s instanceof z.ZodOptional || s instanceof z.ZodNullable || s instanceof z.ZodDefault) s = s.def.innerType as z.ZodType;
    else if (s instanceof z.ZodPipe) s = s.def.in as z.ZodType;
    else return s;
  }
}

/** An Idempotency-Key header's value: printable ASCII, 1-255 characters. */
export const idempotencyKey = expects(z.string().min(1).max(255).regex(/^[\x21-\x7e]+$/), 'printable ASCII without spaces');

/** The request's Idempotency-Key, if it sent one; a malformed one is 400 INVALID_BODY. */
export function idempotencyKeyOf(req: Request): string | undefined {
  const key = req.get('idempotency-key');
  if (key !== undefined && !idempotencyKey.safeParse(key).success) {
    throw new ApiError('INVALID_BODY', `Idempotency-Key: must be 1-255 printable ASCII characters without spaces; got ${describeReceived(key)}`);
  }
  return key;
}

/** The request's Idempotency-Key as db/idempotency.ts takes it (null without one). */
export function idempotentRequest(req: Request, operation: string) {
  const key = idempotencyKeyOf(req);
  return key === undefined ? null : { merchantId: req.merchant.id, key, operation, rawBody: req.rawBody ?? Buffer.alloc(0) };
}
