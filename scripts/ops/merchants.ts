// Merchant and brand provisioning. The API key is printed once, here, and stored hashed;
// the legacy client secret is printed once, here, and stored sealed.
import { readFile } from 'node:fs/promises';
import { createPublicKey } from 'node:crypto';
import { z } from 'zod';
import { createBrand, defaultBrand, findBrandByDomain, setCheckoutLanguage } from '../../db/brands.ts';
import {
  createMerchant,
  merchantStatus,
  rotateApiKey,
  rotateLegacyClientSecret,
  setLegacyPublicKey,
  setMerchantStatus,
  setNotifyUrl,
  setWebhookSecret,
  settlementType,
} from '../../db/merchants.ts';
import { configSchema } from '../../db/config.ts';
import { checkNotifyUrl } from '../../db/notify-url.ts';
import { newWebhookSecret } from '../../db/secrets.ts';
import { legacyKeyProblem } from '../../api/legacy/rsa-signature.ts';
import { command, OpsError } from './command.ts';

const httpUrl = z.url({ protocol: /^https?$/ });

export const merchantCreate = command({
  name: 'merchant:create',
  summary: 'Provision a merchant and print its credentials (shown only once)',
  usage:
    'merchant:create --name NAME --settlement WALLET|MANUAL [--webhook-secret-file PATH|- | --webhook-secret S | --generate-webhook-secret] [--notify-url URL] [--brand-domain D] [--json]',
  flags: {
    name: { type: 'string' },
    settlement: { type: 'string' },
    'webhook-secret': { type: 'string' },
    'generate-webhook-secret': { type: 'boolean' },
    'notify-url': { type: 'string' },
    'brand-domain': { type: 'string' },
  },
  secretFlags: ['webhook-secret'],
  input: z
    .object({
      name: z.string().trim().min(1, '--name is required').max(200),
      settlement: settlementType,
      'webhook-secret': z.string().min(16, '--webhook-secret must be at least 16 characters').optional(),
      'generate-webhook-secret': z.boolean().optional(),
      'notify-url': httpUrl.max(2048, '--notify-url is too long (2048 at most)').optional(),
      'brand-domain': z.string().min(1).optional(),
    })
    .refine((v) => !(v['webhook-secret'] && v['generate-webhook-secret']), {
      message: 'give --webhook-secret or --generate-webhook-secret, not both',
    }),
  async run(ctx, input) {
    const pool = await ctx.pool();
    const brand = input['brand-domain'] ? await findBrandByDomain(pool, input['brand-domain']) : await defaultBrand(pool);
    if (!brand) throw new OpsError(`no brand with domain ${input['brand-domain']} (create it with brand:create)`);
    // The rules merchant:set-notify-url and an order's notify_url meet.
    const problem = input['notify-url'] ? checkNotifyUrl(input['notify-url'], notifyAllowlist()) : null;
    if (problem) throw new OpsError(`--notify-url ${problem}`);
    const webhookSecret = input['webhook-secret'] ?? (input['generate-webhook-secret'] ? newWebhookSecret() : null);
    const created = await createMerchant(pool, await ctx.sealer(), {
      name: input.name,
      settlementType: input.settlement,
      brandId: brand.id,
      webhookSecret,
      notifyUrl: input['notify-url'] ?? null,
    });
    return {
      json: created,
      text: [
        `merchant ${created.merchant_id} created (${input.settlement}, brand ${brand.domain})`,
        `api_key:              ${created.api_key}   (shown only now; stored hashed)`,
        `webhook_secret:       ${created.webhook_secret ?? '(none: requests and webhooks are unsigned)'}`,
        `legacy_client_id:     ${created.legacy_client_id}`,
        `legacy_client_secret: ${created.legacy_client_secret}`,
      ].join('\n'),
    };
  },
});

const checkoutLanguage = z.enum(['id', 'en'], '--checkout-language and --language take id (Bahasa Indonesia) or en (English)');

