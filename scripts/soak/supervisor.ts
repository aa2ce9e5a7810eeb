// Runs every Procfile line as a real process and keeps it running, as a production supervisor
// (systemd Restart=always, a container orchestrator) does: whatever ends a process, it is
// started again. The chaos asks it to SIGKILL one; an exit nobody asked for (a process that
// gave up while Postgres was down, a crash) is restarted too, and recorded with the log line
// that says why, because the report must say that it happened.
//
// Each process logs (LOG_LEVEL warn) to <dir>/<name>.log, appended across restarts.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, writeSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { setTimeout as delay } from 'node:timers/promises';
import { ROOT } from '../lib/local.ts';
import { isSimulator, type ProcfileLine } from '../lib/procfile.ts';

/** How long a (re)started process may take to say it is ready before it counts as a failed start. */
const READY_TIMEOUT_MS = 30_000;
/** Restart delay after an exit nobody asked for, doubled per failure in a row up to the cap. */
const RESTART_DELAY_MS = 250;
const RESTART_DELAY_MAX_MS = 2_000;

export interface OwnExit {
  name: string;
  at: number;
  how: string;
  /** Whether that process had said it was ready (false: it ended while starting). */
  wasReady: boolean;
  /** The log line that says what went wrong, as far as one does. */
  said: string;
}

export interface Kill {
  name: string;
  at: number;
  /** When the restarted process said it was ready; null if it never did. */
  readyAt: number | null;
}

interface Managed {
  line: ProcfileLine;
  env: Record<string, string | undefined>;
  log: string;
  child: ChildProcess | null;
  ready: boolean;
  /** Set just before the chaos kills it, so that one exit is not counted as its own. */
  killing: Kill | null;
  /** The kill whose restart has not said it is ready yet (its readyAt is set when it does). */
  restarting: Kill | null;
  failuresInRow: number;
}

export interface Supervisor {
  names: string[];
  kill(name: string): Kill | null;
  isReady(name: string): boolean;
  /** Resolves once every process is ready, or rejects at the deadline naming the ones that are not. */
  allReady(timeoutMs: number): Promise<void>;
  kills: Kill[];
  ownExits: OwnExit[];
  stop(): Promise<void>;
  killNow(): void;
}

export function supervise(lines: ProcfileLine[], envOf: (line: ProcfileLine) => Record<string, string | undefined>, logDir: string): Supervisor {
  const kills: Kill[] = [];
  const ownExits: OwnExit[] = [];
  let stopping = false;
  const managed = new Map<string, Managed>(
    lines.map((line) => [line.name, { line, env: envOf(line), log: `${logDir}/${line.name}.log`, child: null, ready: false, killing: null, restarting: null, failuresInRow: 0 }]),
  );

  function start(m: Managed) {
    const [command, ...args] = m.line.argv;
    const log = openSync(m.log, 'a');
    const simulator = isSimulator(m.line);
    // IPC: Kasir's processes report readiness over it and stop when it closes (this process
    // gone). The simulator prints its URL on stdout instead, which is read here and logged.
    const child = spawn(`${ROOT}${command}`, args, {
      cwd: ROOT,
      env: { ...m.env, KASIR_PROCESS: m.line.name },
      stdio: ['ignore', simulator ? 'pipe' : log, log, 'ipc'],
      detached: true,
    });
    // The child holds its own copy of the descriptor; the simulator's stdout is written here
    // until the stream closes.
    if (simulator) child.once('close', () => closeSync(log));
    else closeSync(log);
    m.child = child;
    m.ready = false;
    let timedOut = false;
    const readyTimer = setTimeout(() => {
      if (m.ready || m.child !== child) return;
      timedOut = true;
      child.kill('SIGKILL');
    }, READY_TIMEOUT_MS);
    const markReady = () => {
      if (m.child !== child || m.ready) return;
      m.ready = true;
      m.failuresInRow = 0;
      clearTimeout(readyTimer);
      if (m.restarting) {
        m.restarting.readyAt = Date.now();
        m.restarting = null;
      }
    };
    if (simulator) {
      createInterface({ input: child.stdout! }).on('line', (text) => {
        writeSync(log, `${text}\n`);
        if (text.startsWith('simulator listening on ')) markReady();
      });
    } else {
      child.on('message', (message: { ready?: boolean; listening?: boolean }) => {
        if (message?.ready || message?.listening) markReady();
      });
    }
    child.once('exit', (code, signal) => {
      clearTimeout(readyTimer);
      const wasReady = m.ready;
      if (m.child === child) m.child = null;
      m.ready = false;
      if (stopping) return;
      if (m.killing) {
        m.restarting = m.killing;
        m.killing = null;
        start(m);
        return;
      }
      m.failuresInRow++;
      const at = Date.now();
      void lastError(m.log).then((said) => ownExits.push({ name: m.line.name, at, wasReady, how: timedOut ? `not ready within ${READY_TIMEOUT_MS / 1000} s` : (signal ?? `exit ${code}`), said }));
      const wait = Math.min(RESTART_DELAY_MS * 2 ** (m.failuresInRow - 1), RESTART_DELAY_MAX_MS);
      void delay(wait).then(() => !stopping && m.child === null && start(m));
    });
  }

  for (const m of managed.values()) start(m);

  return {
    names: [...managed.keys()],
    kills,
    ownExits,
    kill(name) {
      const m = managed.get(name);
      if (!m?.child || stopping) return null;
      const kill: Kill = { name, at: Date.now(), readyAt: null };
      m.killing = kill;
      kills.push(kill);
      m.child.kill('SIGKILL');
      return kill;
    },
    isReady: (name) => managed.get(name)?.ready ?? false,
    async allReady(timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const waiting = [...managed.values()].filter((m) => !m.ready).map((m) => m.line.name);
        if (!waiting.length) return;
        if (Date.now() > deadline) throw new Error(`not ready after ${timeoutMs} ms: ${waiting.join(', ')} (logs in ${logDir})`);
        await delay(50);
      }
    },
    async stop() {
      stopping = true;
      const running = [...managed.values()].map((m) => m.child).filter((c): c is ChildProcess => c !== null && c.exitCode === null && c.signalCode === null);
      await Promise.all(
        running.map(async (child) => {
          const exited = new Promise((resolve) => child.once('exit', resolve));
          const timer = setTimeout(() => child.kill('SIGKILL'), 25_000);
          child.kill('SIGTERM');
          await exited;
          clearTimeout(timer);
        }),
      );
    },
    killNow() {
      stopping = true;
      for (const m of managed.values()) m.child?.kill('SIGKILL');
    },
  };
}

/**
 * What a log's end says went wrong: the last thrown error's line (Node prints the stack, then
 * the error's fields, then its own version), else the last log line.
 */
async function lastError(file: string): Promise<string> {
  const lines = (await readFile(file, 'utf8').catch(() => '')).trimEnd().split('\n').slice(-60);
  return [...lines].reverse().find((l) => /^([A-Za-z]*Error|error)\b.*: /.test(l)) ?? lines.at(-1) ?? '';
}
