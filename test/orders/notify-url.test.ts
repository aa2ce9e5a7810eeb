// Unit tests of the notify_url SSRF guard (db/notify-url.ts): the create-time check on what a
// URL says, and the delivery-time lookup that refuses private addresses a name resolves to.
// IP literals resolve to themselves without DNS, and `localhost` through the hosts file, so
// none of this needs a network.
import t from 'tap';
import type { LookupAddress } from 'node:dns';
import { BlockedDestination, checkNotifyUrl, guardedLookup } from '../../db/notify-url.ts';

const PRIVATE = [
  ['10/8', '10.0.0.1'],
  ['10/8 top', '10.255.255.254'],
  ['172.16/12', '172.16.0.1'],
  ['172.16/12 top', '172.31.255.254'],
  ['192.168/16', '192.168.1.10'],
  ['loopback', '127.0.0.1'],
  ['loopback /8', '127.1.2.3'],
  ['cloud metadata', '169.254.169.254'],
  ['CGNAT 100.64/10', '100.64.0.1'],
  ['CGNAT 100.64/10 top', '100.127.255.254'],
  ['unspecified', '0.0.0.0'],
  ['IPv6 loopback', '::1'],
  ['IPv4-mapped loopback', '::ffff:127.0.0.1'],
  ['IPv4-mapped private', '::ffff:10.0.0.1'],
  ['IPv6 unique local', 'fd00::1'],
  ['IPv6 link-local', 'fe80::1'],
] as const;

const PUBLIC = [
  ['just below 172.16/12', '172.15.255.254'],
  ['just above 172.16/12', '172.32.0.1'],
  ['just above 100.64/10', '100.128.0.1'],
  ['public IPv4', '8.8.8.8'],
  ['public IPv6', '2001:4860:4860::8888'],
  ['IPv4-mapped public', '::ffff:8.8.8.8'],
] as const;

const urlHost = (ip: string) => (ip.includes(':') ? `[${ip}]` : ip);

t.test('checkNotifyUrl refuses private and local literal addresses', async (t) => {
  for (const [label, ip] of PRIVATE) {
    t.match(checkNotifyUrl(`http://${urlHost(ip)}/hook`, []), /private or local/, `${label} (${ip}) refused`);
  }
  t.match(checkNotifyUrl('http://2130706433/hook', []), /private or local/, 'decimal loopback (normalised to 127.0.0.1) refused');
  t.match(checkNotifyUrl('http://0x7f.1/hook', []), /private or local/, 'hex loopback refused');
});

t.test('checkNotifyUrl accepts public literal addresses and names', async (t) => {
  for (const [label, ip] of PUBLIC) t.equal(checkNotifyUrl(`https://${urlHost(ip)}/hook`, []), null, `${label} (${ip}) accepted`);
  t.equal(checkNotifyUrl('https://hooks.merchant.example.com/kasir?x=1', []), null, 'a public host name');
});

t.test('checkNotifyUrl refuses local names, other schemes, credentials and non-URLs', async (t) => {
  for (const url of ['http://localhost/hook', 'http://LOCALHOST:8080/', 'http://printer.local/', 'http://db.internal/', 'http://metadata.google.internal/', 'http://intranet/hook']) {
    t.match(checkNotifyUrl(url, []), /local host name/, `${url} refused`);
  }
  t.match(checkNotifyUrl('ftp://example.com/hook', []), /http or https/);
  t.match(checkNotifyUrl('file:///etc/passwd', []), /http or https/);
  t.match(checkNotifyUrl('gopher://example.com:70/', []), /http or https/);
  t.match(checkNotifyUrl('https://user:pw@example.com/hook', []), /credentials/);
  t.match(checkNotifyUrl('/relative/hook', []), /absolute URL/);
  t.match(checkNotifyUrl('not a url', []), /absolute URL/);
});

