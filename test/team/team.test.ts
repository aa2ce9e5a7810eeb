// Team management (spec 4.9) over real HTTP: users, roles, removal, the last-owner rule under
// concurrency, and team API keys issued with the ops CLI (stored hashed, revoked on removal).
import t from 'tap';
import { createHash, randomUUID } from 'node:crypto';
import pg from 'pg';
import { z } from 'zod';
import { sql } from '../../db/pool.ts';
import { setMerchantStatus } from '../../db/merchants.ts';
import { call } from '../helpers/http.ts';
import { makeBrand, makeMerchant } from '../helpers/factories.ts';
import { ops } from '../helpers/processes.ts';
import { startStack } from '../helpers/stack.ts';
import { addUser, issueKey, listUsers, makeUser, removeUser, setRole } from '../helpers/team.ts';

const stack = await startStack(t, { groups: [] });
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const probe = (apiKey: string, extra: Record<string, string> = {}) =>
  call(stack.api.url, { path: '/v1/orders', headers: { 'x-api-key': apiKey, ...extra } });

t.test('POST creates a user; GET lists the team oldest first with no meta', async (t) => {
  const m = await makeMerchant(stack.api.ctx);
  t.same((await listUsers(stack, m.api_key)).json, { success: true, data: [] }, 'a new merchant has no team users');

  const res = await addUser(stack, m.api_key, { full_name: '  Siti Rahma ', email: 'Siti@Toko.example', phone_number: '0812-3456-7890', role: 'finance' });
  t.equal(res.status, 201, res.text);
  t.equal(res.json.success, true);
  const user = res.json.data;
  t.same(Object.keys(user), ['id', 'full_name', 'email', 'phone_number', 'role', 'created_at']);
  t.match(user.id, UUID);
  t.equal(user.full_name, 'Siti Rahma');
  t.equal(user.email, 'Siti@Toko.example', 'email kept as given');
  t.equal(user.phone_number, '6281234567890', 'phone normalised to 62…');
  t.equal(user.role, 'finance');
  t.match(user.created_at, ISO);

  const second = await addUser(stack, m.api_key, { full_name: 'Budi', email: 'budi@toko.example', role: 'viewer' });
  t.equal(second.status, 201);
  t.equal(second.json.data.phone_number, null, 'phone_number is optional');
  for (const phone of ['+62 812 3456 7890', '62812-3456-7890', '812 3456 7890']) {
    const r = await addUser(stack, m.api_key, { full_name: 'P', email: `${randomUUID()}@x.example`, role: 'ops', phone_number: phone });
    t.equal(r.json.data.phone_number, '6281234567890', phone);
  }

  const list = await listUsers(stack, m.api_key);
  t.equal(list.status, 200);
  t.same(Object.keys(list.json), ['success', 'data'], 'no meta');
  t.equal(list.json.data.length, 5);
  t.same(list.json.data[0], user);
  t.equal(list.json.data[1].email, 'budi@toko.example');
});

t.test('bad bodies are 400 INVALID_BODY naming the field', async (t) => {
  const m = await makeMerchant(stack.api.ctx);
  const good = { full_name: 'Ani', email: 'ani@toko.example', role: 'ops' };
  const cases: [Record<string, unknown> | string, string][] = [
    [{ ...good, full_name: undefined }, 'full_name'],
    [{ ...good, full_name: '   ' }, 'full_name'],
    [{ ...good, full_name: 'x'.repeat(201) }, 'full_name'],
    [{ ...good, email: undefined }, 'email'],
    [{ ...good, email: 'not-an-email' }, 'email'],
    [{ ...good, email: 42 }, 'email'],
    [{ ...good, role: undefined }, 'role'],
    [{ ...good, role: 'admin' }, 'role'],
    [{ ...good, role: 'OWNER' }, 'role'],
    [{ ...good, phone_number: '12345' }, 'phone_number'],
    [{ ...good, phone_number: 812345678 }, 'phone_number'],
    ['[]', 'body'],
  ];
  for (const [body, field] of cases) {
    const res = await call(stack.api.url, { path: '/v1/my/users', headers: { 'x-api-key': m.api_key }, body });
    t.equal(res.status, 400, `${field}: ${res.text}`);
    t.equal(res.json.error.code, 'INVALID_BODY');
    if (field !== 'body') t.match(res.json.error.message, new RegExp(`^${field}: `));
  }
  t.same((await listUsers(stack, m.api_key)).json.data, [], 'nothing written');
});

