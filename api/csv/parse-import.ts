// piscina worker: turns an uploaded disbursement CSV into rows of cells, off the API's event
// loop (csv-parse on 100,000 rows takes a few hundred milliseconds of CPU). Pure: no database,
// no rules beyond the file's structure; the API validates every row as it validates JSON.
//
// What a file must be: UTF-8 text (a BOM is dropped), comma- or semicolon-delimited (whichever
// the header line holds more of, outside quotes: spreadsheets in comma-decimal locales export
// semicolons), quoted per RFC 4180, with a header row naming each column of IMPORT_COLUMNS once,
// in any order. Columns with an empty header are ignored. Anything else is refused as a whole,
// with a message saying what is wrong, before any row is looked at.
import { parse } from 'csv-parse/sync';

export const IMPORT_COLUMNS = [
  'channel',
  'bank_short_code',
  'account_number',
  'account_name',
  'ewallet_provider',
  'ewallet_phone',
  'amount',
  'notify_url',
] as const;

export interface ParseImportInput {
  bytes: Uint8Array;
  maxRows: number;
}

/**
 * The data rows, packed so that handing them to the API's thread costs a copy of one string
 * and one typed array, not the deserialisation of 800,000 strings (which held that thread for
 * hundreds of milliseconds): every cell of every well-formed row, in IMPORT_COLUMNS order,
 * concatenated in `text`; `ends[r * 8 + c]` is where cell c of row r ends; `shape[r]` is -1 for
 * a well-formed row, -2 for a blank one (every cell empty), else the number of fields the row
 * has when that differs from the header's. Read a row back with rowCells.
 */
export interface PackedRows {
  count: number;
  text: string;
  ends: Int32Array;
  shape: Int32Array;
}

/** A row's cells (trimmed; '' for an empty cell), `null` for a blank row, or its field count when wrong. */
export function rowCells(rows: PackedRows, r: number): string[] | null | { fields: number } {
  const shape = rows.shape[r];
  if (shape === -2) return null;
  if (shape >= 0) return { fields: shape };
  const cells = new Array<string>(IMPORT_COLUMNS.length);
  let start = r === 0 ? 0 : rows.ends[r * IMPORT_COLUMNS.length - 1];
  for (let c = 0; c < IMPORT_COLUMNS.length; c++) {
    const end = rows.ends[r * IMPORT_COLUMNS.length + c];
    cells[c] = rows.text.slice(start, end);
    start = end;
  }
  return cells;
}

export type ParseImportOutput =
  | { ok: true; delimiter: ',' | ';'; columns: number; rows: PackedRows }
  | { ok: false; message: string };

const MESSAGE_MAX = 300;

function refuse(message: string): ParseImportOutput {
  return { ok: false, message: message.length > MESSAGE_MAX ? `${message.slice(0, MESSAGE_MAX)}…` : message };
}

/** The delimiter the header line uses more of, outside quoted text; a comma on a tie. */
export function detectDelimiter(text: string): ',' | ';' {
  let commas = 0;
  let semicolons = 0;
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') quoted = !quoted;
    else if (!quoted && (c === '\n' || c === '\r')) break;
    else if (!quoted && c === ',') commas++;
    else if (!quoted && c === ';') semicolons++;
  }
  return semicolons > commas ? ';' : ',';
}

export default function parseImport({ bytes, maxRows }: ParseImportInput): ParseImportOutput {
  let text: string;
  try {
    // fatal: bytes that are not UTF-8 (a binary file, a legacy code page) are refused, not
    // replaced; the BOM, if any, is dropped.
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return refuse('file is not UTF-8 text: upload the spreadsheet saved as "CSV UTF-8"');
  }
  if (text.includes('\u0000')) return refuse('file contains NUL bytes: it is not a CSV text file');
  if (text.trim() === '') return refuse('file is empty: a header row is required');

  const delimiter = detectDelimiter(text);
  let records: string[][];
  try {
    records = parse(text, { delimiter, relax_column_count: true, skip_empty_lines: false, trim: true });
  } catch (err) {
    return refuse(`file is not valid CSV: ${(err as Error).message}`);
  }

  const header = records[0].map((name) => name.toLowerCase());
  const named = header.filter((name) => name !== '');
  const known = new Set<string>(IMPORT_COLUMNS);
  const unknown = named.filter((name) => !known.has(name));
  const missing = IMPORT_COLUMNS.filter((name) => !header.includes(name));
  const repeated = [...new Set(named.filter((name, i) => named.indexOf(name) !== i))];
  if (unknown.length || missing.length || repeated.length) {
    const problems = [
      missing.length ? `missing column${missing.length > 1 ? 's' : ''} ${missing.join(', ')}` : null,
      unknown.length ? `unknown column${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')}` : null,
      repeated.length ? `repeated column${repeated.length > 1 ? 's' : ''} ${repeated.join(', ')}` : null,
    ].filter(Boolean);
    return refuse(`header row: ${problems.join('; ')} (expected ${IMPORT_COLUMNS.join(delimiter)})`);
  }
  if (records.length - 1 > maxRows) return refuse(`file has ${records.length - 1} data rows; an import takes at most ${maxRows}`);

  const positions = IMPORT_COLUMNS.map((name) => header.indexOf(name));
  const count = records.length - 1;
  const width = IMPORT_COLUMNS.length;
  const parts: string[] = [];
  const ends = new Int32Array(count * width);
  const shape = new Int32Array(count);
  let offset = 0;
  for (let r = 0; r < count; r++) {
    const record = records[r + 1];
    const wellFormed = record.length === header.length && !record.every((cell) => cell === '');
    shape[r] = wellFormed ? -1 : record.every((cell) => cell === '') ? -2 : record.length;
    for (let c = 0; c < width; c++) {
      if (wellFormed) {
        const cell = record[positions[c]];
        parts.push(cell);
        offset += cell.length;
      }
      ends[r * width + c] = offset;
    }
  }
  return { ok: true, delimiter, columns: header.length, rows: { count, text: parts.join(''), ends, shape } };
}
