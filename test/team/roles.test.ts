// Roles that mean something (DESIGN.md 6), over real HTTP with keys issued by the ops CLI: each
// role × each endpoint family, allowed (anything but 403 FORBIDDEN: the call may still fail on
// its own merits) or refused (403 FORBIDDEN, nothing written). The merchant's own key is owner.
import t from 'tap';
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { sql } from '../../db/pool.ts';
import { call, type TestResponse } from '../helpers/http.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { startStack } from '../helpers/stack.ts';
import { issueKey, makeUser, setRole, type Role } from '../helpers/team.ts';
import { fundWallet } from '../helpers/money.ts';

const stack = await startStack(t, { groups: [] });
const merchant = await makeMerchant(stack.api.ctx);
await fundWallet(stack.api.ctx.pool, merchant, 10_000_000);

type Caller = 'merchant' | Role;
const keys: Record<Caller, string> = { merchant: merchant.api_key } as Record<Caller, string>;
for (const role of ['owner', 'finance', 'ops', 'viewer'] as const) {
  keys[role] = (await issueKey(stack, (await makeUser(stack, merchant.api_key, role)).id)).api_key;
}
const CALLERS = Object.keys(keys) as Caller[];

interface Endpoint {
  family: string;
  method: string;
  path: string;
  body?: () => unknown;
  /** Roles allowed besides owner (the merchant key and owner users are allowed everything). */
  allowed: 'all' | Role[];
  /** The status an allowed call answers, where the call is meant to succeed. */
  status?: number;
}

const someId = randomUUID();
const bankDisbursement = () => ({
  idempotency_key: randomUUID(), channel: 'BANK', bank_short_code: 'BCA', account_number: '1234567890', account_name: 'Budi Santoso', amount: 10_000,
});
const bankBeneficiary = () => ({ channel: 'BANK', bank_short_code: 'BCA', account_number: '1234567890', account_name: 'Budi Santoso' });

const ENDPOINTS: Endpoint[] = [
  { family: 'orders', method: 'GET', path: '/v1/orders', allowed: 'all', status: 200 },
  { family: 'orders', method: 'GET', path: '/v1/orders/ORD-1-NOPE', allowed: 'all', status: 404 },
  { family: 'orders', method: 'GET', path: '/v1/orders/ORD-1-NOPE/events', allowed: 'all', status: 404 },
  { family: 'orders', method: 'POST', path: '/v1/orders', body: () => ({}), allowed: ['ops'], status: 400 },
  { family: 'orders', method: 'POST', path: '/v1/orders/ORD-1-NOPE/fetch-status', allowed: ['ops'], status: 404 },
  { family: 'refunds', method: 'POST', path: '/v1/orders/ORD-1-NOPE/refund', body: () => ({ amount: 1 }), allowed: ['ops'], status: 404 },
  { family: 'refunds', method: 'GET', path: '/v1/refunds', allowed: 'all', status: 200 },
  { family: 'refunds', method: 'GET', path: `/v1/refunds/${someId}`, allowed: 'all', status: 404 },
  { family: 'refunds', method: 'GET', path: '/v1/orders/ORD-1-NOPE/refunds', allowed: 'all', status: 404 },
  { family: 'disbursements', method: 'GET', path: '/v1/disbursements', allowed: 'all', status: 200 },
  { family: 'disbursements', method: 'GET', path: `/v1/disbursements/${someId}`, allowed: 'all', status: 404 },
  { family: 'disbursements', method: 'POST', path: '/v1/disbursements', body: bankDisbursement, allowed: ['finance'], status: 201 },
  { family: 'disbursements', method: 'POST', path: '/v1/disbursements/import', body: () => ({}), allowed: ['finance'] },
  { family: 'balance', method: 'GET', path: '/v1/balance', allowed: 'all', status: 200 },
  { family: 'balance', method: 'GET', path: '/v1/balance-history', allowed: 'all', status: 200 },
  { family: 'beneficiaries', method: 'GET', path: '/v1/beneficiaries', allowed: 'all', status: 200 },
  { family: 'beneficiaries', method: 'POST', path: '/v1/beneficiaries', body: bankBeneficiary, allowed: ['ops'], status: 201 },
  { family: 'beneficiaries', method: 'DELETE', path: `/v1/beneficiaries/${someId}`, allowed: ['ops'], status: 404 },
  { family: 'settlements', method: 'GET', path: '/v1/settlements', allowed: 'all' },
  { family: 'settlements', method: 'GET', path: `/v1/settlements/${someId}`, allowed: 'all' },
  { family: 'settlements', method: 'POST', path: '/v1/settlements', body: () => ({}), allowed: ['finance'] },
  { family: 'reports', method: 'GET', path: '/v1/reports/profits', allowed: 'all' },
  { family: 'reports', method: 'GET', path: '/v1/reports/exports', allowed: 'all' },
  { family: 'reports', method: 'GET', path: `/v1/reports/exports/${someId}/download`, allowed: 'all' },
  { family: 'reports', method: 'POST', path: '/v1/reports/export', body: () => ({ type: 'orders' }), allowed: ['finance'] },
  { family: 'team', method: 'GET', path: '/v1/my/users', allowed: [], status: 200 },
  { family: 'team', method: 'POST', path: '/v1/my/users', body: () => ({ full_name: 'New', email: `${randomUUID()}@toko.example`, role: 'viewer' }), allowed: [], status: 201 },
  { family: 'team', method: 'PATCH', path: `/v1/my/users/${someId}/role`, body: () => ({ role: 'ops' }), allowed: [], status: 404 },
  { family: 'team', method: 'DELETE', path: `/v1/my/users/${someId}/role`, allowed: [], status: 404 },
  { family: 'master data', method: 'GET', path: '/v1/banks', allowed: 'all', status: 200 },
  { family: 'master data', method: 'GET', path: '/v1/ewallets', allowed: 'all', status: 200 },
  // A write no rule names is the owner's until it is given a family; reads stay open.
  { family: 'unmapped', method: 'POST', path: '/v1/probe', body: () => ({}), allowed: [], status: 404 },
  { family: 'unmapped', method: 'GET', path: '/v1/probe', allowed: 'all', status: 404 },
];