t.test('a duplicate email in the merchant is 409 DUPLICATE_EMAIL, whatever its case', async (t) => {
  const m = await makeMerchant(stack.api.ctx);
  const other = await makeMerchant(stack.api.ctx);
  t.equal((await addUser(stack, m.api_key, { full_name: 'Dewi', email: 'dewi@toko.example', role: 'ops' })).status, 201);
  for (const email of ['dewi@toko.example', 'DEWI@Toko.Example', '  dewi@toko.example ']) {
    const res = await addUser(stack, m.api_key, { full_name: 'Dewi Again', email, role: 'viewer' });
    t.equal(res.status, 409, email);
    t.equal(res.json.error.code, 'DUPLICATE_EMAIL');
    t.match(res.json.error.message, /email/);
  }
  t.equal((await listUsers(stack, m.api_key)).json.data.length, 1);
  t.equal((await addUser(stack, other.api_key, { full_name: 'Dewi', email: 'dewi@toko.example', role: 'ops' })).status, 201,
    'the same email in another merchant is another user');

  // Concurrent creates of one email: exactly one user.
  const racers = await Promise.all([1, 2, 3, 4].map(() => addUser(stack, m.api_key, { full_name: 'Eko', email: 'eko@toko.example', role: 'ops' })));
  t.same(racers.map((r) => r.status).sort(), [201, 409, 409, 409]);
});

t.test('PATCH changes the role and answers with the user', async (t) => {
  const m = await makeMerchant(stack.api.ctx);
  const u = await makeUser(stack, m.api_key, 'viewer');
  const res = await setRole(stack, m.api_key, u.id, 'finance');
  t.equal(res.status, 200, res.text);
  t.same(res.json, { success: true, data: { ...u, role: 'finance' } });
  t.equal((await listUsers(stack, m.api_key)).json.data[0].role, 'finance', 'read back');
  t.equal((await setRole(stack, m.api_key, u.id, 'finance')).status, 200, 'the same role again is a no-op');
  for (const role of ['admin', undefined, null, 3]) {
    const bad = await setRole(stack, m.api_key, u.id, role);
    t.equal(bad.status, 400, String(role));
    t.equal(bad.json.error.code, 'INVALID_BODY');
    t.match(bad.json.error.message, /^role: /);
  }
});

t.test('DELETE removes the user: 200 {deleted: true}; gone from the list', async (t) => {
  const m = await makeMerchant(stack.api.ctx);
  const keep = await makeUser(stack, m.api_key, 'ops');
  const gone = await makeUser(stack, m.api_key, 'viewer');
  const res = await removeUser(stack, m.api_key, gone.id);
  t.equal(res.status, 200, res.text);
  t.same(res.json, { success: true, data: { deleted: true } });
  t.same((await listUsers(stack, m.api_key)).json.data, [keep]);
  const again = await removeUser(stack, m.api_key, gone.id);
  t.equal(again.status, 404);
  t.equal(again.json.error.code, 'USER_NOT_FOUND');
  const patch = await setRole(stack, m.api_key, gone.id, 'ops');
  t.equal(patch.status, 404, 'a removed user has no role to change');
  t.equal(patch.json.error.code, 'USER_NOT_FOUND');
  // The email is free again: the person comes back as a new user.
  const back = await addUser(stack, m.api_key, { full_name: 'Back', email: gone.email, role: 'viewer' });
  t.equal(back.status, 201);
  t.not(back.json.data.id, gone.id);
});

t.test('ids: a non-UUID is 400 INVALID_ID; unknown and other merchants\' users are 404 USER_NOT_FOUND', async (t) => {
  const m = await makeMerchant(stack.api.ctx);
  const other = await makeMerchant(stack.api.ctx);
  const theirs = await makeUser(stack, other.api_key, 'viewer');
  for (const id of ['123', 'not-a-uuid', `${randomUUID()}x`]) {
    const patch = await setRole(stack, m.api_key, id, 'ops');
    t.equal(patch.status, 400, id);
    t.equal(patch.json.error.code, 'INVALID_ID');
    const del = await removeUser(stack, m.api_key, id);
    t.equal(del.status, 400, id);
    t.equal(del.json.error.code, 'INVALID_ID');
  }
  for (const id of [randomUUID(), theirs.id]) {
    const patch = await setRole(stack, m.api_key, id, 'owner');
    t.equal(patch.status, 404);
    t.equal(patch.json.error.code, 'USER_NOT_FOUND');
    const del = await removeUser(stack, m.api_key, id);
    t.equal(del.status, 404);
    t.equal(del.json.error.code, 'USER_NOT_FOUND');
  }
  t.same((await listUsers(stack, other.api_key)).json.data, [theirs], "the other merchant's user is untouched");
});