export const brandCreate = command({
  name: 'brand:create',
  summary: 'Add a brand served on its own API domain',
  usage: 'brand:create --domain D --name N [--logo-url U] [--support-email E] [--checkout-language id|en] [--json]',
  flags: {
    domain: { type: 'string' },
    name: { type: 'string' },
    'logo-url': { type: 'string' },
    'support-email': { type: 'string' },
    'checkout-language': { type: 'string' },
  },
  input: z.object({
    domain: z.string().regex(/^[a-z0-9.-]+$/i, '--domain must be a host name'),
    name: z.string().trim().min(1, '--name is required'),
    'logo-url': httpUrl.optional(),
    'support-email': z.email().optional(),
    'checkout-language': checkoutLanguage.optional(),
  }),
  async run(ctx, input) {
    const pool = await ctx.pool();
    if (await findBrandByDomain(pool, input.domain)) throw new OpsError(`brand ${input.domain} already exists`);
    const brand = await createBrand(pool, {
      domain: input.domain,
      name: input.name,
      logoUrl: input['logo-url'] ?? null,
      supportEmail: input['support-email'] ?? null,
      checkoutLanguage: input['checkout-language'],
    });
    return { json: { brand_id: brand.id, domain: brand.domain, name: brand.name, checkout_language: brand.checkout_language }, text: `brand ${brand.domain} created (${brand.id})` };
  },
});

export const brandSetCheckoutLanguage = command({
  name: 'brand:set-checkout-language',
  summary: "Set the language of a brand's checkout page when the payer's browser asks for neither Indonesian nor English",
  usage: 'brand:set-checkout-language --domain D --language id|en [--json]',
  flags: { domain: { type: 'string' }, language: { type: 'string' } },
  input: z.object({ domain: z.string().min(1, '--domain is required'), language: checkoutLanguage }),
  async run(ctx, input) {
    if (!(await setCheckoutLanguage(await ctx.pool(), input.domain, input.language))) throw new OpsError(`no brand with domain ${input.domain}`);
    return {
      json: { domain: input.domain, checkout_language: input.language },
      text: `brand ${input.domain}: checkout page in ${input.language === 'id' ? 'Bahasa Indonesia' : 'English'} unless the payer's browser asks for the other (within a few seconds in every API process)`,
    };
  },
});

const merchantId = z.uuid('--merchant must be a merchant UUID');

export const merchantSetStatus = command({
  name: 'merchant:set-status',
  summary: 'Activate, suspend or disable a merchant',
  usage: 'merchant:set-status --merchant ID --status ACTIVE|SUSPENDED|DISABLED [--json]',
  flags: { merchant: { type: 'string' }, status: { type: 'string' } },
  input: z.object({ merchant: merchantId, status: merchantStatus }),
  async run(ctx, input) {
    await setMerchantStatus(await ctx.pool(), input.merchant, input.status);
    return { json: { merchant_id: input.merchant, status: input.status }, text: `merchant ${input.merchant} is now ${input.status}` };
  },
});

/**
 * The hosts a private notify URL may name: NOTIFY_URL_ALLOWLIST as the processes read it, and
 * under `npm start` (no DATABASE_URL) the loopback names it allows.
 */
function notifyAllowlist(): string[] {
  const raw = process.env.NOTIFY_URL_ALLOWLIST ?? (process.env.DATABASE_URL ? '' : '127.0.0.1,localhost');
  return configSchema.shape.NOTIFY_URL_ALLOWLIST.parse(raw);
}

export const merchantSetNotifyUrl = command({
  name: 'merchant:set-notify-url',
  summary: "Set (or clear) a merchant's default webhook URL, used when an order or disbursement names none",
  usage: 'merchant:set-notify-url --merchant ID (--url URL | --clear) [--json]',
  flags: { merchant: { type: 'string' }, url: { type: 'string' }, clear: { type: 'boolean' } },
  input: z
    .object({ merchant: merchantId, url: httpUrl.max(2048, '--url is too long (2048 at most)').optional(), clear: z.boolean().optional() })
    .refine((v) => (v.url !== undefined) !== (v.clear === true), { message: 'give --url URL or --clear' }),
  async run(ctx, input) {
    const url = input.clear ? null : input.url!;
    // The rules an order's notify_url meets at the API, so the operator hears of a private
    // address now rather than from a delivery that is refused later.
    const problem = url === null ? null : checkNotifyUrl(url, notifyAllowlist());
    if (problem) throw new OpsError(`--url ${problem}`);
    await setNotifyUrl(await ctx.pool(), input.merchant, url);
    return {
      json: { merchant_id: input.merchant, notify_url: url },
      text: url ? `webhooks of ${input.merchant} without their own URL now go to ${url}` : `merchant ${input.merchant} has no default webhook URL`,
    };
  },
});

