// docs/kasir.postman_collection.json sent as Postman sends it, top to bottom, against a running
// Kasir: collection variables substituted, the API key added by the collection's auth, its
// pre-request script run (it signs POST /v1/orders with webhookSecret and the legacy order calls
// with the legacy credentials), each request's test script run (it keeps the ids later requests
// use). The developer's values are in an Environment (as Postman's Environments and newman's
// `--env-var` hold them), the collection's variables left as shipped: the scripts resolve every
// scope as Postman does. A request whose path variable is empty is stopped, never sent as a list. The merchant has a webhook secret, so an order created without the script's signature
// would be 401. Every request must be answered 2xx. The tester does only what a developer does
// between two requests: pays the order at the simulator, waits for the export to be built.
// Left out: the CSV import (a file to choose) and the legacy disbursement calls (an RSA
// signature Postman cannot make).
import { createHash, createHmac, randomBytes, randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import t from 'tap';
import { adjustWallet } from '../../db/ledger.ts';
import { ROOT } from '../../scripts/lib/local.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { call, eventually } from '../helpers/http.ts';
import { simulatePay, startCallbackReceiver } from '../helpers/simulator.ts';
import { startStack } from '../helpers/stack.ts';

interface Script {
  listen: string;
  script: { exec: string[] };
}
interface Item {
  name: string;
  request: {
    method: string;
    url: { host: string[]; path: string[]; query?: { key: string; value: string; disabled?: boolean }[]; variable?: { key: string; value: string }[] };
    header?: { key: string; value: string; disabled?: boolean }[];
    body?: { mode: string; raw?: string };
  };
  event?: Script[];
}
interface Collection {
  item: { name: string; item: Item[] }[];
  variable: { key: string; value: string }[];
  event: Script[];
  auth: { apikey: { key: string; value: string }[] };
}

const collection = JSON.parse(await readFile(`${ROOT}docs/kasir.postman_collection.json`, 'utf8')) as Collection;
const stack = await startStack(t, { groups: ['vendor', 'webhook', 'csv'] });

/** The CryptoJS calls the scripts make, on node:crypto. */
const hex = (digest: string) => ({ toString: () => digest });
const CryptoJS = {
  HmacSHA256: (message: string, key: string) => hex(createHmac('sha256', key).update(message).digest('hex')),
  SHA512: (message: string) => hex(createHash('sha512').update(message).digest('hex')),
  enc: { Hex: 'hex' },
};

/**
 * Postman's variable scopes as its scripts see them: pm.variables resolves an Environment's value
 * before the collection's; pm.environment and pm.collectionVariables are each one scope.
 */
function postmanScopes(environment: Map<string, string>, collectionScope: Map<string, string>) {
  const get = (k: string) => (environment.has(k) ? environment.get(k) : collectionScope.get(k));
  const scope = (map: Map<string, string>) => ({ has: (k: string) => map.has(k), get: (k: string) => map.get(k), set: (k: string, v: unknown) => map.set(k, String(v)) });
  return {
    variables: { get, replaceIn: (text: string) => text.replace(/\{\{([A-Za-z_]+)\}\}/g, (whole, name: string) => get(name) ?? whole) },
    environment: scope(environment),
    collectionVariables: scope(collectionScope),
  };
}

t.test('every request of the collection works as sent', async (t) => {
  const receiver = await startCallbackReceiver();
  t.teardown(() => receiver.close());
  const secret = `whsec_${randomBytes(24).toString('base64')}`;
  const merchant = await makeMerchant(stack.api.ctx, { webhookSecret: secret, notifyUrl: receiver.url });
  await stack.api.ctx.pool.transaction((tx) => adjustWallet(tx, { merchantId: merchant.merchant_id, adjustmentId: randomUUID(), amount: 1_000_000, reason: 'test float' }));

  // What a developer sets after importing: the URL, the key, the secrets, in an Environment.
  const variables = new Map(collection.variable.map((v) => [v.key, v.value]));
  const environment = new Map<string, string>([
    ['baseUrl', stack.api.url],
    ['apiKey', merchant.api_key],
    ['webhookSecret', secret],
    ['legacyClientId', merchant.legacy_client_id],
    ['legacyClientSecret', merchant.legacy_client_secret],
  ]);
  const scopes = postmanScopes(environment, variables);
  const { replaceIn } = scopes.variables;
  const run = (scripts: Script[] | undefined, listen: string, pm: unknown) => {
    for (const event of scripts ?? []) if (event.listen === listen) new Function('pm', 'CryptoJS', event.script.exec.join('\n'))(pm, CryptoJS);
  };
  const auth = Object.fromEntries(collection.auth.apikey.map((e) => [e.key, e.value]));

  let sent = 0;
  let skipped = 0;
  const stopped: string[] = [];
  for (const folder of collection.item) {
    for (const item of folder.item) {
      const r = item.request;
      const route = `/${r.url.path.join('/')}`;
      if (route === '/v1/disbursements/import' || route.startsWith('/api/disbursement/')) {
        skipped++;
        continue;
      }
      if (route === '/v1/reports/exports/:id/download') {
        await eventually(async () => {
          const res = await call(stack.api.url, { path: `/v1/reports/exports/${replaceIn('{{export_id}}')}`, headers: { 'x-api-key': merchant.api_key } });
          return res.json?.data?.status === 'COMPLETED' ? true : undefined;
        }, 'the export to be built');
      }
      // The request as Postman holds it while the pre-request script runs.
      const headers = (r.header ?? []).filter((h) => !h.disabled).map((h) => ({ key: h.key, value: h.value }));
      const body = { raw: r.body?.raw, update(options: { raw: string }) { this.raw = options.raw; } };
      const pm = {
        request: {
          method: r.method,
          url: { getPath: () => route, variables: { all: () => r.url.variable ?? [] } },
          headers: {
            remove: (key: string) => headers.splice(0, headers.length, ...headers.filter((h) => h.key.toLowerCase() !== key.toLowerCase())),
            add: (h: { key: string; value: string }) => headers.push(h),
          },
          body,
        },
        ...scopes,
      };
      try {
        run(collection.event, 'prerequest', pm);
        run(item.event, 'prerequest', pm);
      } catch (err) {
        // Postman sends no request whose pre-request script throws.
        stopped.push(`${r.method} ${route}: ${(err as Error).message}`);
        continue;
      }

      let path = route;
      for (const v of r.url.variable ?? []) path = path.replace(`:${v.key}`, encodeURIComponent(replaceIn(v.value)));
      const query = (r.url.query ?? []).filter((q) => !q.disabled).map((q) => `${q.key}=${encodeURIComponent(replaceIn(q.value))}`).join('&');
      const sentHeaders: Record<string, string> = Object.fromEntries(headers.map((h) => [h.key, replaceIn(h.value)]));
      if (!route.startsWith('/api/')) sentHeaders[auth.key] = replaceIn(auth.value);
      const res = await call(replaceIn(r.url.host.join('')), {
        method: r.method, path: query ? `${path}?${query}` : path, headers: sentHeaders, body: body.raw === undefined ? undefined : replaceIn(body.raw),
      });
      t.ok(res.status >= 200 && res.status < 300, `${folder.name} / ${item.name} (${r.method} ${path}): ${res.status} ${res.text.slice(0, 300)}`);
      sent++;
      const failed: string[] = [];
      run([...collection.event, ...(item.event ?? [])], 'test', {
        ...scopes, request: pm.request, response: { json: () => res.json }, test: (name: string, check: () => void) => {
          try { check(); } catch { failed.push(name); }
        },
      });
      t.same(failed, [], `${item.name}: the collection's tests pass`);

      // Between two requests, what a developer does: pay the order they created.
      if (r.method === 'POST' && route === '/v1/orders') {
        const paid = await simulatePay(stack.sim.url, { reference: replaceIn('{{ref_code}}') });
        t.equal(paid.status, 200, 'the order is paid at the simulator');
        await eventually(async () => {
          const order = await call(stack.api.url, { path: `/v1/orders/${replaceIn('{{ref_code}}')}`, headers: { 'x-api-key': merchant.api_key } });
          return order.json?.data?.status === 'PAID' ? true : undefined;
        }, 'the order to be PAID');
      }
    }
  }
  t.equal(skipped, 5, 'only the import and the four RSA-signed legacy calls are left out');
  // No import was made (its file is left out) and no settlement has run, so reading one is
  // stopped (it used to be sent as `…/imports/` and `/v1/settlements/`, answered by the lists).
  t.same(stopped.map((s) => s.replace(/ is empty: .*/, '')), [
    'GET /v1/disbursements/imports/:id: Kasir: {{import_id}}',
    'GET /v1/settlements/:id: Kasir: {{settlement_id}}',
  ], 'only the reads of what nothing created are stopped');
  t.equal(sent, collection.item.flatMap((f) => f.item).length - skipped - stopped.length, `${sent} requests sent`);
  t.ok(variables.get('ref_code') && variables.get('refund_id') && variables.get('beneficiary_id') && variables.get('user_id'), 'the test scripts kept the ids');
  t.notOk(variables.get('apiKey') || variables.get('webhookSecret'), 'the secrets stayed in the Environment');
});

t.test('without a webhook secret the script sends no X-Signature', async (t) => {
  const script = collection.event.find((e) => e.listen === 'prerequest')!.script.exec.join('\n');
  const headers: { key: string; value: string }[] = [{ key: 'X-Signature', value: 'stale' }];
  const pm = {
    request: {
      method: 'POST', url: { getPath: () => '/v1/orders', variables: { all: () => [] } }, body: { raw: '{}' },
      headers: { remove: () => headers.splice(0), add: (h: { key: string; value: string }) => headers.push(h) },
    },
    ...postmanScopes(new Map(), new Map()),
  };
  new Function('pm', 'CryptoJS', script)(pm, CryptoJS);
  t.same(headers, []);
});

t.test('a request whose path variable is empty is stopped before it is sent, and its test fails', async (t) => {
  const prerequest = collection.event.find((e) => e.listen === 'prerequest')!.script.exec.join('\n');
  const test = collection.event.find((e) => e.listen === 'test')!.script.exec.join('\n');
  const read = collection.item.flatMap((f) => f.item).find((i) => i.request.method === 'GET' && i.request.url.path.join('/') === 'v1/orders/:ref_code')!;
  t.match(read.request.url.variable, [{ key: 'ref_code', value: '{{ref_code}}' }]);
  const pmFor = (environment: Map<string, string>, collectionScope: Map<string, string>, failed: string[] = []) => ({
    request: { method: 'GET', url: { getPath: () => '/v1/orders/:ref_code', variables: { all: () => read.request.url.variable } }, headers: { remove() {}, add() {} } },
    ...postmanScopes(environment, collectionScope),
    test: (name: string, check: () => void) => {
      try { check(); } catch { failed.push(name); }
    },
  });
  const shipped = new Map(collection.variable.map((v) => [v.key, v.value]));
  t.throws(() => new Function('pm', 'CryptoJS', prerequest)(pmFor(new Map(), shipped), CryptoJS), /\{\{ref_code\}\} is empty/, 'the shipped empty variable stops the request');
  t.throws(() => new Function('pm', 'CryptoJS', prerequest)(pmFor(new Map(), new Map()), CryptoJS), /\{\{ref_code\}\} is empty/, 'an undefined one too');
  const failed: string[] = [];
  new Function('pm', 'CryptoJS', test)(pmFor(new Map(), shipped, failed), CryptoJS);
  t.same(failed, ['every path variable was set'], 'sent anyway (a runner that does), the answer fails its test');

  const set = pmFor(new Map([['ref_code', 'ORD-1']]), shipped);
  t.doesNotThrow(() => new Function('pm', 'CryptoJS', prerequest)(set, CryptoJS), 'an Environment\'s value is enough');
});
