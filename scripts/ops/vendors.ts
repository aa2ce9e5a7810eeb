// Vendors and routing: which gateways exist and which one a payment method goes to.
import { createPrivateKey, createPublicKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { gatewayFor } from '../../gateways/registry.ts';
import { PUBLISHED_SECRETS, publishedCredentials } from '../../db/published-secrets.ts';
import { environmentSigns, sandboxMarkProblem } from '../../db/sandbox-credentials.ts';
import { listRoutes } from '../../db/operator-lists.ts';
import { poolReader } from '../../db/pool.ts';
import { listConflicts } from '../../db/vendor-binding.ts';
import {
  getVendor,
  removeRoute,
  removeVendor,
  routeMethod,
  routeMode,
  setRoute,
  setRouteMode,
  setVendorEnabled,
  upsertVendor,
  LATE_PAYMENT_HOURS,
  type VendorRecord,
} from '../../db/vendors.ts';
import { command, OpsError } from './command.ts';

const vendorCode = z.string().regex(/^[a-z0-9][a-z0-9_-]{0,31}$/, 'lowercase letters, digits, "_" or "-", up to 32');
const httpUrl = z.url({ protocol: /^https?$/ });
const key = (flag: string) => z.string({ error: `--${flag} is required` }).min(8, `--${flag}: at least 8 characters`);

// The vendor's sandbox, marked by the operator (db/sandbox-credentials.ts). Not the simulator's:
// the built-in simulator is the development gateway, kept off real stacks by its published secrets.
const sandbox = z.boolean().optional();

/**
 * What each kind needs, and the credentials object sealed for it (the adapter's own reading
 * of `vendor.credentials`). Flags of another kind are refused rather than silently dropped.
 */
const vendorInput = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('simulator'), code: vendorCode, 'base-url': httpUrl, secret: key('secret') }),
  z.strictObject({
    kind: z.literal('xendit'),
    sandbox,
    code: vendorCode,
    'base-url': httpUrl,
    'secret-key': key('secret-key'),
    'callback-token': key('callback-token'),
  }),
  z
    .strictObject({
      kind: z.literal('midtrans'),
      sandbox,
      code: vendorCode,
      'base-url': httpUrl,
      'server-key': key('server-key'),
      'qris-acquirer': z.enum(['gopay', 'airpay-shopee']).default('gopay'),
      'iris-base-url': httpUrl.optional(),
      'iris-creator-key': key('iris-creator-key').optional(),
      'iris-approver-key': key('iris-approver-key').optional(),
      'iris-merchant-key': key('iris-merchant-key').optional(),
      // The Iris approver's two-factor secret (base32, as enrolled in an authenticator app):
      // approvals carry its current TOTP code.
      'iris-approver-totp-secret': z.string().regex(/^[A-Z2-7]{16,}=*$/, '--iris-approver-totp-secret: base32 (A-Z, 2-7), at least 16 characters').optional(),
    })
    .refine(
      (v) => {
        const iris = [v['iris-base-url'], v['iris-creator-key'], v['iris-approver-key'], v['iris-merchant-key']];
        return iris.every((x) => x === undefined) || iris.every((x) => x !== undefined);
      },
      'Iris payouts need all four of --iris-base-url, --iris-creator-key, --iris-approver-key and --iris-merchant-key',
    )
    .refine((v) => v['iris-approver-totp-secret'] === undefined || v['iris-base-url'] !== undefined, '--iris-approver-totp-secret goes with the Iris keys'),
  z.strictObject({
    kind: z.literal('snap'),
    sandbox,
    code: vendorCode,
    'base-url': httpUrl,
    'partner-id': z.string({ error: '--partner-id is required' }).min(1).max(64),
    'client-key': z.string({ error: '--client-key is required' }).min(1).max(256),
    'client-secret': key('client-secret'),
    'private-key-file': z.string({ error: '--private-key-file is required' }).min(1),
    'provider-public-key-file': z.string({ error: '--provider-public-key-file is required' }).min(1),
    'channel-id': z.string({ error: '--channel-id is required' }).regex(/^\d{1,5}$/, '--channel-id: up to 5 digits'),
    'merchant-id': z.string({ error: '--merchant-id is required' }).min(1).max(64),
    'terminal-id': z.string().min(1).max(64).optional(),
    'notify-signature': z.enum(['rsa', 'hmac']).default('rsa'),
    // The serviceCode sent in a QR query body: the standard names the original service (47); some
    // providers want the query's own (51).
    'qr-query-service-code': z.enum(['47', '51']).default('47'),
    // Transfers and inquiries: providers that take the 7-digit bank code (3-digit BI code and a
    // 4-digit branch code, Midtrans) say which branch code to send; some require sourceAccountNo
    // (Midtrans: 0000000000 for aggregators, the registered account id for facilitators).
    'bank-branch-code': z.string().regex(/^\d{4}$/, '--bank-branch-code: 4 digits').optional(),
    'source-account-no': z.string().regex(/^\d{1,19}$/, '--source-account-no: up to 19 digits').optional(),
  }),
]);
type VendorInput = z.infer<typeof vendorInput>;