function send(caller: Caller, e: Pick<Endpoint, 'method' | 'path' | 'body'>, extra: Record<string, string> = {}): Promise<TestResponse> {
  return call(stack.api.url, { method: e.method, path: e.path, headers: { 'x-api-key': keys[caller], ...extra }, body: e.body?.() });
}

const isAllowed = (caller: Caller, e: Endpoint) =>
  caller === 'merchant' || caller === 'owner' || e.allowed === 'all' || e.allowed.includes(caller as Role);

t.test('the role matrix: each role × each endpoint family', async (t) => {
  const table: string[] = [];
  for (const e of ENDPOINTS) {
    const row: string[] = [];
    for (const caller of CALLERS) {
      const res = await send(caller, e);
      const label = `${caller} ${e.method} ${e.path}`;
      if (isAllowed(caller, e)) {
        t.not(res.json?.error?.code, 'FORBIDDEN', `${label} is allowed`);
        t.not(res.status, 401, label);
        if (e.status) t.equal(res.status, e.status, `${label}: ${res.text.slice(0, 200)}`);
        row.push('yes');
      } else {
        t.equal(res.status, 403, `${label} is refused`);
        t.same(res.json, { success: false, error: { code: 'FORBIDDEN', message: `Your role (${caller}) does not allow this operation`, request_id: res.headers['x-request-id'] } }, label);
        row.push('-');
      }
    }
    table.push(`${`${e.family}: ${e.method} ${e.path}`.padEnd(64)} ${row.map((c) => c.padEnd(9)).join('')}`);
  }
  t.comment(`\n${''.padEnd(64)} ${CALLERS.map((c) => c.padEnd(9)).join('')}\n${table.join('\n')}`);
});