t.test('the last owner can be neither demoted nor removed', async (t) => {
  const m = await makeMerchant(stack.api.ctx);
  const a = await makeUser(stack, m.api_key, 'owner');
  const viewer = await makeUser(stack, m.api_key, 'viewer');
  for (const role of ['finance', 'ops', 'viewer']) {
    const res = await setRole(stack, m.api_key, a.id, role);
    t.equal(res.status, 422, role);
    t.equal(res.json.error.code, 'LAST_OWNER');
  }
  const del = await removeUser(stack, m.api_key, a.id);
  t.equal(del.status, 422);
  t.equal(del.json.error.code, 'LAST_OWNER');
  t.equal((await setRole(stack, m.api_key, a.id, 'owner')).status, 200, 'staying owner is fine');

  // With a second owner, one of them may go; then the other is the last again.
  t.equal((await setRole(stack, m.api_key, viewer.id, 'owner')).status, 200);
  t.equal((await setRole(stack, m.api_key, a.id, 'ops')).status, 200);
  t.equal((await removeUser(stack, m.api_key, viewer.id)).json.error?.code, 'LAST_OWNER');
  t.equal((await removeUser(stack, m.api_key, a.id)).status, 200, 'a non-owner is removed freely');
  const users = (await listUsers(stack, m.api_key)).json.data;
  t.same(users.map((u: { role: string }) => u.role), ['owner']);
});

// The two requests are made to meet: the test holds a row lock on the first owner, so both
// requests are inside their transactions at once when it lets go. Without the team lock both
// would read two owners and both succeed.
t.test('concurrent demotions and removals of the last two owners: exactly one succeeds', async (t) => {
  const pool = stack.api.ctx.pool;
  const waiting = () => pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`);
  const variants = [['demote', 'demote'], ['demote', 'remove'], ['remove', 'remove'], ['remove', 'demote']] as const;
  for (const [first, second] of variants) {
    const m = await makeMerchant(stack.api.ctx);
    const a = await makeUser(stack, m.api_key, 'owner');
    const b = await makeUser(stack, m.api_key, 'owner');
    await makeUser(stack, m.api_key, 'finance');
    const act = (kind: 'demote' | 'remove', id: string) => (kind === 'remove' ? removeUser(stack, m.api_key, id) : setRole(stack, m.api_key, id, 'viewer'));
    const holder = new pg.Client({ connectionString: stack.env.DATABASE_URL });
    await holder.connect();
    await holder.query('begin');
    await holder.query('select id from merchant_users where id = $1 for update', [a.id]);
    const requests = Promise.all([act(first, a.id), act(second, b.id)]);
    const until = Date.now() + 3000;
    while ((await waiting()) < 2 && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
    await holder.query('commit');
    await holder.end();
    const results = await requests;
    const label = `${first}/${second}`;
    t.same(results.map((r) => r.status).sort(), [200, 422], `${label}: ${results.map((r) => r.text).join(' | ')}`);
    t.equal(results.find((r) => r.status === 422)?.json.error.code, 'LAST_OWNER', label);
    const owners = (await listUsers(stack, m.api_key)).json.data.filter((u: { role: string }) => u.role === 'owner');
    t.equal(owners.length, 1, `${label}: one owner remains`);
  }
});

t.test('user:issue-key prints a 64-hex key once and stores only its SHA-256', async (t) => {
  const m = await makeMerchant(stack.api.ctx);
  const u = await makeUser(stack, m.api_key, 'finance');
  const issued = await issueKey(stack, u.id);
  t.match(issued.api_key, /^[0-9a-f]{64}$/);
  t.same({ ...issued, api_key: 'k' }, { key_id: issued.key_id, user_id: u.id, merchant_id: m.merchant_id, role: 'finance', api_key: 'k' });
  const stored = await stack.api.ctx.pool.one(sql.type(z.object({ key_hash: z.instanceof(Buffer), merchant_id: z.string() }))`
    select key_hash, merchant_id from api_keys where id = ${issued.key_id}`);
  t.same(stored.key_hash, createHash('sha256').update(issued.api_key).digest());
  t.equal(stored.merchant_id, m.merchant_id);
  t.equal((await probe(issued.api_key)).status, 200, 'the key authenticates');
  t.equal((await probe(issued.api_key.toUpperCase())).status, 200, 'in either case, as for merchant keys');

  const second = await issueKey(stack, u.id);
  t.not(second.api_key, issued.api_key);
  t.equal((await probe(issued.api_key)).status, 200, 'a user may hold several keys (rotation with overlap)');

  const human = await ops(stack.env, 'user:issue-key', '--user', u.id);
  t.equal(human.code, 0);
  t.match(human.stdout, /api_key: [0-9a-f]{64} {3}\(shown only now; stored hashed\)/);

  const listed = await ops(stack.env, 'user:list', '--merchant', m.merchant_id, '--json');
  t.equal(listed.code, 0, listed.stderr);
  t.same(JSON.parse(listed.stdout).users.map((x: { id: string; role: string; live_keys: number }) => [x.id, x.role, x.live_keys]), [[u.id, 'finance', 3]]);

  const unknown = await ops(stack.env, 'user:issue-key', '--user', randomUUID(), '--json');
  t.equal(unknown.code, 1);
  t.match(JSON.parse(unknown.stdout).error, /no current user/);
  const malformed = await ops(stack.env, 'user:issue-key', '--user', 'nope', '--json');
  t.equal(malformed.code, 64);
  t.match(JSON.parse(malformed.stdout).error, /--user/);
});

t.test('user:revoke-key stops one key at once', async (t) => {
  const m = await makeMerchant(stack.api.ctx);
  const u = await makeUser(stack, m.api_key, 'viewer');
  const one = await issueKey(stack, u.id);
  const two = await issueKey(stack, u.id);
  const out = await ops(stack.env, 'user:revoke-key', '--key', one.key_id, '--json');
  t.equal(out.code, 0, out.stderr);
  t.equal(JSON.parse(out.stdout).key_id, one.key_id);
  t.equal((await probe(one.api_key)).status, 401);
  t.equal((await probe(two.api_key)).status, 200, 'the other key still works');
  t.equal((await ops(stack.env, 'user:revoke-key', '--key', randomUUID())).code, 1);
});

t.test('removing a user revokes its keys at once; a removed user gets no new key', async (t) => {
  const m = await makeMerchant(stack.api.ctx);
  const u = await makeUser(stack, m.api_key, 'ops');
  const { api_key: key } = await issueKey(stack, u.id);
  t.equal((await probe(key)).status, 200);
  t.equal((await removeUser(stack, m.api_key, u.id)).status, 200);
  const res = await probe(key);
  t.equal(res.status, 401, 'the very next request');
  t.equal(res.json.error.code, 'UNAUTHORIZED');
  const live = await stack.api.ctx.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    select count(*)::int as n from api_keys where user_id = ${u.id} and revoked_at is null`);
  t.equal(live, 0, 'its keys are marked revoked');
  const reissue = await ops(stack.env, 'user:issue-key', '--user', u.id, '--json');
  t.equal(reissue.code, 1);
  t.match(JSON.parse(reissue.stdout).error, /removed/);
});

