// Vendors and routing: which gateways exist and which one a payment method goes to.
import { z } from 'zod';
import { gatewayFor } from '../../db/gateways/registry.ts';
import { getVendor, listRoutes, listVendors, removeRoute, routeMethod, setRoute, setVendorEnabled, upsertVendor, type VendorRecord } from '../../db/vendors.ts';
import { command, OpsError } from './command.ts';

const vendorCode = z.string().regex(/^[a-z0-9][a-z0-9_-]{0,31}$/, 'lowercase letters, digits, "_" or "-", up to 32');
const httpUrl = z.url({ protocol: /^https?$/ });
const key = (flag: string) => z.string({ error: `--${flag} is required` }).min(8, `--${flag}: at least 8 characters`);

/**
 * What each kind needs, and the credentials object sealed for it (the adapter's own reading
 * of `vendor.credentials`). Flags of another kind are refused rather than silently dropped.
 */
const vendorInput = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('simulator'), code: vendorCode, 'base-url': httpUrl, secret: key('secret') }),
  z.strictObject({
    kind: z.literal('xendit'),
    code: vendorCode,
    'base-url': httpUrl,
    'secret-key': key('secret-key'),
    'callback-token': key('callback-token'),
  }),
  z
    .strictObject({
      kind: z.literal('midtrans'),
      code: vendorCode,
      'base-url': httpUrl,
      'server-key': key('server-key'),
      'qris-acquirer': z.enum(['gopay', 'airpay-shopee']).default('gopay'),
      'iris-base-url': httpUrl.optional(),
      'iris-creator-key': key('iris-creator-key').optional(),
      'iris-approver-key': key('iris-approver-key').optional(),
      'iris-merchant-key': key('iris-merchant-key').optional(),
    })
    .refine(
      (v) => {
        const iris = [v['iris-base-url'], v['iris-creator-key'], v['iris-approver-key'], v['iris-merchant-key']];
        return iris.every((x) => x === undefined) || iris.every((x) => x !== undefined);
      },
      'Iris payouts need all four of --iris-base-url, --iris-creator-key, --iris-approver-key and --iris-merchant-key',
    ),
]);
type VendorInput = z.infer<typeof vendorInput>;

function credentialsOf(input: VendorInput): Record<string, string> {
  switch (input.kind) {
    case 'simulator':
      return { secret: input.secret };
    case 'xendit':
      return { secretKey: input['secret-key'], callbackToken: input['callback-token'] };
    case 'midtrans': {
      const iris: Record<string, string> = input['iris-base-url']
        ? {
            irisBaseUrl: input['iris-base-url'].replace(/\/+$/, ''),
            irisCreatorKey: input['iris-creator-key']!,
            irisApproverKey: input['iris-approver-key']!,
            irisMerchantKey: input['iris-merchant-key']!,
          }
        : {};
      return { serverKey: input['server-key'], qrisAcquirer: input['qris-acquirer'], ...iris };
    }
  }
}

/** Whether a vendor can send money out (BANK and EWALLET routes). */
export function canPayOut(vendor: VendorRecord): boolean {
  return vendor.kind !== 'midtrans' || Boolean(vendor.credentials.irisCreatorKey);
}

export const vendorAdd = command({
  name: 'vendor:add',
  summary: 'Add a vendor (or update its URL and credentials); credentials are stored encrypted',
  usage: [
    'vendor:add --code C --kind simulator --base-url URL --secret S [--json]',
    'vendor:add --code C --kind xendit --base-url URL --secret-key K --callback-token T [--json]',
    'vendor:add --code C --kind midtrans --base-url URL --server-key K [--qris-acquirer gopay|airpay-shopee]',
    '           [--iris-base-url URL --iris-creator-key K --iris-approver-key K --iris-merchant-key K] [--json]',
  ].join('\n       '),
  flags: Object.fromEntries(
    ['code', 'kind', 'base-url', 'secret', 'secret-key', 'callback-token', 'server-key', 'qris-acquirer', 'iris-base-url', 'iris-creator-key', 'iris-approver-key', 'iris-merchant-key'].map(
      (name) => [name, { type: 'string' as const }],
    ),
  ),
  input: z.preprocess((raw) => Object.fromEntries(Object.entries(raw as object).filter(([, v]) => v !== undefined)), vendorInput),
  async run(ctx, input) {
    const baseUrl = input['base-url'].replace(/\/+$/, '');
    await upsertVendor(await ctx.pool(), ctx.sealer(), { code: input.code, kind: input.kind, baseUrl, credentials: credentialsOf(input) });
    return { json: { code: input.code, kind: input.kind, base_url: baseUrl, enabled: true }, text: `vendor ${input.code} (${input.kind}) saved and enabled` };
  },
});

