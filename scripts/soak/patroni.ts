// The failover drill's PostgreSQL (npm run soak -- --failover): a high-availability cluster
// built as docs/deploy.md describes it, from Debian's packages, on loopback: three etcd
// members, three PostgreSQL 15 nodes run by Patroni in strict synchronous mode, and HAProxy
// sending connections to whichever node answers Patroni's GET /primary. Kasir reaches it
// through HAProxy (the default) or through a libpq host list naming the three nodes
// (`--multi-host`, target_session_attrs=read-write): the two ways docs/deploy.md offers.
//
// A crash here is a failover: SIGKILL to the primary's Patroni, its postmaster and every backend
// (the machine dying, as far as one host can tell), then the wait for a standby to be promoted
// and to accept a write through Kasir's URL; then the dead node's Patroni is started again and
// rejoins as a standby (pg_rewind), so the next kill again finds a synchronous standby.
//
// Patroni's timing is the drill's own: ttl 10 s, loop_wait 2 s, retry_timeout 4 s (the leader
// key outlives a dead primary by at most ttl; Patroni's default ttl of 30 s triples the outage).
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, openSync, closeSync, readFileSync } from 'node:fs';
import { chmod, chown, mkdir, writeFile } from 'node:fs/promises';
import { setTimeout as delay } from 'node:timers/promises';
import pg from 'pg';
import { newClient } from '../../db/database-hosts.ts';
import { freePort, newPassword } from '../lib/cluster.ts';
import { alive } from '../lib/orphan.ts';
import type { CrashRecord, SoakPostgres } from './postgres.ts';

const PACKAGES = { patroni: 'patroni', etcd: 'etcd-server', haproxy: 'haproxy', 'python3-etcd': 'python3-etcd' } as const;
const PATRONI = { ttl: 10, loopWait: 2, retryTimeout: 4 };
const NODES = 3;
const READY_DEADLINE_MS = 120_000;
const FAILOVER_DEADLINE_MS = 90_000;

export interface FailoverRecord extends CrashRecord {
  /** The node killed, and the one promoted in its place. */
  killed: string;
  promoted: string;
  /** When Patroni reported the new leader (GET /primary answered 200). */
  promotedAt: number;
  /** When the killed node was streaming again as a standby. */
  rejoinedAt: number | null;
}

export interface PatroniCluster extends SoakPostgres {
  crashes: FailoverRecord[];
  /** Each node's state as Patroni tells it (GET /cluster), for the report. */
  members(): Promise<Array<{ name: string; role: string; state: string; lag?: number | string }>>;
}

interface Node {
  name: string;
  pgPort: number;
  restPort: number;
  dataDir: string;
  config: string;
  patroni: ChildProcess | null;
}

/** The PostgreSQL binaries Patroni runs: Debian's newest installed major, 15 or later. */
function postgresBin(): string {
  const majors = existsSync('/usr/lib/postgresql')
    ? execFileSync('ls', ['/usr/lib/postgresql'], { encoding: 'utf8' }).split('\n').filter((m) => /^\d+$/.test(m) && Number(m) >= 15)
    : [];
  const major = majors.sort((a, b) => Number(b) - Number(a))[0];
  if (!major) throw new Error('no PostgreSQL 15+ server under /usr/lib/postgresql (apt-get install postgresql)');
  return `/usr/lib/postgresql/${major}/bin`;
}

/** Installs what is missing of Patroni, etcd and HAProxy from Debian's packages (needs root). */
export function ensurePackages(log: (line: string) => void): void {
  const missing: string[] = [];
  if (!existsSync('/usr/bin/patroni')) missing.push(PACKAGES.patroni);
  if (!existsSync('/usr/bin/etcd')) missing.push(PACKAGES.etcd);
  if (!existsSync('/usr/sbin/haproxy')) missing.push(PACKAGES.haproxy);
  try {
    execFileSync('/usr/bin/python3', ['-c', 'import etcd'], { stdio: 'ignore' });
  } catch {
    missing.push(PACKAGES['python3-etcd']);
  }
  if (!existsSync('/usr/lib/postgresql')) missing.push('postgresql');
  if (!missing.length) return;
  if (process.getuid?.() !== 0) throw new Error(`the drill needs ${missing.join(', ')}: apt-get install them (as root)`);
  log(`installing ${missing.join(', ')} from Debian's packages`);
  execFileSync('apt-get', ['update'], { stdio: 'ignore' });
  execFileSync('apt-get', ['install', '-y', '--no-install-recommends', ...missing], { stdio: 'ignore', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
}

/** Runs a child as the postgres user when we are root (PostgreSQL refuses root), logging to a file. */
function start(command: string, args: string[], logFile: string, asPostgres: boolean): ChildProcess {
  const log = openSync(logFile, 'a');
  const user = asPostgres && process.getuid?.() === 0
    ? { uid: Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' })), gid: Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' })) }
    : {};
  const child = spawn(command, args, { stdio: ['ignore', log, log], detached: true, ...user, env: { ...process.env, PATH: `/usr/bin:/usr/sbin:/bin:${process.env.PATH}` } });
  closeSync(log);
  return child;
}

