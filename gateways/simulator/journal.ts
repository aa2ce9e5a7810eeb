// The simulator's memory across restarts (SIMULATOR_STATE_FILE, docs/simulator.md): a journal
// of JSON lines, each line an array of changes `{"k": kind, "id": key, "v": value}` (`v` null:
// removed), replayed at start with the last change of a record winning.
//
// Invariants:
// - The changes one synchronous step makes (a request's handler, a timer) go out as one line in
//   one write(), so they land together or not at all: a paid QR never lands without the callback
//   it owes. flush() writes them; the app calls it before any answer leaves, and it runs on the
//   next tick otherwise, so nothing reaches the network before what it reflects is in the file.
// - A written line is in the kernel: a SIGKILL at any instant keeps it. The fdatasync that guards
//   against power loss follows off the event loop, one per batch of lines; answers do not wait
//   for it (a synchronous one costs about 2 ms per change here, which would make the simulator
//   the bottleneck of any soak).
// - Only the last line can be torn (a write cut short): it is ignored on load. A bad line
//   anywhere else is damage, not a crash, and stops start-up.
// - At start, and whenever the file has doubled since, the live records are written to a
//   temporary file, synced and renamed over the journal: the file stays proportional to the
//   state, and a crash mid-way leaves the old file whole.
import { closeSync, fdatasync, fdatasyncSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Logger } from 'pino';
import type { z } from 'zod';

/** Below this the file is not compacted while running, however much it grew. */
const MIN_COMPACT_BYTES = 1 << 20;

export interface Journal {
  /** The records of one kind found at start, each checked against its owner's schema. */
  loaded<T extends z.ZodType>(kind: string, schema: T): Array<[string, z.output<T>]>;
  /** Records a record's state as it is when the step ends (it may still change until then). */
  put(kind: string, id: string, value: object | string | number | boolean): void;
  remove(kind: string, id: string): void;
  /** Writes the step's changes now; the app calls it before an answer leaves. */
  flush(): void;
  /** Flushes, syncs and closes; later changes are ignored (the simulator has stopped). */
  close(): Promise<void>;
}

/** SIMULATOR_STATE_FILE unset: state lives and dies with the process. */
export function memoryJournal(): Journal {
  return { loaded: () => [], put() {}, remove() {}, flush() {}, close: async () => {} };
}

interface Change {
  k: string;
  id: string;
  v: unknown;
}

const isChange = (c: unknown): c is Change =>
  typeof c === 'object' && c !== null && typeof (c as Change).k === 'string' && typeof (c as Change).id === 'string' && 'v' in c;