export const vendorCheck = command({
  name: 'vendor:check',
  summary: "Make one authenticated call that changes nothing at the vendor, and say whether it worked",
  usage: 'vendor:check --code C [--json]',
  flags: { code: { type: 'string' } },
  input: z.object({ code: z.string({ error: '--code is required' }).min(1, '--code is required') }),
  async run(ctx, input) {
    const vendor = await getVendor(await ctx.pool(), ctx.sealer(), input.code);
    if (!vendor) throw new OpsError(`no vendor ${input.code}`);
    const outcome = await gatewayFor(vendor).check();
    const ok = outcome.kind === 'ok';
    const detail = ok ? outcome.value : outcome.reason;
    return {
      json: { code: vendor.code, kind: vendor.kind, ok, detail },
      text: `${vendor.code} (${vendor.kind}): ${ok ? 'OK' : 'NOT OK'} — ${detail}`,
      exitCode: ok ? 0 : 1,
    };
  },
});

export const vendorList = command({
  name: 'vendor:list',
  summary: 'List vendors',
  usage: 'vendor:list [--json]',
  flags: {},
  input: z.object({}),
  async run(ctx) {
    const vendors = await listVendors(await ctx.pool());
    const text = vendors.length
      ? vendors.map((v) => `${v.code.padEnd(12)} ${v.kind.padEnd(10)} ${v.enabled ? 'enabled ' : 'disabled'} ${v.base_url}`).join('\n')
      : 'no vendors';
    return { json: { vendors }, text };
  },
});

export const vendorDisable = command({
  name: 'vendor:disable',
  summary: 'Stop routing anything to a vendor (vendor:add re-enables it)',
  usage: 'vendor:disable --code C [--json]',
  flags: { code: { type: 'string' } },
  input: z.object({ code: z.string().min(1, '--code is required') }),
  async run(ctx, input) {
    if (!(await setVendorEnabled(await ctx.pool(), input.code, false))) throw new OpsError(`no vendor ${input.code}`);
    return { json: { code: input.code, enabled: false }, text: `vendor ${input.code} disabled` };
  },
});

export const routeSet = command({
  name: 'route:set',
  summary: 'Route a method to a vendor, platform-wide or for one merchant (lower priority first)',
  usage: 'route:set --method QRIS|BANK|EWALLET --vendor C [--merchant ID] [--priority N] [--remove] [--json]',
  flags: { method: { type: 'string' }, vendor: { type: 'string' }, merchant: { type: 'string' }, priority: { type: 'string' }, remove: { type: 'boolean' } },
  input: z.object({
    method: routeMethod,
    vendor: z.string().min(1, '--vendor is required'),
    merchant: z.uuid('--merchant must be a merchant UUID').optional(),
    priority: z.coerce.number().int().min(0).max(10_000).default(100),
    remove: z.boolean().optional(),
  }),
  async run(ctx, input) {
    const pool = await ctx.pool();
    const scope = input.merchant ? `merchant ${input.merchant}` : 'the platform default';
    const route = { merchantId: input.merchant ?? null, method: input.method, vendorCode: input.vendor };
    if (input.remove) {
      if (!(await removeRoute(pool, route))) throw new OpsError(`no such route for ${scope}`);
      return { json: { ...route, removed: true }, text: `route ${input.method} → ${input.vendor} removed from ${scope}` };
    }
    if (input.method !== 'QRIS') {
      const vendor = await getVendor(pool, ctx.sealer(), input.vendor);
      if (vendor && !canPayOut(vendor)) {
        throw new OpsError(`vendor ${vendor.code} is Midtrans without Iris keys: it cannot pay out (${input.method}); add them with vendor:add --iris-base-url … --iris-creator-key … --iris-approver-key … --iris-merchant-key …`);
      }
    }
    try {
      await setRoute(pool, { ...route, priority: input.priority });
    } catch (err) {
      if (/foreign key/i.test((err as Error).message)) throw new OpsError(`unknown vendor or merchant (${input.vendor}, ${input.merchant ?? '-'})`);
      throw err;
    }
    return { json: { ...route, priority: input.priority }, text: `route ${input.method} → ${input.vendor} (priority ${input.priority}) set for ${scope}` };
  },
});

export const routeList = command({
  name: 'route:list',
  summary: 'List routes (platform defaults first)',
  usage: 'route:list [--json]',
  flags: {},
  input: z.object({}),
  async run(ctx) {
    const routes = await listRoutes(await ctx.pool());
    const text = routes.length
      ? routes
          .map((r) => `${(r.merchant_id ?? 'default').padEnd(36)} ${r.method.padEnd(8)} ${r.vendor_code.padEnd(12)} priority=${r.priority}${r.enabled ? '' : ' (vendor disabled)'}`)
          .join('\n')
      : 'no routes';
    return { json: { routes }, text };
  },
});
