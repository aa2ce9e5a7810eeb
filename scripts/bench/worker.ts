// A real worker group process for benches, spawned exactly as the Procfile runs it
// (`node workers/run.ts <group>`) on this process's Node, ready once it sends its IPC message.
import { spawn, type ChildProcess } from 'node:child_process';
import { newMasterKey } from '../../db/secrets.ts';
import { stopChild } from '../lib/cluster.ts';
import { ROOT } from '../lib/local.ts';

export interface BenchWorker {
  child: ChildProcess;
  stop(): Promise<void>;
}

export async function startWorker(group: string, databaseUrl: string): Promise<BenchWorker> {
  const child = spawn(process.execPath, [`${ROOT}workers/run.ts`, group], {
    cwd: ROOT,
    // warn: an info line per job would turn the bench into a logging bench.
    env: { ...process.env, DATABASE_URL: databaseUrl, KASIR_MASTER_KEY: newMasterKey(), LOG_LEVEL: 'warn' },
    // IPC: the ready message, and the worker stops by itself if this process dies.
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  await new Promise<void>((resolve, reject) => {
    const onExit = (code: number | null) => reject(new Error(`worker group ${group} exited with ${code} before it was ready`));
    child.once('exit', onExit);
    child.once('message', () => {
      child.off('exit', onExit);
      resolve();
    });
  });
  // SIGTERM: pg-boss stops fetching and finishes in-flight jobs, as in production.
  return { child, stop: () => stopChild(child, 'SIGTERM') };
}