// A week covers a merchant's slowest deploy; a longer overlap is two live keys for no reason.
const MAX_GRACE_MINUTES = 7 * 24 * 60;

export const merchantRotateKey = command({
  name: 'merchant:rotate-key',
  summary: 'Replace the API key; the old key works for --grace-minutes more (default 0: stops at once)',
  usage: 'merchant:rotate-key --merchant ID [--grace-minutes N] [--json]',
  flags: { merchant: { type: 'string' }, 'grace-minutes': { type: 'string' } },
  input: z.object({
    merchant: merchantId,
    'grace-minutes': z.coerce.number().int().min(0).max(MAX_GRACE_MINUTES, `at most ${MAX_GRACE_MINUTES} (7 days)`).default(0),
  }),
  async run(ctx, input) {
    const rotated = await rotateApiKey(await ctx.pool(), input.merchant, input['grace-minutes']);
    const until = rotated.previousValidUntil?.toISOString() ?? null;
    return {
      json: { merchant_id: input.merchant, api_key: rotated.apiKey, previous_key_valid_until: until },
      text: [
        `new api_key: ${rotated.apiKey}   (shown only now)`,
        until ? `the previous key keeps working until ${until}` : 'the previous key no longer works',
      ].join('\n'),
    };
  },
});

export const merchantRotateLegacySecret = command({
  name: 'merchant:rotate-legacy-secret',
  summary: 'Issue a new legacy client secret (shown only once); the old one stops working at once',
  usage: 'merchant:rotate-legacy-secret --merchant ID [--json]',
  flags: { merchant: { type: 'string' } },
  input: z.object({ merchant: merchantId }),
  async run(ctx, input) {
    const secret = await rotateLegacyClientSecret(await ctx.pool(), await ctx.sealer(), input.merchant);
    return {
      json: { merchant_id: input.merchant, legacy_client_secret: secret },
      text: `new legacy_client_secret: ${secret}   (shown only now; stored sealed)`,
    };
  },
});

export const merchantSetPublicKey = command({
  name: 'merchant:set-public-key',
  summary: "Store the merchant's RSA public key (2048 bits or more) for legacy disbursement signatures",
  usage: 'merchant:set-public-key --merchant ID --file PEM [--json]',
  flags: { merchant: { type: 'string' }, file: { type: 'string' } },
  input: z.object({ merchant: merchantId, file: z.string().min(1, '--file is required') }),
  async run(ctx, input) {
    const pem = await readFile(input.file, 'utf8').catch(() => {
      throw new OpsError(`cannot read ${input.file}`);
    });
    let key;
    try {
      key = createPublicKey(pem);
    } catch {
      throw new OpsError(`${input.file} is not a PEM public key`);
    }
    // The rule the legacy API verifies with (api/legacy/rsa-signature.ts): refused here, loudly,
    // rather than stored and then failing every request as a bad signature.
    const problem = legacyKeyProblem(key);
    if (problem) throw new OpsError(`${input.file} is ${problem}`);
    const normalised = key.export({ type: 'spki', format: 'pem' }).toString();
    await setLegacyPublicKey(await ctx.pool(), input.merchant, normalised);
    return { json: { merchant_id: input.merchant, public_key_set: true }, text: `public key stored for merchant ${input.merchant}` };
  },
});

export const merchantSetWebhookSecret = command({
  name: 'merchant:set-webhook-secret',
  summary: 'Set the secret that signs order requests and webhooks',
  usage: 'merchant:set-webhook-secret --merchant ID (--secret-file PATH|- | --secret S | --generate) [--json]',
  flags: { merchant: { type: 'string' }, secret: { type: 'string' }, generate: { type: 'boolean' } },
  secretFlags: ['secret'],
  input: z
    .object({ merchant: merchantId, secret: z.string().min(16, '--secret must be at least 16 characters').optional(), generate: z.boolean().optional() })
    .refine((v) => Boolean(v.secret) !== Boolean(v.generate), { message: 'give exactly one of --secret or --generate' }),
  async run(ctx, input) {
    const secret = input.secret ?? newWebhookSecret();
    await setWebhookSecret(await ctx.pool(), await ctx.sealer(), input.merchant, secret);
    return { json: { merchant_id: input.merchant, webhook_secret: secret }, text: `webhook secret set: ${secret}` };
  },
});
