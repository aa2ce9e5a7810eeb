// Vendors and routing: which gateways exist and which one a payment method goes to.
import { z } from 'zod';
import { listRoutes, listVendors, removeRoute, routeMethod, setRoute, setVendorEnabled, upsertVendor } from '../../db/vendors.ts';
import { command, OpsError } from './command.ts';

export const vendorAdd = command({
  name: 'vendor:add',
  summary: 'Add a vendor (or update its URL and credentials); credentials are stored encrypted',
  usage: 'vendor:add --code C --kind simulator --base-url URL --secret S [--json]',
  flags: { code: { type: 'string' }, kind: { type: 'string' }, 'base-url': { type: 'string' }, secret: { type: 'string' } },
  input: z.object({
    code: z.string().regex(/^[a-z0-9][a-z0-9_-]{0,31}$/, 'lowercase letters, digits, "_" or "-", up to 32'),
    kind: z.enum(['simulator']),
    'base-url': z.url({ protocol: /^https?$/ }),
    secret: z.string().min(8, 'at least 8 characters'),
  }),
  async run(ctx, input) {
    await upsertVendor(await ctx.pool(), ctx.sealer(), {
      code: input.code,
      kind: input.kind,
      baseUrl: input['base-url'].replace(/\/$/, ''),
      credentials: { secret: input.secret },
    });
    return { json: { code: input.code, kind: input.kind, base_url: input['base-url'], enabled: true }, text: `vendor ${input.code} saved and enabled` };
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
