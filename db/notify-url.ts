// Where webhooks may go. A merchant-supplied URL must not turn Kasir into a proxy into its own
// network: loopback, private, link-local (cloud metadata), CGNAT and other special ranges are
// refused unless the host is in NOTIFY_URL_ALLOWLIST (host names or CIDRs).
// Checked twice: at create time on what the URL says (scheme, literal IPs, local names), and
// at delivery time on the addresses the name resolves to — through the very lookup the HTTP
// client then connects with, so a DNS answer cannot change between check and connect.
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import ipaddr from 'ipaddr.js';

const LOCAL_NAMES = /(^|\.)(localhost|local|internal|localdomain)$/i;
const METADATA_NAMES = new Set(['metadata.google.internal', 'metadata', 'instance-data']);

export class BlockedDestination extends Error {}

function isPublic(address: string): boolean {
  let parsed = ipaddr.parse(address);
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) {
    parsed = (parsed as ipaddr.IPv6).toIPv4Address();
  }
  return parsed.range() === 'unicast';
}

function allowed(host: string, address: string | null, allowlist: readonly string[]): boolean {
  const name = host.toLowerCase().replace(/^\[|\]$/g, '');
  for (const entry of allowlist) {
    if (entry.includes('/')) {
      if (address && ipaddr.isValid(address)) {
        try {
          const [range, bits] = ipaddr.parseCIDR(entry);
          const ip = ipaddr.parse(address);
          if (ip.kind() === range.kind() && ip.match(range, bits)) return true;
        } catch {
          // not a CIDR after all: fall through to name comparison
        }
      }
    } else if (entry.toLowerCase() === name || (address !== null && entry === address)) {
      return true;
    }
  }
  return false;
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
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (allowed(host, ipaddr.isValid(host) ? host : null, allowlist)) return null;
  if (ipaddr.isValid(host)) return isPublic(host) ? null : 'must not point to a private or local address';
  if (LOCAL_NAMES.test(host) || METADATA_NAMES.has(host.toLowerCase()) || !host.includes('.')) {
    return 'must not point to a local host name';
  }
  return null;
}

/** Delivery-time check of an IP-literal host: Node connects to it without calling the lookup. */
export function assertLiteralHostAllowed(raw: string, allowlist: readonly string[]): void {
  const host = new URL(raw).hostname.replace(/^\[|\]$/g, '');
  if (ipaddr.isValid(host) && !allowed(host, host, allowlist) && !isPublic(host)) {
    throw new BlockedDestination(`${host} is a private or local address`);
  }
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
      const bad = list.find((a) => !allowed(hostname, a.address, allowlist) && !isPublic(a.address));
      if (bad) {
        return callback(new BlockedDestination(`${hostname} resolves to ${bad.address}, a private or local address`), []);
      }
      if ((options as { all?: boolean }).all) return callback(null, list);
      callback(null, list[0].address, list[0].family);
    });
  };
}
