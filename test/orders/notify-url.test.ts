// Unit tests of the notify_url SSRF guard (db/notify-url.ts): the create-time check on what a
// URL says, and the delivery-time lookup that refuses private addresses a name resolves to.
// IP literals resolve to themselves without DNS, and `localhost` through the hosts file, so
// none of this needs a network.
import t from 'tap';
import type { LookupAddress } from 'node:dns';
import { createServer } from 'node:http';
import { assertDestinationAllowed, BlockedDestination, checkNotifyUrl, guardedLookup, isPublicAddress } from '../../db/notify-url.ts';
import { DestinationPools } from '../../workers/webhook-deliver.ts';

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

// Every way of writing an address that is not public, as a URL may carry it. The create-time
// check, the delivery-time check of the URL and the delivery-time lookup must all refuse each.
const IPV6_FORMS = [
  ['IPv4-compatible loopback', '::127.0.0.1'],
  ['IPv4-compatible private', '::10.0.0.1'],
  ['IPv4-compatible public (deprecated, unroutable)', '::8.8.8.8'],
  ['IPv4-mapped loopback in hex', '::ffff:7f00:1'],
  ['IPv4-mapped loopback, expanded', '0:0:0:0:0:ffff:127.0.0.1'],
  ['IPv4-mapped cloud metadata', '::ffff:169.254.169.254'],
  ['IPv4-translated (SIIT) loopback', '::ffff:0:127.0.0.1'],
  ['loopback, fully expanded', '0000:0000:0000:0000:0000:0000:0000:0001'],
  ['unspecified', '::'],
  ['NAT64 of loopback', '64:ff9b::127.0.0.1'],
  ['local-use NAT64', '64:ff9b:1::a00:1'],
  ['discard-only', '100::1'],
  ['6to4 of loopback', '2002:7f00:1::1'],
  ['Teredo', '2001:0:4136:e378:8000:63bf:3fff:fdd2'],
  ['documentation', '2001:db8::1'],
  ['unique local fc00::/8', 'fc00::1'],
  ['unique local, expanded', 'fd12:3456:789a:0001:0000:0000:0000:0001'],
  ['link-local, top of fe80::/10', 'febf::1'],
  ['site-local (deprecated)', 'fec0::1'],
  ['multicast', 'ff02::1'],
] as const;

const IPV4_EXTRA = [
  ['broadcast', '255.255.255.255'],
  ['multicast', '224.0.0.1'],
  ['IETF protocol assignments', '192.0.0.1'],
  ['benchmarking', '198.18.0.1'],
] as const;

const TRAILING_DOTS = [
  'http://localhost./hook',
  'http://LOCALHOST.:8080/hook',
  'http://localhost../hook',
  'http://metadata.google.internal./computeMetadata/v1/',
  'http://metadata./',
  'http://printer.local./',
  'http://db.internal./',
  'http://intranet./hook',
] as const;

t.test('every IPv6 form of a non-public address is refused at create time', async (t) => {
  for (const [label, ip] of [...IPV6_FORMS, ...IPV4_EXTRA]) {
    t.match(checkNotifyUrl(`http://${urlHost(ip)}/hook`, []), /private or local/, `${label} (${ip}) refused`);
  }
  t.match(checkNotifyUrl('http://[fe80::1%25eth0]/hook', []), /absolute URL/, 'a zone id is no URL at all');
});

/** What assertDestinationAllowed threw, or null. */
function refusal(url: string, allowlist: readonly string[] = []): unknown {
  try {
    assertDestinationAllowed(url, allowlist);
    return null;
  } catch (err) {
    return err;
  }
}

