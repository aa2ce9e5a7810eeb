// Where webhooks may go. A merchant-supplied URL must not turn Kasir into a proxy into its own
// network: loopback, private, link-local (cloud metadata), CGNAT and other special ranges are
// refused unless the host is in NOTIFY_URL_ALLOWLIST (host names or CIDRs).
// Checked twice: at create time on what the URL says (scheme, literal IPs, local names), and
// at delivery time by the same rules again and then on the addresses the name resolves to —
// through the very lookup the HTTP client then connects with, so a DNS answer cannot change
// between check and connect. Both read one address classification (isPublicAddress) and one
// host normalisation, so they cannot disagree on an IPv6 form or a trailing dot.
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP } from 'node:net';

const LOCAL_NAMES = /(^|\.)(localhost|local|internal|localdomain)$/i;
const METADATA_NAMES = new Set(['metadata.google.internal', 'metadata', 'instance-data']);

// What "public" means, in one table both checks read (IANA special-purpose registries). IPv4:
// everything outside these ranges. IPv6: only global unicast (2000::/3) minus the special blocks
// inside it; this refuses every other form by construction — loopback, unspecified,
// IPv4-compatible ::a.b.c.d (::/96), NAT64 64:ff9b::/96, SIIT ::ffff:0:a.b.c.d, discard 100::/64,
// unique-local fc00::/7, link-local fe80::/10, site-local fec0::/10, multicast ff00::/8 — so a
// range nobody listed here cannot slip through. IPv4-mapped ::ffff:a.b.c.d is judged as its IPv4.
// node:net's BlockList, not ipaddr.js: ipaddr.js reads ::127.0.0.1 as ::ffff:127.0.0.1.
const NOT_PUBLIC = new BlockList();
for (const [network, bits] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16],
  ['172.16.0.0', 12], ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.88.99.0', 24], ['192.168.0.0', 16],
  ['198.18.0.0', 15], ['198.51.100.0', 24], ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) NOT_PUBLIC.addSubnet(network, bits, 'ipv4');
// Teredo and other IETF assignments (2001::/23), documentation (2001:db8::/32, 3fff::/20), and
// 6to4 (2002::/16), which tunnels to whatever IPv4 address it embeds.
for (const [network, bits] of [['2001::', 23], ['2001:db8::', 32], ['2002::', 16], ['3fff::', 20]] as const) {
  NOT_PUBLIC.addSubnet(network, bits, 'ipv6');
}
const GLOBAL_UNICAST_V6 = new BlockList();
GLOBAL_UNICAST_V6.addSubnet('2000::', 3, 'ipv6');
const IPV4_MAPPED = new BlockList();
IPV4_MAPPED.addSubnet('::ffff:0:0', 96, 'ipv6');

export class BlockedDestination extends Error {}

/**
 * The one classification of an address, for the create-time check of IP literals and the
 * delivery-time check of what a name resolves to. Anything that is not a plain address — a zone
 * id (which only scopes link-local addresses), garbage — is not public.
 */
export function isPublicAddress(address: string): boolean {
  if (address.includes('%')) return false;
  switch (isIP(address)) {
    case 4:
      return !NOT_PUBLIC.check(address, 'ipv4');
    case 6:
      // A BlockList checks an IPv4-mapped address (in any spelling) against its IPv4 rules.
      if (IPV4_MAPPED.check(address, 'ipv6')) return !NOT_PUBLIC.check(address, 'ipv6');
      return GLOBAL_UNICAST_V6.check(address, 'ipv6') && !NOT_PUBLIC.check(address, 'ipv6');
    default:
      return false;
  }
}

/**
 * A URL's host as both checks compare it: lowercase, without IPv6 brackets, and without trailing
 * dots — `localhost.` is the fully qualified `localhost` and resolves the same.
 */
function normaliseHost(host: string): string {
  return host.toLowerCase().replace(/^\[|\]$/g, '').replace(/\.+$/, '');
}

interface Allowlist {
  names: Set<string>;
  /** Allowlisted addresses and CIDRs; an IPv4 entry also covers its IPv4-mapped spelling. */
  addresses: BlockList;
}

// NOTIFY_URL_ALLOWLIST is parsed once per config array, not per request.
const parsedAllowlists = new WeakMap<readonly string[], Allowlist>();

function parseAllowlist(entries: readonly string[]): Allowlist {
  const cached = parsedAllowlists.get(entries);
  if (cached) return cached;
  const parsed: Allowlist = { names: new Set(), addresses: new BlockList() };
  for (const entry of entries) {
    const [network, bits] = entry.split('/');
    const family = isIP(network);
    if (!family) {
      if (bits === undefined) parsed.names.add(normaliseHost(entry));
      continue; // a CIDR that is not one allows nothing
    }
    const type = family === 4 ? 'ipv4' : 'ipv6';
    if (bits === undefined) parsed.addresses.addAddress(network, type);
    else if (/^\d+$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128)) parsed.addresses.addSubnet(network, Number(bits), type);
  }
  parsedAllowlists.set(entries, parsed);
  return parsed;
}

/** An allowlisted name allows that name, an allowlisted address or CIDR that address: never across. */
function allowed(host: string, address: string | null, allowlist: readonly string[]): boolean {
  const parsed = parseAllowlist(allowlist);
  if (parsed.names.has(normaliseHost(host))) return true;
  if (address === null) return false;
  const family = isIP(address);
  return family !== 0 && parsed.addresses.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/** Create-time check; returns an error message naming the problem, or null. */
export function checkNotifyUrl(raw: string, allowlist: readonly string[]): string | null {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'must be an absolute URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'must use http or https';
  if (url.username || url.password) return 'must not carry credentials';
  const host = normaliseHost(url.hostname);
  const literal = isIP(host) ? host : null;
  if (allowed(host, literal, allowlist)) return null;
  if (literal) return isPublicAddress(literal) ? null : 'must not point to a private or local address';
  if (LOCAL_NAMES.test(host) || METADATA_NAMES.has(host) || !host.includes('.')) {
    return 'must not point to a local host name';
  }
  return null;
}

/**
 * Delivery-time check of the URL itself, the same rules as at create time (a merchant default
 * set by an operator, or a row stored before a rule was added, never passed them). IP-literal
 * hosts matter most here: Node connects to them without calling the lookup below.
 */
export function assertDestinationAllowed(raw: string, allowlist: readonly string[]): void {
  const problem = checkNotifyUrl(raw, allowlist);
  if (problem) throw new BlockedDestination(`notify URL ${problem}`);
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A dns.lookup replacement for the HTTP client: resolves, then refuses the connection if any
 * resolved address is not public (or allowlisted).
 */
export function guardedLookup(allowlist: readonly string[]) {
  return (hostname: string, options: object, callback: LookupCallback) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, []);
      const list = addresses as LookupAddress[];
      const bad = list.find((a) => !allowed(hostname, a.address, allowlist) && !isPublicAddress(a.address));
      if (bad) {
        return callback(new BlockedDestination(`${hostname} resolves to ${bad.address}, a private or local address`), []);
      }
      if ((options as { all?: boolean }).all) return callback(null, list);
      callback(null, list[0].address, list[0].family);
    });
  };
}