t.test('a refused write changes nothing', async (t) => {
  const count = (table: 'disbursements' | 'beneficiaries') =>
    stack.api.ctx.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      select count(*)::int as n from ${sql.identifier([table])} where merchant_id = ${merchant.merchant_id}`);
  const before = { d: await count('disbursements'), b: await count('beneficiaries') };
  const balance = async () => (await send('merchant', { method: 'GET', path: '/v1/balance' })).json.data.balance;
  const balanceBefore = await balance();
  for (const caller of ['ops', 'viewer'] as const) {
    t.equal((await send(caller, { method: 'POST', path: '/v1/disbursements', body: bankDisbursement })).status, 403);
  }
  for (const caller of ['finance', 'viewer'] as const) {
    t.equal((await send(caller, { method: 'POST', path: '/v1/beneficiaries', body: bankBeneficiary })).status, 403);
  }
  t.same({ d: await count('disbursements'), b: await count('beneficiaries') }, before);
  t.equal(await balance(), balanceBefore);
});

t.test('no spelling of a path slips past its rule (Express matches case-insensitively, with a trailing slash)', async (t) => {
  const refused: [Caller, string, string][] = [
    ['viewer', 'GET', '/v1/MY/USERS/'],
    ['finance', 'GET', '/v1/My/Users'],
    ['viewer', 'POST', '/v1/ORDERS/'],
    ['finance', 'POST', '/v1/Orders/ORD-1-NOPE/Refund/'],
    ['ops', 'POST', '/v1/Disbursements/'],
    ['viewer', 'POST', '/v1/beneficiaries/'],
    ['ops', 'DELETE', `/v1/my/users/${someId}/role/`],
  ];
  for (const [caller, method, path] of refused) {
    const res = await send(caller, { method, path, body: method === 'POST' ? () => ({}) : undefined });
    t.equal(res.status, 403, `${caller} ${method} ${path}`);
    t.equal(res.json.error.code, 'FORBIDDEN');
  }
  const head = await call(stack.api.url, { method: 'HEAD', path: '/v1/my/users', headers: { 'x-api-key': keys.viewer } });
  t.equal(head.status, 403, 'HEAD reads like GET');
  const ownerSpelling = await send('owner', { method: 'GET', path: '/v1/MY/USERS/' });
  t.equal(ownerSpelling.status, 200, 'the same spelling reaches the route for an owner');
});

t.test('a role change applies to the next request of a key already issued', async (t) => {
  const user = await makeUser(stack, merchant.api_key, 'finance');
  const { api_key: key } = await issueKey(stack, user.id);
  const disburse = () => call(stack.api.url, { path: '/v1/disbursements', headers: { 'x-api-key': key }, body: bankDisbursement() });
  t.equal((await disburse()).status, 201);
  t.equal((await setRole(stack, merchant.api_key, user.id, 'viewer')).status, 200);
  const refused = await disburse();
  t.equal(refused.status, 403);
  t.equal(refused.json.error.code, 'FORBIDDEN');
  t.equal((await setRole(stack, merchant.api_key, user.id, 'owner')).status, 200);
  t.equal((await call(stack.api.url, { path: '/v1/my/users', headers: { 'x-api-key': key } })).status, 200, 'promoted to owner');
});

t.test('the role is decided before the merchant-type checks: NOT_WALLET_MERCHANT only for a role that may ask', async (t) => {
  const manual = await makeMerchant(stack.api.ctx, { settlement: 'MANUAL' });
  const finance = (await issueKey(stack, (await makeUser(stack, manual.api_key, 'finance')).id)).api_key;
  const viewer = (await issueKey(stack, (await makeUser(stack, manual.api_key, 'viewer')).id)).api_key;
  const post = (key: string) => call(stack.api.url, { path: '/v1/disbursements', headers: { 'x-api-key': key }, body: bankDisbursement() });
  t.equal((await post(finance)).json.error.code, 'NOT_WALLET_MERCHANT');
  t.equal((await post(viewer)).json.error.code, 'FORBIDDEN');
  t.equal((await call(stack.api.url, { path: '/v1/balance', headers: { 'x-api-key': viewer } })).json.error.code, 'NOT_WALLET_MERCHANT',
    'a read a role may make still meets the wallet rule');
});

t.test("a team key sees only its own merchant's data", async (t) => {
  const other = await makeMerchant(stack.api.ctx);
  const otherViewer = (await issueKey(stack, (await makeUser(stack, other.api_key, 'viewer')).id)).api_key;
  const mine = await call(stack.api.url, { path: '/v1/balance', headers: { 'x-api-key': otherViewer } });
  t.equal(mine.json.data.merchant_id, other.merchant_id);
  t.equal(mine.json.data.balance, 0);
  const byOwner = await call(stack.api.url, { path: '/v1/disbursements', headers: { 'x-api-key': otherViewer } });
  t.equal(byOwner.json.meta.total, 0, "none of the first merchant's disbursements");
});
