// A reconciliation repair credits what the vendor's read of the record shows, not what its list
// says. The simulator process speaks Xendit; between it and Kasir sits a local pass-through that
// changes one thing, the way the issue found Xendit answering: the payments read of one QR
// (GET /qr_codes/{id}/payments) shows 2,300 where the Transactions list shows the order's 23,000.
// That lost callback stays an open difference for a person, and nothing is credited; the control
// beside it (list and read agree) is repaired. Ends with the ledger audit.
import t from 'tap';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from '../../db/pool.ts';
import { wibDay } from '../../db/recon.ts';
import { upsertVendor } from '../../db/vendors.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { merchantApi } from '../helpers/merchant-api.ts';
import { balanceOf, ledgerAudit } from '../helpers/money.ts';
import { ops } from '../helpers/processes.ts';
import { simulatePay } from '../helpers/simulator.ts';
import { startVendorStack } from '../helpers/vendor-stack.ts';
import { xenditDialectVendor, xenditVendor } from '../helpers/xendit.ts';

const stack = await startVendorStack(t, [xenditDialectVendor('xendit')]);
const xendit = stack.sims[0].url;
const pool = stack.api.ctx.pool;
const m = merchantApi(stack, 'XRA');
const day = wibDay(new Date());

/** QR ids whose payments read answers this amount instead of the dialect's. */
const readAmounts = new Map<string, number>();
const proxy = createServer(async (req, res) => {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const headers = Object.fromEntries(Object.entries(req.headers).filter(([k]) => !['host', 'connection', 'content-length'].includes(k))) as Record<string, string>;
  const upstream = await fetch(`${xendit}${req.url}`, { method: req.method, headers, body: chunks.length ? Buffer.concat(chunks) : undefined });
  let body = await upstream.text();
  const qrId = /^\/xendit\/qr_codes\/([^/?]+)\/payments/.exec(req.url ?? '')?.[1];
  const amount = qrId ? readAmounts.get(decodeURIComponent(qrId)) : undefined;
  if (amount !== undefined) {
    const parsed = JSON.parse(body) as { data: Array<{ amount: number }> };
    for (const p of parsed.data) p.amount = amount;
    body = JSON.stringify(parsed);
  }
  res.writeHead(upstream.status, { 'content-type': upstream.headers.get('content-type') ?? 'application/json' });
  res.end(body);
});
await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
t.teardown(() => new Promise<void>((resolve) => proxy.close(() => resolve())));
const proxied = xenditVendor(`http://127.0.0.1:${(proxy.address() as AddressInfo).port}`);
await upsertVendor(pool, stack.api.ctx.sealer, { code: 'xendit', kind: 'xendit', baseUrl: proxied.baseUrl, credentials: proxied.credentials });

const orderOf = (ref: string) => pool.one(sql.unsafe`select status, vendor_order_id from orders where ref_code = ${ref}`) as Promise<{ status: string; vendor_order_id: string }>;
const differencesOf = (ref: string) => pool.any(sql.unsafe`select kind, status, detail from recon_differences where vendor_code = 'xendit' and day = ${day}::date and reference = ${ref}`);

t.test('list says 23,000, the read says 2,300: no credit, an open difference; the control is repaired', async (t) => {
  const merchant = await makeMerchant(stack.api.ctx);
  const short = (await m.createOrder(merchant, 23_000)).json.data.ref_code as string;
  const control = (await m.createOrder(merchant, 23_000)).json.data.ref_code as string;
  readAmounts.set((await orderOf(short)).vendor_order_id, 2_300);
  // Both paid at Xendit, both callbacks lost.
  for (const ref of [short, control]) t.equal((await simulatePay(xendit, { reference: ref }, { 'x-sim-fault': 'drop_callback' })).status, 200);

  const res = await ops(stack.env, 'recon:run', '--vendor', 'xendit', '--date', day, '--json');
  t.equal(res.code, 0, res.stderr);
  t.equal((await orderOf(short)).status, 'PENDING', 'not credited from the list');
  t.match(await differencesOf(short), [{ kind: 'PAID_AT_VENDOR_ONLY', status: 'OPEN' }]);
  const open = JSON.parse(res.stdout).open as Array<{ reference: string; detail: string }>;
  t.match(open.find((d) => d.reference === short), { reference: short }, 'listed open for a person');
  t.equal((await orderOf(control)).status, 'PAID', 'the control repaired');
  t.match(await differencesOf(control), [{ status: 'REPAIRED' }]);
  t.equal(await balanceOf(stack, merchant), 23_000 - 161, 'only the control credited');
  await ledgerAudit(t, stack.env);
});
