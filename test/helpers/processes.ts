// Real Kasir processes for tests: worker groups (and the API when a test wants the server
// entry itself) spawned as children on the project's Node, exactly as the Procfile runs them.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const NODE = process.execPath;

interface Teardown {
  teardown(fn: () => unknown): void;
}

export interface Proc {
  child: ChildProcess;
  stop(signal?: NodeJS.Signals): Promise<void>;
}

/** Spawns `node <entry> ...args` and resolves once it sends its ready/listening message. */
export async function startProcess(t: Teardown, entry: string, args: string[], env: Record<string, string>): Promise<Proc & { message: any }> {
  const child = spawn(NODE, [`${ROOT}${entry}`, ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const stop = (signal: NodeJS.Signals = 'SIGTERM') =>
    child.exitCode !== null || child.signalCode !== null
      ? Promise.resolve()
      : new Promise<void>((resolve) => {
          child.once('exit', () => resolve());
          child.kill(signal);
        });
  t.teardown(() => stop('SIGKILL'));
  const message = await new Promise((resolve, reject) => {
    child.once('message', resolve);
    child.once('exit', (code) => reject(new Error(`${entry} ${args.join(' ')} exited with ${code} before it was ready`)));
  });
  return { child, stop, message };
}

export function startWorkerGroup(t: Teardown, group: string, env: Record<string, string>) {
  return startProcess(t, 'workers/run.ts', [group], env);
}

const run = promisify(execFile);

/** `node scripts/ops.ts ...` against a test database, as `npm run --silent ops --` runs it. */
export async function ops(env: Record<string, string>, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return opsWithStdin(env, null, ...args);
}

/** The same, with `stdin` piped to the command (null: none, as from a terminal-less caller). */
export async function opsWithStdin(env: Record<string, string>, stdin: string | null, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const pending = run(NODE, [`${ROOT}scripts/ops.ts`, ...args], { env: { ...process.env, ...env } });
  if (stdin !== null) pending.child.stdin!.end(stdin);
  try {
    const { stdout, stderr } = await pending;
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}