async function until<T>(what: string, deadlineMs: number, check: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + deadlineMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`${what} within ${deadlineMs} ms${last ? `: ${(last as Error).message}` : ''}`);
    await delay(100);
  }
}

async function rest(node: Node, path: string): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${node.restPort}${path}`, { signal: AbortSignal.timeout(1_000) });
  await res.arrayBuffer();
  return res.status;
}

/** Whether a write goes through `url` now: a session on the primary, not in recovery. */
async function writable(url: string): Promise<boolean> {
  const client = newClient(url, { connectionTimeoutMillis: 1_000 });
  // A node restarting under Patroni may cut an idle connection: an 'error' event with no
  // listener would end the drill's process (it did, in a clean-ci run), not this probe.
  client.on('error', () => undefined);
  try {
    await client.connect();
    const { rows } = await client.query('select pg_is_in_recovery() as r');
    return rows[0]?.r === false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

export async function startPatroniCluster(dir: string, logDir: string, options: { multiHost: boolean; log: (line: string) => void }): Promise<PatroniCluster> {
  ensurePackages(options.log);
  const bin = postgresBin();
  const superPassword = newPassword();
  const replicationPassword = newPassword();
  const etcd = await Promise.all(Array.from({ length: NODES }, async (_, i) => ({ name: `etcd${i + 1}`, client: await freePort(), peer: await freePort() })));
  const initialCluster = etcd.map((e) => `${e.name}=http://127.0.0.1:${e.peer}`).join(',');
  const etcdChildren: ChildProcess[] = [];
  const nodes: Node[] = [];
  let haproxy: ChildProcess | null = null;
  const everyPid = () => [
    ...etcdChildren.map((c) => c.pid),
    haproxy?.pid,
    ...nodes.flatMap((n) => {
      const pids = [n.patroni?.pid];
      try {
        pids.push(Number(readFileSync(`${n.dataDir}/postmaster.pid`, 'utf8').split('\n')[0]));
      } catch {
        // Not running.
      }
      return pids;
    }),
  ].filter((p): p is number => typeof p === 'number' && p > 0);
  const killAll = () => {
    for (const pid of everyPid()) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Gone already.
      }
    }
  };
  // Whatever way the drill ends, even half-built, no server of the cluster outlives it.
  process.once('exit', killAll);
  for (const member of etcd) {
    await mkdir(`${dir}/${member.name}`, { recursive: true });
    etcdChildren.push(start('/usr/bin/etcd', [
      '--name', member.name, '--data-dir', `${dir}/${member.name}`,
      '--listen-client-urls', `http://127.0.0.1:${member.client}`, '--advertise-client-urls', `http://127.0.0.1:${member.client}`,
      '--listen-peer-urls', `http://127.0.0.1:${member.peer}`, '--initial-advertise-peer-urls', `http://127.0.0.1:${member.peer}`,
      '--initial-cluster', initialCluster, '--initial-cluster-state', 'new', '--initial-cluster-token', 'kasir-drill',
      // Debian's Patroni 3.0 speaks etcd's v2 API (python3-etcd), which etcd 3.4 serves only when asked.
      '--enable-v2=true',
    ], `${logDir}/${member.name}.log`, false));
  }
  const etcdHosts = etcd.map((e) => `127.0.0.1:${e.client}`);
  await until('etcd to elect a leader', READY_DEADLINE_MS, async () => {
    const res = await fetch(`http://${etcdHosts[0]}/v2/members`, { signal: AbortSignal.timeout(1_000) });
    return res.ok ? true : undefined;
  });

  for (let i = 0; i < NODES; i++) {
    const name = `pg${i + 1}`;
    nodes.push({ name, pgPort: await freePort(), restPort: await freePort(), dataDir: `${dir}/${name}/data`, config: `${dir}/${name}/patroni.yml`, patroni: null });
  }
  const postgresUid = process.getuid?.() === 0 ? Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' })) : null;
  const postgresGid = process.getuid?.() === 0 ? Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' })) : null;
  for (const node of nodes) {
    await mkdir(`${dir}/${node.name}`, { recursive: true });
    await writeFile(node.config, patroniConfig(node, { bin, etcdHosts, superPassword, replicationPassword, dir }));
    await chmod(`${dir}/${node.name}`, 0o700);
    if (postgresUid !== null) {
      await chown(`${dir}/${node.name}`, postgresUid, postgresGid!);
      await chown(node.config, postgresUid, postgresGid!);
    }
  }
  const startPatroni = (node: Node) => {
    node.patroni = start('/usr/bin/patroni', [node.config], `${logDir}/${node.name}.log`, true);
  };
  // The first node bootstraps (initdb); the others then clone it, so the leader is known.
  startPatroni(nodes[0]!);
  await until(`${nodes[0]!.name} to bootstrap as primary`, READY_DEADLINE_MS, async () => ((await rest(nodes[0]!, '/primary')) === 200 ? true : undefined));
  for (const node of nodes.slice(1)) startPatroni(node);
  for (const node of nodes.slice(1)) {
    await until(`${node.name} to stream as a standby`, READY_DEADLINE_MS, async () => ((await rest(node, '/replica')) === 200 ? true : undefined));
  }

  // HAProxy: the primary by Patroni's health check, a connection to a demoted node cut at once.
  const haproxyPort = await freePort();
  await writeFile(`${dir}/haproxy.cfg`, haproxyConfig(nodes, haproxyPort));
  haproxy = start('/usr/sbin/haproxy', ['-db', '-f', `${dir}/haproxy.cfg`], `${logDir}/haproxy.log`, false);

  const userinfo = `postgres:${encodeURIComponent(superPassword)}`;
  const proxyUrl = (db = 'postgres') => `postgres://${userinfo}@127.0.0.1:${haproxyPort}/${db}`;
  const hostListUrl = (db = 'postgres') => `postgres://${userinfo}@${nodes.map((n) => `127.0.0.1:${n.pgPort}`).join(',')}/${db}?target_session_attrs=read-write`;
  // HAProxy starts every server as up and marks the standbys down only after `fall` failed
  // checks (2 s): until then a connection may land on a standby. Wait for several writes in a row.
  let inARow = 0;
  await until('HAProxy to send every connection to the primary', READY_DEADLINE_MS, async () => {
    inARow = (await writable(proxyUrl()).catch(() => false)) ? inARow + 1 : 0;
    return inARow >= 30 ? true : undefined;
  });
  // Retried: HAProxy may still move a connection while the cluster settles.
  await until('the kasir database created', READY_DEADLINE_MS, async () => {
    const admin = new pg.Client({ connectionString: proxyUrl() });
    admin.on('error', () => undefined);
    try {
      await admin.connect();
      await admin.query('create database kasir');
      return true;
    } catch (error) {
      if ((error as { code?: string }).code === '42P04') return true; // made by the attempt whose answer was lost
      return undefined;
    } finally {
      await admin.end().catch(() => undefined);
    }
  });
  const url = options.multiHost ? hostListUrl('kasir') : proxyUrl('kasir');

  const crashes: FailoverRecord[] = [];
  const leader = async (): Promise<Node | undefined> => {
    for (const node of nodes) if ((await rest(node, '/primary').catch(() => 0)) === 200) return node;
    return undefined;
  };
  const killNode = (node: Node) => {
    // Patroni first, so it cannot restart the postmaster; then the postmaster and its backends.
    if (node.patroni?.pid) process.kill(node.patroni.pid, 'SIGKILL');
    const postmaster = Number(readFileSync(`${node.dataDir}/postmaster.pid`, 'utf8').split('\n')[0]);
    if (Number.isInteger(postmaster) && postmaster > 0) {
      const backends = execFileSync('ps', ['-o', 'pid=', '--ppid', String(postmaster)], { encoding: 'utf8' }).split('\n').map(Number).filter((p) => p > 0);
      process.kill(postmaster, 'SIGKILL');
      for (const pid of backends) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // Already gone with its postmaster.
        }
      }
    }
  };
  return {
    url,
    crashes,
    async crashAndRestart() {
      const primary = await until('a primary to kill', FAILOVER_DEADLINE_MS, leader);
      const killedAt = Date.now();
      killNode(primary);
      const promoted = await until('a standby to be promoted', FAILOVER_DEADLINE_MS, async () => {
        for (const node of nodes) if (node !== primary && (await rest(node, '/primary').catch(() => 0)) === 200) return node;
        return undefined;
      });
      const promotedAt = Date.now();
      let attempts = 0;
      await until(`a write through Kasir's URL after the failover`, FAILOVER_DEADLINE_MS, async () => {
        attempts++;
        return (await writable(url)) ? true : undefined;
      });
      const record: FailoverRecord = { killedAt, readyAt: Date.now(), attempts, killed: primary.name, promoted: promoted.name, promotedAt, rejoinedAt: null };
      crashes.push(record);
      // The dead node comes back as a standby (pg_rewind), as an operator's restart would bring it.
      while (primary.patroni?.pid && alive(primary.patroni.pid)) await delay(20);
      startPatroni(primary);
      await until(`${primary.name} to rejoin as a standby`, READY_DEADLINE_MS, async () => ((await rest(primary, '/replica').catch(() => 0)) === 200 ? true : undefined));
      record.rejoinedAt = Date.now();
      return record;
    },
    async members() {
      const res = await fetch(`http://127.0.0.1:${nodes[0]!.restPort}/cluster`, { signal: AbortSignal.timeout(2_000) }).catch(() => null);
      const body = res?.ok ? ((await res.json()) as { members: Array<{ name: string; role: string; state: string; lag?: number | string }> }) : { members: [] };
      return body.members.map(({ name, role, state, lag }) => ({ name, role, state, lag }));
    },
    async stop() {
      // Standbys and proxy first, the primary last, etcd after Patroni has let go of its keys.
      haproxy?.kill('SIGTERM');
      const current = await leader().catch(() => undefined);
      for (const node of [...nodes.filter((n) => n !== current), ...(current ? [current] : [])]) {
        if (!node.patroni?.pid || !alive(node.patroni.pid)) continue;
        node.patroni.kill('SIGTERM');
        await until(`${node.name} to stop`, 30_000, async () => (alive(node.patroni!.pid!) ? undefined : true)).catch(() => node.patroni?.kill('SIGKILL'));
      }
      for (const child of etcdChildren) child.kill('SIGTERM');
    },
    killNow: killAll,
  };
}

