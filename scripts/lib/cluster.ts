// Starts and stops an embedded Postgres cluster (scripts/postgres.ts) as a child process.
import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

const ENTRY = fileURLToPath(new URL('../postgres.ts', import.meta.url));

export interface Cluster {
  url(database?: string): string;
  port: number;
  stop(): Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

export function newPassword(): string {
  return randomBytes(18).toString('base64url');
}

export async function startCluster(options: {
  dataDir: string;
  password: string;
  port?: number;
  ephemeral?: boolean;
  /** Also append the server's log to this file. */
  logFile?: string;
}): Promise<Cluster> {
  const port = options.port ?? (await freePort());
  const args = [options.dataDir, String(port)];
  if (options.ephemeral) args.push('--ephemeral');
  // The superuser password goes in the environment, never in argv: every local user can read
  // a command line (ps), only its owner a process's environment. initdb gets it in a file.
  const env = { ...process.env, KASIR_PG_PASSWORD: options.password, ...(options.logFile ? { KASIR_PG_LOG_FILE: options.logFile } : {}) };
  // Detached: a Ctrl-C in the terminal reaches only the parent, which stops the cluster last.
  const child = fork(ENTRY, args, { stdio: ['ignore', 'ignore', 'inherit', 'ipc'], detached: true, env });

  await new Promise<void>((resolve, reject) => {
    const onExit = (code: number | null) => reject(new Error(`embedded postgres exited with code ${code} before it was ready`));
    child.once('exit', onExit);
    child.once('message', () => {
      child.off('exit', onExit);
      resolve();
    });
  });

  const password = encodeURIComponent(options.password);
  return {
    port,
    url: (database = 'postgres') => `postgres://postgres:${password}@127.0.0.1:${port}/${database}`,
    stop: () => stopChild(child),
  };
}

export function stopChild(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill(signal);
  });
}

/** Creates the database on the cluster unless it exists. */
export async function ensureDatabase(cluster: Cluster, name: string): Promise<string> {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: cluster.url('postgres') });
  await client.connect();
  try {
    const { rowCount } = await client.query('select 1 from pg_database where datname = $1', [name]);
    if (!rowCount) await client.query(`create database "${name.replace(/"/g, '""')}"`);
  } finally {
    await client.end();
  }
  return cluster.url(name);
}