/**
 * A PEM key file, read once and checked to be the kind of key it claims to be. Its content
 * is sealed with the other credentials and never printed.
 */
function readKey(file: string, kind: 'private' | 'public', flag: string): string {
  let pem: string;
  try {
    pem = readFileSync(file, 'utf8');
  } catch (err) {
    throw new OpsError(`--${flag}: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  try {
    const key = kind === 'private' ? createPrivateKey(pem) : createPublicKey(pem);
    if (key.asymmetricKeyType !== 'rsa') throw new Error(`an ${key.asymmetricKeyType} key`);
    const bits = key.asymmetricKeyDetails?.modulusLength ?? 0;
    if (bits < 2048) throw new Error(`a ${bits}-bit RSA key; SNAP needs 2048 bits or more`);
    return key.export({ type: kind === 'private' ? 'pkcs8' : 'spki', format: 'pem' }).toString();
  } catch (err) {
    throw new OpsError(`--${flag}: ${file} is not a usable RSA ${kind} key (${(err as Error).message.split('\n')[0]})`);
  }
}

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
            ...(input['iris-approver-totp-secret'] ? { irisApproverTotpSecret: input['iris-approver-totp-secret'] } : {}),
          }
        : {};
      return { serverKey: input['server-key'], qrisAcquirer: input['qris-acquirer'], ...iris };
    }
    case 'snap':
      return {
        partnerId: input['partner-id'],
        clientKey: input['client-key'],
        clientSecret: input['client-secret'],
        privateKeyPem: readKey(input['private-key-file'], 'private', 'private-key-file'),
        providerPublicKeyPem: readKey(input['provider-public-key-file'], 'public', 'provider-public-key-file'),
        channelId: input['channel-id'],
        merchantId: input['merchant-id'],
        ...(input['terminal-id'] ? { terminalId: input['terminal-id'] } : {}),
        notifySignature: input['notify-signature'],
        qrQueryServiceCode: input['qr-query-service-code'],
        ...(input['bank-branch-code'] ? { bankBranchCode: input['bank-branch-code'] } : {}),
        ...(input['source-account-no'] ? { sourceAccountNo: input['source-account-no'] } : {}),
      };
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
    'vendor:add --code C --kind xendit --base-url URL --secret-key K --callback-token T [--sandbox] [--json]',
    'vendor:add --code C --kind midtrans --base-url URL --server-key K [--qris-acquirer gopay|airpay-shopee]',
    '           [--iris-base-url URL --iris-creator-key K --iris-approver-key K --iris-merchant-key K [--iris-approver-totp-secret BASE32]] [--sandbox] [--json]',
    'vendor:add --code C --kind snap --base-url URL --partner-id P --client-key K --client-secret S',
    '           --private-key-file PEM --provider-public-key-file PEM --channel-id CH --merchant-id MID [--terminal-id TID]',
    '           [--notify-signature rsa|hmac] [--qr-query-service-code 47|51] [--bank-branch-code NNNN] [--source-account-no N] [--sandbox] [--json]',
    '--sandbox: the vendor\'s sandbox (test keys, sandbox hosts), refused without it; production credentials are refused with it',
  ].join('\n       '),
  flags: {
    sandbox: { type: 'boolean' },
    ...Object.fromEntries(
      ['code', 'kind', 'base-url', 'secret', 'secret-key', 'callback-token', 'server-key', 'qris-acquirer', 'iris-base-url', 'iris-creator-key', 'iris-approver-key', 'iris-merchant-key',
        'iris-approver-totp-secret', 'partner-id', 'client-key', 'client-secret', 'private-key-file', 'provider-public-key-file', 'channel-id', 'merchant-id', 'terminal-id',
        'notify-signature', 'qr-query-service-code', 'bank-branch-code', 'source-account-no'].map(
        (name) => [name, { type: 'string' as const }],
      ),
    ),
  },
  // The SNAP client key is an identifier sent in the clear (X-CLIENT-KEY), not a secret.
  secretFlags: ['secret', 'secret-key', 'callback-token', 'server-key', 'iris-creator-key', 'iris-approver-key', 'iris-merchant-key', 'iris-approver-totp-secret', 'client-secret'],
  input: z.preprocess((raw) => Object.fromEntries(Object.entries(raw as object).filter(([, v]) => v !== undefined)), vendorInput),
  async run(ctx, input) {
    const baseUrl = input['base-url'].replace(/\/+$/, '');
    const sandbox = input.kind !== 'simulator' && input.sandbox === true;
    const credentials = credentialsOf(input);
    const urls = { 'base-url': baseUrl, 'iris-base-url': input.kind === 'midtrans' ? input['iris-base-url'] : undefined };
    const markProblem = sandboxMarkProblem(environmentSigns(urls, credentials), sandbox);
    if (markProblem) throw new OpsError(markProblem);
    // A secret published with Kasir (the simulator's defaults) lets anyone sign this vendor's callbacks.
    const published = publishedCredentials(credentials);
    if (published.length && process.env.ALLOW_DEVELOPMENT_SECRETS !== 'true') {
      throw new OpsError(
        `${published.join(', ')}: a development default published with Kasir; anyone can sign callbacks with it. ` +
          'Use the secret the vendor issued you (or set ALLOW_DEVELOPMENT_SECRETS=true on a stack nobody else can reach)',
      );
    }
    await upsertVendor(await ctx.pool(), await ctx.sealer(), { code: input.code, kind: input.kind, baseUrl, credentials, sandbox });
    return {
      json: { code: input.code, kind: input.kind, base_url: baseUrl, enabled: true, sandbox },
      text: `vendor ${input.code} (${input.kind}) saved and enabled${sandbox ? ' as a SANDBOX vendor: this stack must take no real money' : ''}`,
    };
  },
});

export const vendorCheck = command({
  name: 'vendor:check',
  summary: "Make one authenticated call that changes nothing at the vendor, and say whether it worked",
  usage: 'vendor:check --code C [--json]',
  flags: { code: { type: 'string' } },
  input: z.object({ code: z.string({ error: '--code is required' }).min(1, '--code is required') }),
  async run(ctx, input) {
    const vendor = await getVendor(await ctx.pool(), await ctx.sealer(), input.code);
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

export const vendorDisable = command({
  name: 'vendor:disable',
  summary: 'Stop routing anything new to a vendor; what it holds still completes through it (vendor:add re-enables it)',
  usage: 'vendor:disable --code C [--json]',
  flags: { code: { type: 'string' } },
  input: z.object({ code: z.string().min(1, '--code is required') }),
  async run(ctx, input) {
    if (!(await setVendorEnabled(await ctx.pool(), input.code, false))) throw new OpsError(`no vendor ${input.code}`);
    return { json: { code: input.code, enabled: false }, text: `vendor ${input.code} disabled` };
  },
});

export const vendorRemove = command({
  name: 'vendor:remove',
  summary: 'Remove a vendor: its routes go, its credentials are erased, its callbacks are refused (vendor:add brings it back)',
  usage: 'vendor:remove --code C [--force] [--json]',
  flags: { code: { type: 'string' }, force: { type: 'boolean' } },
  input: z.object({ code: z.string({ error: '--code is required' }).min(1, '--code is required'), force: z.boolean().optional() }),
  async run(ctx, input) {
    const pool = await ctx.pool();
    // What it still holds would never be heard of again: its callbacks are refused and nobody
    // can ask it. Checked and removed in one transaction (db/vendors.ts removeVendor).
    const removal = await removeVendor(pool, await ctx.sealer(), input.code, { force: input.force });
    if (removal.outcome === 'unknown') throw new OpsError(`no vendor ${input.code}`);
    const held = removal.held;
    if (removal.outcome === 'holds') {
      throw new OpsError(
        `vendor ${input.code} still holds ${held.orders} open orders, ${held.expired_orders} orders expired in the last ${LATE_PAYMENT_HOURS} hours ` +
          `(their payments may still be reported), ${held.disbursements} disbursements and ${held.settlements} settlement payouts in flight, ` +
          `and ${held.refunds} pending refunds; once removed, nothing it says about them is believed. ` +
          'vendor:disable it and wait for them to finish, or pass --force to remove it anyway',
      );
    }
    return { json: { code: input.code, removed: true, in_flight: held }, text: `vendor ${input.code} removed: routes deleted, credentials erased, callbacks refused` };
  },
});

const conflictKind = z.enum(['NOT_ITS_RECORD', 'CONTRADICTION', 'UNCONFIRMED']);

export const vendorConflicts = command({
  name: 'vendor:conflicts',
  summary: "List vendor words Kasir recorded and did not apply: about another vendor's record, contradicting a final state, or a payment its own read did not confirm",
  usage: 'vendor:conflicts [--kind NOT_ITS_RECORD|CONTRADICTION|UNCONFIRMED] [--vendor C] [--since ISO-TIME] [--limit N] [--json]',
  flags: { kind: { type: 'string' }, vendor: { type: 'string' }, since: { type: 'string' }, limit: { type: 'string' } },
  input: z.object({
    kind: z.preprocess((v) => (typeof v === 'string' ? v.toUpperCase() : v), conflictKind).optional(),
    vendor: z.string().min(1).optional(),
    since: z.iso.datetime({ offset: true, error: '--since: an ISO 8601 time such as 2026-01-31T00:00:00+07:00' }).optional(),
    limit: z.coerce.number().int().min(1).max(10_000).default(100),
  }),
  async run(ctx, input) {
    const rows = await listConflicts(await ctx.pool(), {
      kind: input.kind,
      vendorCode: input.vendor,
      since: input.since ? new Date(input.since) : undefined,
      limit: input.limit,
    });
    const text = rows.length
      ? rows
          .map((r) =>
            `${r.created_at.toISOString()} ${r.kind.padEnd(14)} ${r.vendor_code.padEnd(12)} ${r.record_type.padEnd(12)} ${r.reference} ` +
            `kasir=${r.kasir_status} vendor=${r.vendor_status} holder=${r.record_vendor ?? '-'} via ${r.source}`,
          )
          .join('\n')
      : 'no conflicts';
    return { json: { conflicts: rows }, text };
  },
});

export const routeSet = command({
  name: 'route:set',
  summary: 'Route a method to a vendor, platform-wide or for one merchant (lower priority first); --mode adaptive lets recent vendor outcomes reorder it',
  usage: [
    'route:set --method QRIS|BANK|EWALLET --vendor C [--merchant ID] [--priority N] [--mode priority|adaptive] [--remove] [--json]',
    'route:set --method QRIS|BANK|EWALLET [--merchant ID] --mode priority|adaptive [--json]',
  ].join('\n       '),
  flags: { method: { type: 'string' }, vendor: { type: 'string' }, merchant: { type: 'string' }, priority: { type: 'string' }, mode: { type: 'string' }, remove: { type: 'boolean' } },
  input: z
    .object({
      method: routeMethod,
      vendor: z.string().min(1, '--vendor is required').optional(),
      merchant: z.uuid('--merchant must be a merchant UUID').optional(),
      priority: z.coerce.number().int().min(0).max(10_000).default(100),
      mode: z.preprocess((v) => (typeof v === 'string' ? v.toLowerCase() : v), z.enum(routeMode.options, { error: '--mode: priority or adaptive' })).optional(),
      remove: z.boolean().optional(),
    })
    .refine((i) => i.vendor !== undefined || i.mode !== undefined, { message: '--vendor is required', path: ['vendor'] })
    .refine((i) => !(i.remove && i.mode), { message: '--remove takes no --mode', path: ['mode'] }),
  async run(ctx, input) {
    const pool = await ctx.pool();
    const scope = input.merchant ? `merchant ${input.merchant}` : 'the platform default';
    if (input.vendor === undefined) {
      // The mode alone: how this route orders its vendors from now on (db/routing.ts).
      try {
        await setRouteMode(pool, { merchantId: input.merchant ?? null, method: input.method, mode: input.mode! });
      } catch (err) {
        if (/foreign key/i.test((err as Error).message)) throw new OpsError(`unknown merchant ${input.merchant}`);
        throw err;
      }
      return {
        json: { merchantId: input.merchant ?? null, method: input.method, mode: input.mode },
        text: `${input.method} route of ${scope} now in ${input.mode} mode${input.mode === 'adaptive' ? ' (ops routes:explain shows how it orders its vendors)' : ''}`,
      };
    }
    const route = { merchantId: input.merchant ?? null, method: input.method, vendorCode: input.vendor };
    if (input.remove) {
      if (!(await removeRoute(pool, route))) throw new OpsError(`no such route for ${scope}`);
      const ownLeft = input.merchant ? (await listRoutes(poolReader(pool))).some((r) => r.merchant_id === input.merchant && r.method === input.method) : true;
      const note = ownLeft ? '' : `. Merchant ${input.merchant} has no ${input.method} route of its own left: the platform's ${input.method} routes apply to it again`;
      return { json: { ...route, removed: true }, text: `route ${input.method} → ${input.vendor} removed from ${scope}${note}` };
    }
    const vendor = await getVendor(pool, await ctx.sealer(), input.vendor);
    if (!vendor) throw new OpsError(`unknown vendor ${input.vendor}`);
    if (input.method !== 'QRIS') {
      if (!canPayOut(vendor)) {
        throw new OpsError(`vendor ${vendor.code} is Midtrans without Iris keys: it cannot pay out (${input.method}); add them with vendor:add --iris-base-url … --iris-creator-key … --iris-approver-key … --iris-merchant-key …`);
      }
    }
    try {
      await setRoute(pool, { ...route, priority: input.priority });
      if (input.mode) await setRouteMode(pool, { merchantId: route.merchantId, method: input.method, mode: input.mode });
    } catch (err) {
      if (/foreign key/i.test((err as Error).message)) throw new OpsError(`unknown vendor or merchant (${input.vendor}, ${input.merchant ?? '-'})`);
      throw err;
    }
    // A merchant's own routes for a method replace the platform's for it (db/vendors.ts
    // routeVendors): say so, since a platform route added later will not reach this merchant.
    const note = input.merchant
      ? `. Merchant ${input.merchant} now uses only its own ${input.method} routes: the platform's ${input.method} routes no longer apply to it (route:set --remove its own to return to them)`
      : '';
    return {
      json: { ...route, priority: input.priority, ...(input.mode ? { mode: input.mode } : {}), ...(input.merchant ? { replaces_platform_routes: true } : {}) },
      text: `route ${input.method} → ${input.vendor} (priority ${input.priority}${input.mode ? `, ${input.mode} mode` : ''}) set for ${scope}${note}`,
    };
  },
});