t.test('checkNotifyUrl lets allowlisted hosts and CIDRs through', async (t) => {
  t.equal(checkNotifyUrl('http://localhost:3000/hook', ['localhost']), null, 'allowlisted name');
  t.equal(checkNotifyUrl('http://LocalHost:3000/hook', ['localhost']), null, 'names compare case-insensitively');
  t.equal(checkNotifyUrl('http://127.0.0.1:3000/hook', ['127.0.0.1']), null, 'allowlisted address');
  t.equal(checkNotifyUrl('http://10.20.30.40/hook', ['10.20.0.0/16']), null, 'address inside an allowlisted CIDR');
  t.match(checkNotifyUrl('http://10.21.0.1/hook', ['10.20.0.0/16']), /private or local/, 'address outside the CIDR');
  t.equal(checkNotifyUrl('http://[fd00::5]/hook', ['fd00::/64']), null, 'IPv6 CIDR');
  t.match(checkNotifyUrl('http://127.0.0.1/hook', ['localhost']), /private or local/, 'an allowlisted name does not allow its address');
  t.match(checkNotifyUrl('http://localhost/hook', ['127.0.0.1']), /local host name/, 'an allowlisted address does not allow a name');
});

type Lookup = ReturnType<typeof guardedLookup>;

function resolve(lookup: Lookup, host: string, options: object = {}) {
  return new Promise<{ err: NodeJS.ErrnoException | null; address: string | LookupAddress[]; family?: number }>((done) =>
    lookup(host, options, (err, address, family) => done({ err, address, family })),
  );
}

t.test('guardedLookup refuses hosts resolving to private addresses', async (t) => {
  const lookup = guardedLookup([]);
  for (const [label, ip] of PRIVATE) {
    const { err } = await resolve(lookup, ip);
    t.ok(err instanceof BlockedDestination, `${label} (${ip}) blocked`);
    t.ok(err?.message.includes(ip), `the error names the address: ${err?.message}`);
  }
  const named = await resolve(lookup, 'localhost');
  t.ok(named.err instanceof BlockedDestination, 'a name resolving to loopback (localhost) is blocked');
  t.match(named.err?.message, /localhost resolves to/);
});

t.test('guardedLookup passes public addresses in the shape the caller asked for', async (t) => {
  const lookup = guardedLookup([]);
  for (const [label, ip] of PUBLIC) {
    const single = await resolve(lookup, ip);
    t.equal(single.err, null, `${label} (${ip}) allowed`);
    t.type(single.address, 'string', 'one address without all: true');
    t.ok(single.family === 4 || single.family === 6, 'with its family');
  }
  const all = await resolve(lookup, '8.8.8.8', { all: true });
  t.equal(all.err, null);
  t.strictSame(all.address, [{ address: '8.8.8.8', family: 4 }], 'a list with all: true');
});

t.test('guardedLookup lets allowlisted hosts and CIDRs through', async (t) => {
  const byName = await resolve(guardedLookup(['localhost']), 'localhost');
  t.equal(byName.err, null, 'allowlisted name');
  t.match(String(byName.address), /^(127\.0\.0\.1|::1)$/, 'resolved to loopback');

  const byCidr = await resolve(guardedLookup(['127.0.0.0/8', '::1/128']), 'localhost');
  t.equal(byCidr.err, null, 'name whose address is inside an allowlisted CIDR');

  const byAddress = await resolve(guardedLookup(['10.1.2.3']), '10.1.2.3');
  t.equal(byAddress.err, null, 'allowlisted address');

  const outside = await resolve(guardedLookup(['10.1.0.0/16']), '10.2.0.1');
  t.ok(outside.err instanceof BlockedDestination, 'an address outside the allowlisted CIDR is blocked');

  const metadata = await resolve(guardedLookup(['10.0.0.0/8']), '169.254.169.254');
  t.ok(metadata.err instanceof BlockedDestination, 'allowlisting one range does not open the metadata address');
});