t.test('the delivery-time check refuses the same URLs, and lets the same public ones through', async (t) => {
  for (const [label, ip] of [...PRIVATE, ...IPV6_FORMS, ...IPV4_EXTRA]) {
    t.ok(refusal(`http://${urlHost(ip)}/hook`) instanceof BlockedDestination, `${label} (${ip}) blocked`);
  }
  for (const url of TRAILING_DOTS) t.ok(refusal(url) instanceof BlockedDestination, `${url} blocked`);
  for (const [label, ip] of PUBLIC) t.doesNotThrow(() => assertDestinationAllowed(`https://${urlHost(ip)}/hook`, []), `${label} (${ip}) passes`);
  t.doesNotThrow(() => assertDestinationAllowed('http://localhost.:3000/hook', ['localhost']), 'an allowlisted name, with its trailing dot');
});

t.test('the delivery-time lookup refuses every IPv6 form it is handed', async (t) => {
  const lookup = guardedLookup([]);
  for (const [label, ip] of [...IPV6_FORMS, ...IPV4_EXTRA]) {
    const { err } = await resolve(lookup, ip);
    t.ok(err instanceof BlockedDestination, `${label} (${ip}) blocked: ${err?.message}`);
  }
  const dotted = await resolve(lookup, 'localhost.');
  t.ok(dotted.err === null ? false : dotted.err instanceof BlockedDestination || dotted.err.code === 'ENOTFOUND', `localhost. is never reached: ${dotted.err?.message}`);
});

t.test("the webhook worker's connections resolve through the guarded lookup", async (t) => {
  // A name the create-time rules cannot judge (here localhost, which they would refuse by name,
  // asked for past them) is judged on its addresses when a connection is opened.
  let received = 0;
  const server = createServer((req, res) => {
    received++;
    res.end('ok');
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  t.teardown(() => server.close());
  const port = (server.address() as { port: number }).port;

  const guarded = new DestinationPools(2, guardedLookup([]), 2_000);
  const allowing = new DestinationPools(2, guardedLookup(['localhost']), 2_000);
  t.teardown(() => {
    guarded.destroy();
    allowing.destroy();
  });
  const post = (pools: DestinationPools) => pools.for(`http://localhost:${port}`).request({ path: '/hook', method: 'POST', body: '{}' });
  const refused = await post(guarded).then(() => null, (err: unknown) => err);
  t.ok(refused instanceof BlockedDestination, `localhost resolves to 127.0.0.1, so no connection is made: ${String(refused)}`);
  t.equal(received, 0, 'the private receiver got nothing');
  const answer = await post(allowing);
  await answer.body.dump();
  t.equal(answer.statusCode, 200, 'allowlisted, the same name is reached');
  t.equal(received, 1);
});

t.test('isPublicAddress: one classification, failing closed', async (t) => {
  for (const [label, ip] of [...PRIVATE, ...IPV6_FORMS, ...IPV4_EXTRA]) t.equal(isPublicAddress(ip), false, `${label} (${ip})`);
  for (const [label, ip] of PUBLIC) t.equal(isPublicAddress(ip), true, `${label} (${ip})`);
  t.equal(isPublicAddress('2606:4700:4700::1111'), true, 'another public IPv6');
  t.equal(isPublicAddress('2001:4860:4860:0:0:0:0:8888'), true, 'a public IPv6, expanded');
  t.equal(isPublicAddress('fe80::1%eth0'), false, 'a zone id (link-scoped)');
  t.equal(isPublicAddress('2001:4860:4860::8888%eth0'), false, 'a zone id on any address');
  t.equal(isPublicAddress('localhost'), false, 'not an address');
  t.equal(isPublicAddress(''), false, 'empty');
});

t.test('trailing dots: local names are refused at create time, and allowlisted names still match', async (t) => {
  for (const url of TRAILING_DOTS) t.match(checkNotifyUrl(url, []), /local host name/, `${url} refused`);
  t.equal(checkNotifyUrl('http://localhost.:3000/hook', ['localhost']), null, 'allowlisted name, written fully qualified');
  t.equal(checkNotifyUrl('http://hooks.example.com./hook', []), null, 'a public name, written fully qualified');
  t.match(checkNotifyUrl('http://127.0.0.1./hook', []), /private or local/, 'an IPv4 literal with a trailing dot');
});