/** Opens (creating it and its directory if needed) and compacts the journal at `path`. */
export function openJournal(path: string, logger: Logger): Journal {
  const log = logger.child({ state_file: path });
  /** Each live record's last change, as the JSON written for it: kind → id → line element. */
  const live = new Map<string, Map<string, string>>();
  mkdirSync(dirname(path), { recursive: true });
  replay(path, live, log);
  let compactedBytes = compact(path, live);
  let bytes = compactedBytes;
  let fd = openSync(path, 'a');
  /** The step's changes, by kind and id: the record itself (serialized at flush) or null. */
  let pending = new Map<string, { kind: string; id: string; value: unknown }>();
  let scheduled = false;
  let closed = false;
  let syncing: { fd: number; again: boolean; done: Promise<void> } | null = null;
  /** Old descriptors still being synced when a compaction replaced the file. */
  const retired = new Set<number>();

  function change(kind: string, id: string, value: unknown) {
    if (closed) return;
    pending.set(`${kind}\n${id}`, { kind, id, value });
    if (!scheduled) {
      scheduled = true;
      process.nextTick(flush);
    }
  }

  function flush() {
    scheduled = false;
    if (closed || pending.size === 0) return;
    const elements: string[] = [];
    for (const { kind, id, value } of pending.values()) {
      const element = JSON.stringify({ k: kind, id, v: value });
      elements.push(element);
      apply(live, kind, id, value === null ? null : element);
    }
    pending = new Map();
    try {
      bytes += writeAll(fd, `[${elements.join(',')}]\n`);
      if (bytes > Math.max(2 * compactedBytes, MIN_COMPACT_BYTES)) {
        const old = fd;
        compactedBytes = bytes = compact(path, live);
        fd = openSync(path, 'a');
        if (syncing?.fd === old) retired.add(old);
        else closeSync(old);
      } else {
        syncSoon();
      }
    } catch (error) {
      fail(error);
    }
  }

  function syncSoon() {
    if (syncing) {
      syncing.again = true;
      return;
    }
    const target = fd;
    let resolve!: () => void;
    syncing = { fd: target, again: false, done: new Promise<void>((r) => (resolve = r)) };
    fdatasync(target, (error) => {
      const again = syncing?.again ?? false;
      syncing = null;
      if (retired.delete(target)) closeSync(target);
      resolve();
      if (error) return fail(error);
      if (again && !closed) syncSoon();
    });
  }

  return {
    loaded(kind, schema) {
      const records = live.get(kind);
      if (!records) return [];
      return [...records].map(([id, element]) => {
        const parsed = schema.safeParse((JSON.parse(element) as Change).v);
        if (!parsed.success) {
          throw new Error(`SIMULATOR_STATE_FILE ${path}: record ${kind} ${id} does not fit this version (${parsed.error.issues[0].path.join('.')}: ${parsed.error.issues[0].message}); move the file away to start afresh`);
        }
        return [id, parsed.data];
      });
    },
    put: (kind, id, value) => change(kind, id, value),
    remove: (kind, id) => change(kind, id, null),
    flush,
    async close() {
      flush();
      closed = true;
      while (syncing) await syncing.done;
      fdatasyncSync(fd);
      closeSync(fd);
    },
  };
}

function apply(live: Map<string, Map<string, string>>, kind: string, id: string, element: string | null) {
  let records = live.get(kind);
  if (!records) live.set(kind, (records = new Map()));
  if (element === null) records.delete(id);
  else records.set(id, element);
}

function replay(path: string, live: Map<string, Map<string, string>>, log: Logger) {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw new Error(`SIMULATOR_STATE_FILE ${path}: cannot read it (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  const lines = text.split('\n');
  for (const [i, line] of lines.entries()) {
    if (line === '') continue;
    let changes: unknown;
    try {
      changes = JSON.parse(line);
    } catch {
      changes = null;
    }
    if (!Array.isArray(changes) || !changes.every(isChange)) {
      if (lines.slice(i + 1).every((rest) => rest === '')) {
        log.warn({ line: i + 1, bytes: line.length }, 'torn last line of the state file ignored');
        return;
      }
      throw new Error(`SIMULATOR_STATE_FILE ${path}: line ${i + 1} is damaged (not the last line, so not a torn write); move the file away to start afresh`);
    }
    for (const c of changes) apply(live, c.k, c.id, c.v === null ? null : JSON.stringify(c));
  }
}

/** Writes the live records to `<path>.tmp`, syncs it and renames it over `path`; returns its size. */
function compact(path: string, live: Map<string, Map<string, string>>): number {
  const tmp = `${path}.tmp`;
  const fd = openSync(tmp, 'w');
  let bytes = 0;
  try {
    let chunk = '';
    for (const records of live.values()) {
      for (const element of records.values()) {
        chunk += `[${element}]\n`;
        if (chunk.length > MIN_COMPACT_BYTES) {
          bytes += writeAll(fd, chunk);
          chunk = '';
        }
      }
    }
    bytes += writeAll(fd, chunk);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
  // The rename itself must survive a power loss, or the old journal could come back.
  const dir = openSync(dirname(path), 'r');
  try {
    fsyncSync(dir);
  } finally {
    closeSync(dir);
  }
  return bytes;
}

/** One write() for the whole text when the kernel takes it (it does for regular files). */
function writeAll(fd: number, text: string): number {
  const buffer = Buffer.from(text, 'utf8');
  let written = 0;
  while (written < buffer.length) written += writeSync(fd, buffer, written);
  return buffer.length;
}

/** A gateway that cannot keep its state must not go on answering as if it had. */
function fail(error: unknown): never {
  process.stderr.write(`simulator: cannot write SIMULATOR_STATE_FILE: ${(error as Error).message}\n`);
  process.exit(70);
}
