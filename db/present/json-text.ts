// JSON text kept as the merchant sent it. An order's metadata is "stored and returned as-is"
// (spec 2.2), which no JavaScript object can carry: JSON.parse moves integer-like keys first
// ({"b":1,"2":2} becomes {"2":2,"b":1}) and rounds 12345678901234567890, and jsonb reorders
// keys. So the member's source text is cut out of the raw body with whitespace between tokens
// dropped and nothing else touched (key order, repeated keys, number spelling, string escapes
// stay), stored verbatim in a json column, and written back into responses as that text.

export class RawJson {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
  /** A plain JSON.stringify still gets the value, though not necessarily its key order. */
  toJSON(): unknown {
    return JSON.parse(this.text);
  }
}

/** JSON.stringify (no replacer, no indentation) that writes RawJson values as their text. */
export function toJson(value: unknown): string {
  return write(value) ?? 'null';
}

function write(value: unknown): string | undefined {
  if (value instanceof RawJson) return value.text;
  if (value !== null && typeof value === 'object' && typeof (value as { toJSON?: unknown }).toJSON === 'function') {
    return write((value as { toJSON(): unknown }).toJSON());
  }
  if (Array.isArray(value)) return `[${value.map((item) => write(item) ?? 'null').join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const members: string[] = [];
    for (const [key, item] of Object.entries(value)) {
      const text = write(item);
      if (text !== undefined) members.push(`${JSON.stringify(key)}:${text}`);
    }
    return `{${members.join(',')}}`;
  }
  return JSON.stringify(value);
}

/**
 * The text of member `name` of the object `source`, without insignificant whitespace; the last
 * one when the name repeats, as JSON.parse keeps. `source` must already have passed JSON.parse.
 */
export function memberText(source: string, name: string): string | undefined {
  let i = skipSpace(source, 0);
  if (source[i] !== '{') return undefined;
  i = skipSpace(source, i + 1);
  let found: string | undefined;
  while (i < source.length && source[i] !== '}') {
    const keyEnd = stringEnd(source, i);
    const key: unknown = JSON.parse(source.slice(i, keyEnd));
    i = skipSpace(source, skipSpace(source, keyEnd) + 1); // past the colon
    const end = valueEnd(source, i);
    if (key === name) found = minify(source.slice(i, end));
    i = skipSpace(source, end);
    if (source[i] === ',') i = skipSpace(source, i + 1);
  }
  return found;
}

// JSON's whitespace: space, tab, line feed, carriage return (nothing else is allowed).
function isSpace(code: number): boolean {
  return code === 0x20 || code === 0x09 || code === 0x0a || code === 0x0d;
}

function skipSpace(s: string, i: number): number {
  while (i < s.length && isSpace(s.charCodeAt(i))) i++;
  return i;
}

/** Index just past the string token that opens at s[i]. */
function stringEnd(s: string, i: number): number {
  for (let j = i + 1; j < s.length; j++) {
    const code = s.charCodeAt(j);
    if (code === 0x5c) j++; // a backslash escapes the next character (\uXXXX's digits are plain)
    else if (code === 0x22) return j + 1;
  }
  throw new SyntaxError('unterminated JSON string');
}

/** Index just past the value that starts at s[i]. */
function valueEnd(s: string, i: number): number {
  const c = s[i];
  if (c === '"') return stringEnd(s, i);
  if (c === '{' || c === '[') {
    let depth = 0;
    for (let j = i; j < s.length; j++) {
      const d = s[j];
      if (d === '"') j = stringEnd(s, j) - 1;
      else if (d === '{' || d === '[') depth++;
      else if ((d === '}' || d === ']') && --depth === 0) return j + 1;
    }
    throw new SyntaxError('unterminated JSON value');
  }
  let j = i;
  while (j < s.length && !isSpace(s.charCodeAt(j)) && s[j] !== ',' && s[j] !== '}' && s[j] !== ']') j++;
  return j;
}

/** Drops the whitespace between tokens; strings are copied untouched. */
function minify(s: string): string {
  const parts: string[] = [];
  let start = 0;
  let i = 0;
  while (i < s.length) {
    const code = s.charCodeAt(i);
    if (code === 0x22) {
      i = stringEnd(s, i);
    } else if (isSpace(code)) {
      parts.push(s.slice(start, i));
      i = skipSpace(s, i);
      start = i;
    } else {
      i++;
    }
  }
  parts.push(s.slice(start));
  return parts.join('');
}