function patroniConfig(node: Node, o: { bin: string; etcdHosts: string[]; superPassword: string; replicationPassword: string; dir: string }): string {
  // JSON is YAML: no YAML library needed to write Patroni's configuration.
  return JSON.stringify({
    scope: 'kasir-drill',
    name: node.name,
    restapi: { listen: `127.0.0.1:${node.restPort}`, connect_address: `127.0.0.1:${node.restPort}` },
    etcd: { hosts: o.etcdHosts },
    bootstrap: {
      dcs: {
        ttl: PATRONI.ttl,
        loop_wait: PATRONI.loopWait,
        retry_timeout: PATRONI.retryTimeout,
        maximum_lag_on_failover: 1048576,
        // Strict: a commit is acknowledged only once a standby holds it, and with no standby the
        // primary stops acknowledging rather than run alone; only a synchronous standby is promoted.
        synchronous_mode: true,
        synchronous_mode_strict: true,
        postgresql: {
          use_pg_rewind: true,
          use_slots: true,
          parameters: {
            max_connections: 300,
            wal_level: 'replica',
            hot_standby: 'on',
            wal_log_hints: 'on',
            max_wal_senders: 10,
            max_replication_slots: 10,
            wal_keep_size: '256MB',
          },
        },
      },
      initdb: [{ encoding: 'UTF8' }, 'data-checksums', { auth: 'scram-sha-256' }],
    },
    postgresql: {
      listen: `127.0.0.1:${node.pgPort}`,
      connect_address: `127.0.0.1:${node.pgPort}`,
      data_dir: node.dataDir,
      bin_dir: o.bin,
      pgpass: `${o.dir}/${node.name}/pgpass`,
      authentication: {
        superuser: { username: 'postgres', password: o.superPassword },
        replication: { username: 'replicator', password: o.replicationPassword },
        rewind: { username: 'postgres', password: o.superPassword },
      },
      parameters: { unix_socket_directories: `${o.dir}/${node.name}` },
      pg_hba: [
        'local all all trust',
        'host replication replicator 127.0.0.1/32 scram-sha-256',
        'host all all 127.0.0.1/32 scram-sha-256',
      ],
    },
  }, null, 2);
}

function haproxyConfig(nodes: Node[], port: number): string {
  return `global
    maxconn 1000

defaults
    mode tcp
    timeout connect 2s
    timeout client 30m
    timeout server 30m
    retries 2

listen primary
    bind 127.0.0.1:${port}
    option httpchk OPTIONS /primary
    http-check expect status 200
    default-server inter 1s fall 2 rise 2 on-marked-down shutdown-sessions
${nodes.map((n) => `    server ${n.name} 127.0.0.1:${n.pgPort} maxconn 300 check port ${n.restPort}`).join('\n')}
`;
}
