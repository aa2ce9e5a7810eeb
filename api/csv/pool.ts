// The piscina pool that parses CSV off the event loop: one per process, created on first use.
// Threads start on demand and stop after a minute idle; idle threads are unref'd, so the pool
// never keeps a process alive. Two threads: a parse is a few hundred milliseconds, and the
// machines this runs on have two cores that the API and Postgres need too.
import { Piscina } from 'piscina';
import type { ParseImportInput, ParseImportOutput } from './parse-import.ts';

let pool: Piscina<ParseImportInput, ParseImportOutput> | null = null;

function csvPool() {
  pool ??= new Piscina<ParseImportInput, ParseImportOutput>({
    filename: new URL('./parse-import.ts', import.meta.url).href,
    minThreads: 0,
    maxThreads: 2,
    idleTimeout: 60_000,
  });
  return pool;
}

/** Parses an import file in a worker thread (the bytes are copied there). */
export function parseImportFile(bytes: Uint8Array, maxRows: number): Promise<ParseImportOutput> {
  return csvPool().run({ bytes, maxRows });
}
