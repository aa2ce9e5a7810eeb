// docs/kasir.postman_collection.json sent as Postman sends it, top to bottom, against a running
// Kasir: collection variables substituted, the API key added by the collection's auth, its
// pre-request script run (it signs POST /v1/orders with webhookSecret and the legacy order calls
// with the legacy credentials), each request's test script run (it keeps the ids later requests
// use). The merchant has a webhook secret, so an order created without the script's signature
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

t.test('every request of the collection works as sent', async (t) => {
  const receiver = await startCallbackReceiver();
  t.teardown(() => receiver.close());
  const secret = `whsec_${randomBytes(24).toString('base64')}`;
  const merchant = await makeMerchant(stack.api.ctx, { webhookSecret: secret, notifyUrl: receiver.url });
  await stack.api.ctx.pool.transaction((tx) => adjustWallet(tx, { merchantId: merchant.merchant_id, adjustmentId: randomUUID(), amount: 1_000_000, reason: 'test float' }));

  // What a developer sets after importing: the URL, the key, the secrets.
  const variables = new Map(collection.variable.map((v) => [v.key, v.value]));
  variables.set('baseUrl', stack.api.url);
  variables.set('apiKey', merchant.api_key);
  variables.set('webhookSecret', secret);
  variables.set('legacyClientId', merchant.legacy_client_id);
  variables.set('legacyClientSecret', merchant.legacy_client_secret);
  const replaceIn = (text: string) => text.replace(/\{\{([A-Za-z_]+)\}\}/g, (_, name: string) => variables.get(name) ?? '');
  const collectionVariables = { get: (k: string) => variables.get(k), set: (k: string, v: unknown) => variables.set(k, String(v)) };
  const run = (scripts: Script[] | undefined, listen: string, pm: unknown) => {
    for (const event of scripts ?? []) if (event.listen === listen) new Function('pm', 'CryptoJS', event.script.exec.join('\n'))(pm, CryptoJS);
  };
  const auth = Object.fromEntries(collection.auth.apikey.map((e) => [e.key, e.value]));

  let sent = 0;
  let skipped = 0;
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
          const res = await call(stack.api.url, { path: `/v1/reports/exports/${variables.get('export_id')}`, headers: { 'x-api-key': merchant.api_key } });
          return res.json?.data?.status === 'COMPLETED' ? true : undefined;
        }, 'the export to be built');
      }
      // The request as Postman holds it while the pre-request script runs.
      const headers = (r.header ?? []).filter((h) => !h.disabled).map((h) => ({ key: h.key, value: h.value }));
      const body = { raw: r.body?.raw, update(options: { raw: string }) { this.raw = options.raw; } };
      const pm = {
        request: {
          method: r.method,
          url: { getPath: () => route },
          headers: {
            remove: (key: string) => headers.splice(0, headers.length, ...headers.filter((h) => h.key.toLowerCase() !== key.toLowerCase())),
            add: (h: { key: string; value: string }) => headers.push(h),
          },
          body,
        },
        collectionVariables,
        variables: { replaceIn },
      };
      run(collection.event, 'prerequest', pm);
      run(item.event, 'prerequest', pm);

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
      run(item.event, 'test', { response: { json: () => res.json }, collectionVariables });

      // Between two requests, what a developer does: pay the order they created.
      if (r.method === 'POST' && route === '/v1/orders') {
        const paid = await simulatePay(stack.sim.url, { reference: variables.get('ref_code')! });
        t.equal(paid.status, 200, 'the order is paid at the simulator');
        await eventually(async () => {
          const order = await call(stack.api.url, { path: `/v1/orders/${variables.get('ref_code')}`, headers: { 'x-api-key': merchant.api_key } });
          return order.json?.data?.status === 'PAID' ? true : undefined;
        }, 'the order to be PAID');
      }
    }
  }
  t.equal(skipped, 5, 'only the import and the four RSA-signed legacy calls are left out');
  t.equal(sent, collection.item.flatMap((f) => f.item).length - skipped, `${sent} requests sent`);
  t.ok(variables.get('ref_code') && variables.get('refund_id') && variables.get('beneficiary_id') && variables.get('user_id'), 'the test scripts kept the ids');
});

t.test('without a webhook secret the script sends no X-Signature', async (t) => {
  const script = collection.event.find((e) => e.listen === 'prerequest')!.script.exec.join('\n');
  const headers: { key: string; value: string }[] = [{ key: 'X-Signature', value: 'stale' }];
  const pm = {
    request: {
      method: 'POST', url: { getPath: () => '/v1/orders' }, body: { raw: '{}' },
      headers: { remove: () => headers.splice(0), add: (h: { key: string; value: string }) => headers.push(h) },
    },
    collectionVariables: { get: () => '' },
    variables: { replaceIn: (s: string) => s },
  };
  new Function('pm', 'CryptoJS', script)(pm, CryptoJS);
  t.same(headers, []);
});
