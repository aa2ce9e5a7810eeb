// libpq multi-host connection URLs, parsed (db/database-hosts.ts opens connections on them):
//   postgres://user:pw@db1:5432,db2:5432,db3:5432/kasir?target_session_attrs=read-write
// Pure, so the configuration can check a URL without loading a database driver.

export const TARGET_SESSION_ATTRS = ['any', 'read-write', 'read-only', 'primary', 'standby', 'prefer-standby'] as const;
export type TargetSessionAttrs = (typeof TARGET_SESSION_ATTRS)[number];

export interface DatabaseHost {
  host: string;
  port: number;
}

export interface ParsedDatabaseUrl {
  hosts: DatabaseHost[];
  targetSessionAttrs: TargetSessionAttrs;
  /** The same URL naming one node (and without target_session_attrs, which the drivers do not know). */
  forHost(host: DatabaseHost): string;
}

const HOST_LIST = /^(postgres(?:ql)?:\/\/)([^@/?#]*@)?([^/?#]*)(.*)$/;

/** Splits a connection URL's host list; throws a message naming the problem when it is not one. */
export function parseDatabaseUrl(url: string): ParsedDatabaseUrl {
  const match = HOST_LIST.exec(url);
  if (!match) throw new Error('not a postgres:// connection URL');
  const [, scheme, userinfo = '', hostList, rest] = match as unknown as [string, string, string | undefined, string, string];
  const hosts = hostList.split(',').map((part) => parseHost(part));
  if (hosts.length > 1 && hosts.some((h) => !h.host)) throw new Error('a host of the list is empty');
  const query = new URLSearchParams(rest.includes('?') ? rest.slice(rest.indexOf('?') + 1).replace(/#.*$/, '') : '');
  const attrs = query.get('target_session_attrs') ?? 'any';
  if (!(TARGET_SESSION_ATTRS as readonly string[]).includes(attrs)) {
    throw new Error(`target_session_attrs must be one of ${TARGET_SESSION_ATTRS.join(', ')}`);
  }
  query.delete('target_session_attrs');
  const path = rest.replace(/[?#].*$/, '');
  const search = query.toString();
  return {
    hosts,
    targetSessionAttrs: attrs as TargetSessionAttrs,
    forHost: ({ host, port }) => `${scheme}${userinfo}${host.includes(':') ? `[${host}]` : host}:${port}${path}${search ? `?${search}` : ''}`,
  };
}

function parseHost(part: string): DatabaseHost {
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(part);
  if (bracketed) return { host: bracketed[1]!, port: Number(bracketed[2] ?? 5432) };
  const [host = '', port] = part.split(':');
  if (port !== undefined && !/^\d+$/.test(port)) throw new Error(`port of ${part} is not a number`);
  return { host, port: Number(port ?? 5432) };
}

/** Whether a URL names more than one node (and so needs this module's connections). */
export function isMultiHost(url: string): boolean {
  const match = HOST_LIST.exec(url);
  return match !== null && (match[3] ?? '').includes(',');
}