t.test("a team key follows its merchant: suspended is 403 MERCHANT_INACTIVE, another brand's domain is 401", async (t) => {
  const brand = await makeBrand(stack.api.ctx);
  const m = await makeMerchant(stack.api.ctx, { brandId: brand.id });
  const created = await call(stack.api.url, {
    path: '/v1/my/users',
    headers: { 'x-api-key': m.api_key, host: brand.domain },
    body: { full_name: 'Brand Owner', email: 'owner@brand.example', role: 'owner' },
  });
  const u = created.json.data;
  const { api_key: key } = await issueKey(stack, u.id);
  t.equal((await probe(key, { host: brand.domain })).status, 200);
  t.equal((await probe(key, { host: 'localhost' })).status, 401, 'off its brand');
  for (const status of ['SUSPENDED', 'DISABLED'] as const) {
    await setMerchantStatus(stack.api.ctx.pool, m.merchant_id, status);
    const res = await probe(key, { host: brand.domain });
    t.equal(res.status, 403, status);
    t.equal(res.json.error.code, 'MERCHANT_INACTIVE');
  }
  await setMerchantStatus(stack.api.ctx.pool, m.merchant_id, 'ACTIVE');
  t.equal((await probe(key, { host: brand.domain })).status, 200, 'reactivated');
  const inQuery = await call(stack.api.url, { path: `/v1/orders?api_key=${key}`, headers: { host: brand.domain } });
  t.equal(inQuery.status, 401, 'never in the query string');
});

t.test("an owner user's key manages the team like the merchant's key", async (t) => {
  const m = await makeMerchant(stack.api.ctx);
  const owner = await makeUser(stack, m.api_key, 'owner');
  const { api_key: key } = await issueKey(stack, owner.id);
  const u = await makeUser(stack, key, 'viewer');
  t.equal((await setRole(stack, key, u.id, 'ops')).status, 200);
  t.equal((await setRole(stack, key, owner.id, 'viewer')).json.error?.code, 'LAST_OWNER', 'not even itself, when last');
  t.equal((await removeUser(stack, key, u.id)).status, 200);
  t.same((await listUsers(stack, key)).json.data.map((x: { id: string }) => x.id), [owner.id]);
});
