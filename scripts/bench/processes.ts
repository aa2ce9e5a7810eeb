// Kasir processes for benches, spawned as the Procfile runs them (`node <entry> [args]`, on this
// process's Node) and stopped with SIGTERM as in production. Whatever is still running when this
// process exits (a Ctrl-C, a failed bench) is sent SIGTERM on the way out.
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { ROOT } from '../lib/local.ts';

export interface BenchProcess {
  name: string;
  child: ChildProcess;
  pid: number;
  /** The IPC message (readiness 'ipc') or stdout line match (a RegExp) that said it was ready. */
  ready: unknown;
  /** stdout lines since start (Kasir's processes log there: at LOG_LEVEL=warn, only trouble). */
  logLines(): number;
  /** The last few stdout lines. */
  lastLines(): string[];
  stop(): Promise<void>;
}

const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGTERM');
});

/**
 * Spawns `node <entry> ...args` with `env` on top of this process's environment and resolves once
 * it is ready: its first IPC message ('ipc'), or the first stdout line matching a RegExp.
 */
export async function startProcess(
  name: string,
  entry: string,
  args: string[],
  env: Record<string, string>,
  readiness: 'ipc' | RegExp,
  timeoutMs = 30_000,
  /** Read stderr as log lines too (a process that logs there, like the simulator), instead of passing it through. */
  stderrLogs = false,
): Promise<BenchProcess> {
  // BENCH_CPU_PROF=<dir>: every process writes a V8 CPU profile there when it exits.
  const profile = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
  const child = spawn(process.execPath, [...profile, `${ROOT}${entry}`, ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    // IPC for entries that report readiness (and stop when this process goes) that way; stdout
    // is read here, counted, and not echoed: a warning per request would flood the terminal.
    stdio: readiness === 'ipc' ? ['ignore', 'pipe', stderrLogs ? 'pipe' : 'inherit', 'ipc'] : ['ignore', 'pipe', stderrLogs ? 'pipe' : 'inherit'],
  });
  let lines = 0;
  const last: string[] = [];
  let onLine: ((line: string) => void) | null = null;
  const read = (line: string) => {
    lines++;
    last.push(line);
    if (last.length > 5) last.shift();
    onLine?.(line);
  };
  createInterface({ input: child.stdout! }).on('line', read);
  if (stderrLogs) createInterface({ input: child.stderr! }).on('line', read);
  running.add(child);
  const exited = new Promise<void>((resolve) =>
    child.once('exit', () => {
      running.delete(child);
      resolve();
    }),
  );
  let timer: NodeJS.Timeout | undefined;
  try {
    const ready = await new Promise<unknown>((resolve, reject) => {
      timer = setTimeout(() => reject(new Error(`${name} was not ready within ${timeoutMs} ms`)), timeoutMs);
      child.once('exit', (code, signal) => reject(new Error(`${name} (${entry}) exited with ${signal ?? code} before it was ready`)));
      if (readiness === 'ipc') child.once('message', resolve);
      else {
        onLine = (line) => {
          const match = readiness.exec(line);
          if (match) resolve(match);
        };
      }
    });
    return {
      name,
      child,
      pid: child.pid!,
      ready,
      logLines: () => lines,
      lastLines: () => [...last],
      async stop() {
        if (child.exitCode !== null || child.signalCode !== null) return;
        const kill = setTimeout(() => child.kill('SIGKILL'), 20_000);
        child.kill('SIGTERM');
        await exited;
        clearTimeout(kill);
      },
    };
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  } finally {
    clearTimeout(timer);
    onLine = null;
  }
}
