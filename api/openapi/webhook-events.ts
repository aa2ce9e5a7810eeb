// The webhook catalogue: every event a merchant can receive, the body schema it is sent with
// (api/openapi/schemas.ts, the same schemas as the OpenAPI document's `webhooks`) and a sample
// body. `npm run openapi` writes it to docs/webhook-events.md; `ops webhooks:trigger` sends the
// samples; test/api/openapi.test.ts holds real webhook bodies to these schemas.
//
// A sample is generated from its schema's JSON Schema (the conversion the document uses): each
// field takes the schema's own example, or a plain value of its type, unless the event names
// what it must be to read as that event (a paid order is PAID and has paid_at). The result is
// parsed with the zod schema, so a sample that drifts from its schema fails the generation.
import { z } from 'zod';
import { disbursementStatus } from '../../db/disbursements.sql.ts';
import { settlementStatus } from '../../db/settlements.sql.ts';
import * as s from './schemas.ts';

type Json = Record<string, unknown>;

export interface WebhookEvent {
  name: string;
  summary: string;
  /** Where it is sent. */
  destination: string;
  /** The V1 body. */
  schema: z.ZodType;
  /** The body when the resource was created through the legacy API (no event fields). */
  legacy?: z.ZodType;
  /** The values that make the sample read as this event (the rest is generated). */
  sample: Json;
  legacySample?: Json;
}

const ORDER_URL = 'The order\'s notify_url, else the merchant\'s default notify URL.';
const DISBURSEMENT_URL = 'The disbursement\'s notify URL, else the merchant\'s default notify URL.';
const MERCHANT_URL = 'The merchant\'s default notify URL (none set: not sent).';

const WHEN = '2026-11-21T08:30:00.000Z';
const WHEN_WIB = '2026-11-21 15:30:00';
const ORDER_REF = 'ORD-1763713800-7K3M9Q2X4B';

const order = { ref_code: ORDER_REF, merchant_order_id: 'INV-1001', amount: 150_000 };
const legacyOrder = { refCode: ORDER_REF, orderId: 'INV-1001', totalAmount: 150_000 };

function refund(amount: number, status: 'SUCCEEDED' | 'FAILED', failure: string | null) {
  return {
    id: '8a1d4f2c-6b3e-4d7a-9c5f-1e2b3a4c5d6e', ref_code: 'RFD-1763717400-3H8K2M6Q9T', order_ref_code: ORDER_REF, amount,
    reason: 'Damaged item', status, failure_reason: failure, completed_at: '2026-11-21T09:31:00.000Z', created_at: '2026-11-21T09:30:00.000Z',
  };
}

const disbursement = {
  idempotency_key: 'payout-2026-11-21-001', channel: 'BANK', account_number: '1234567890', account_name: 'Budi Santoso',
  ewallet_provider: null, ewallet_phone: null, request_amount: 150_000, fee: 2_500, final_amount: 150_000, total_debit: 152_500,
  source: 'API',
};

const legacyDisbursement = {
  refCode: 'DSB-1763713800-4B7N2P9R1K', orderId: 'payout-2026-11-21-001', accountNumber: '1234567890', accountName: 'Budi Santoso',
  bank: { name: 'Bank Central Asia', code: 'BCA' }, method: 'BANK_ACCOUNT', requestAmount: '150000.00', disbursementFee: '2500.00',
  disbursementAmount: '150000.00', requestAt: WHEN_WIB,
};

const settlement = {
  gross_amount: 1_000_000, mdr_total: 7_000, platform_fee: 4_000, aggregator_fee: 3_000, refund_total: 0, disbursement_fee: 2_500,
  net_payout: 990_500, order_count: 12, account_number: '1234567890', account_name: 'PT Toko Budi',
  period_start: '2026-11-19T17:00:00.000Z', period_end: '2026-11-20T17:00:00.000Z',
};

const exportJob = { type: 'orders', date_from: '2026-11-01', date_to: '2026-11-21', created_at: '2026-11-21T08:29:00.000Z' };

const disbursementEvents = disbursementStatus.options.filter((x) => x !== 'IN_REVIEW');

export const webhookEvents: readonly WebhookEvent[] = [
  {
    name: 'order.paid', summary: 'The payer paid the order\'s QR (also when the payment arrived after expiry: the money is never dropped, and the body carries `late: true`; refund it or fulfil the order).',
    destination: ORDER_URL, schema: s.orderWebhook, legacy: s.legacyOrderWebhook,
    sample: { ...order, status: 'PAID', event: 'order.paid', paid_at: WHEN },
    legacySample: { ...legacyOrder, status: 'PAID', paidAt: WHEN_WIB },
  },
  {
    name: 'order.expired', summary: 'The order expired unpaid.',
    destination: ORDER_URL, schema: s.orderWebhook, legacy: s.legacyOrderWebhook,
    sample: { ...order, status: 'EXPIRED', event: 'order.expired', paid_at: null },
    legacySample: { ...legacyOrder, status: 'EXPIRED', paidAt: null },
  },
  {
    name: 'order.partially_refunded', summary: 'A refund of part of the order succeeded; more may still be refunded.',
    destination: ORDER_URL, schema: s.orderRefundWebhook, legacy: s.legacyOrderWebhook,
    sample: { ...order, status: 'PAID', event: 'order.partially_refunded', paid_at: WHEN, refunded_amount: 50_000, refundable_amount: 100_000, refund: refund(50_000, 'SUCCEEDED', null) },
    legacySample: { ...legacyOrder, status: 'PAID', paidAt: WHEN_WIB },
  },
  {
    name: 'order.refunded', summary: 'The order is refunded in full (status REFUNDED).',
    destination: ORDER_URL, schema: s.orderRefundWebhook, legacy: s.legacyOrderWebhook,
    sample: { ...order, status: 'REFUNDED', event: 'order.refunded', paid_at: WHEN, refunded_amount: 150_000, refundable_amount: 0, refund: refund(150_000, 'SUCCEEDED', null) },
    legacySample: { ...legacyOrder, status: 'REFUNDED', paidAt: WHEN_WIB },
  },
  {
    name: 'order.refund_failed', summary: 'The gateway refused a refund: its money is back on the order\'s refundable amount.',
    destination: ORDER_URL, schema: s.orderRefundWebhook, legacy: s.legacyOrderWebhook,
    sample: { ...order, status: 'PAID', event: 'order.refund_failed', paid_at: WHEN, refunded_amount: 0, refundable_amount: 150_000, refund: refund(150_000, 'FAILED', 'refund window closed') },
    legacySample: { ...legacyOrder, status: 'PAID', paidAt: WHEN_WIB },
  },
  ...disbursementEvents.map((status): WebhookEvent => ({
    name: `disbursement.${status.toLowerCase()}`,
    summary: `The disbursement became ${status}.`,
    destination: DISBURSEMENT_URL, schema: s.disbursementWebhook, legacy: s.legacyDisbursement,
    sample: { ...disbursement, status, event: `disbursement.${status.toLowerCase()}`, vendor_disbursement_id: status === 'PENDING' ? null : 'vd-20261121-000731' },
    legacySample: { ...legacyDisbursement, status },
  })),
  ...settlementStatus.options.map((status): WebhookEvent => ({
    name: `settlement.${status.toLowerCase()}`,
    summary: `The settlement became ${status}${status === 'PENDING' ? ' (it was made, or is being paid out again)' : ''}.`,
    destination: MERCHANT_URL, schema: s.settlementWebhook,
    sample: { ...settlement, status, event: `settlement.${status.toLowerCase()}` },
  })),
  {
    name: 'export.completed', summary: 'A report export is built: download it from download_url.',
    destination: MERCHANT_URL, schema: s.exportWebhook,
    sample: { ...exportJob, status: 'COMPLETED', event: 'export.completed', row_count: 1_234, completed_at: WHEN, error: null },
  },
  {
    name: 'export.failed', summary: 'A report export could not be built; error says why (request it again, or a narrower range).',
    destination: MERCHANT_URL, schema: s.exportWebhook,
    sample: { ...exportJob, status: 'FAILED', event: 'export.failed', row_count: null, download_url: null, completed_at: WHEN, error: 'The export could not be built; please request it again' },
  },
];

export function webhookEvent(name: string): WebhookEvent | undefined {
  return webhookEvents.find((e) => e.name === name);
}

// ---------- Samples

function jsonSchemaOf(schema: z.ZodType): { root: Json; defs: Record<string, Json> } {
  const { $defs, ...root } = z.toJSONSchema(schema, { target: 'draft-2020-12', io: 'output' }) as Json;
  return { root, defs: ($defs ?? {}) as Record<string, Json> };
}

function resolve(schema: Json, defs: Record<string, Json>): Json {
  return typeof schema.$ref === 'string' ? resolve(defs[schema.$ref.replace('#/$defs/', '')], defs) : schema;
}

const FORMAT_SAMPLES: Record<string, unknown> = {
  uuid: '3f0c2a8e-5b7d-4c1e-9a6f-2d8b7e4c1a90',
  'date-time': WHEN,
  date: '2026-11-21',
  uri: 'https://api.kasir.example/',
  email: 'budi@example.com',
};

/** A value of `schema`: its example, else the first option or branch, else a plain value of its type. */
function generate(schema: Json, defs: Record<string, Json>): unknown {
  const own = resolve(schema, defs);
  if ('const' in own) return own.const;
  if (Array.isArray(own.examples) && own.examples.length) return own.examples[0];
  if (Array.isArray(own.enum)) return own.enum[0];
  const branches = (own.anyOf ?? own.oneOf) as Json[] | undefined;
  if (branches) return generate(branches.find((b) => resolve(b, defs).type !== 'null') ?? branches[0], defs);
  switch (own.type) {
    case 'object':
      return Object.fromEntries(Object.entries((own.properties ?? {}) as Record<string, Json>).map(([k, v]) => [k, generate(v, defs)]));
    case 'array':
      return [generate(own.items as Json, defs)];
    case 'string':
      return typeof own.format === 'string' && own.format in FORMAT_SAMPLES ? FORMAT_SAMPLES[own.format] : 'text';
    case 'integer':
    case 'number':
      return typeof own.minimum === 'number' ? own.minimum : 0;
    case 'boolean':
      return false;
    default:
      return null;
  }
}

/** The generated value with the event's own fields laid over it (objects merged, the rest replaced). */
function overlay(base: unknown, over: unknown): unknown {
  if (over === null || typeof over !== 'object' || Array.isArray(over) || base === null || typeof base !== 'object') return over;
  const merged: Json = { ...(base as Json) };
  for (const [k, v] of Object.entries(over as Json)) merged[k] = k in merged ? overlay(merged[k], v) : v;
  return merged;
}

function sampleOf(schema: z.ZodType, fields: Json, what: string): Json {
  const { root, defs } = jsonSchemaOf(schema);
  const sample = overlay(generate(root, defs), fields) as Json;
  delete sample.sample; // real events carry no sample marker
  const parsed = schema.safeParse(sample);
  if (!parsed.success) throw new Error(`the sample of ${what} does not match its schema:\n${z.prettifyError(parsed.error)}`);
  return sample as Json;
}

/** The sample V1 body of an event (event_id and event_created_at are the schema's examples). */
export function sampleBody(e: WebhookEvent): Json {
  return sampleOf(e.schema, e.sample, e.name);
}

/**
 * The body a sample delivery sends (ops webhooks:trigger, POST /v1/webhook-deliveries/samples):
 * the catalogue's sample marked `sample: true`, every id in it replaced by one no real resource
 * can have (ref codes of time 0, UUIDs of zeros, SAMPLE- merchant ids), so a receiver that looks
 * a sample up finds nothing of the merchant's, and a sample never reads as the README's INV-1001.
 */
export function sentSampleBody(e: WebhookEvent): Json {
  const uuids = new Map<string, string>();
  const replace = (text: string) => text
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi, (uuid) => {
      if (!uuids.has(uuid)) uuids.set(uuid, `00000000-0000-4000-8000-${String(uuids.size + 1).padStart(12, '0')}`);
      return uuids.get(uuid)!;
    })
    .replace(/\b(ORD|DSB|RFD)-\d+-[0-9A-Z]+\b/g, '$1-0-SAMPLE')
    .replace(/\bSTL-\d{8}-\d+\b/g, 'STL-00000000-0');
  const SAMPLE_IDS: Record<string, string> = { merchant_order_id: 'SAMPLE-ORDER', idempotency_key: 'sample-payout', vendor_disbursement_id: 'sample-vendor-id', vendor_rrn: 'sample-rrn' };
  const walk = (value: unknown, key?: string): unknown => {
    if (typeof value === 'string') return key && key in SAMPLE_IDS ? SAMPLE_IDS[key] : replace(value);
    if (Array.isArray(value)) return value.map((v) => walk(v));
    if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, walk(v, k)]));
    return value;
  };
  const body = { ...(walk(sampleBody(e)) as Json), sample: true };
  const parsed = e.schema.safeParse(body);
  if (!parsed.success) throw new Error(`the sent sample of ${e.name} does not match its schema:\n${z.prettifyError(parsed.error)}`);
  return body;
}

/** The sample legacy body of an event, when legacy resources have one. */
export function legacySampleBody(e: WebhookEvent): Json | null {
  return e.legacy ? sampleOf(e.legacy, e.legacySample ?? {}, `${e.name} (legacy)`) : null;
}

// ---------- docs/webhook-events.md

/** The name a schema has under components in docs/openapi.json. */
function componentName(schema: z.ZodType): string {
  const id = (schema.meta() as { id?: string } | undefined)?.id;
  if (!id) throw new Error('a webhook body schema must be a named component');
  return id;
}

function typeText(schema: Json, defs: Record<string, Json>): string {
  const own = resolve(schema, defs);
  if ('const' in own) return `\`${JSON.stringify(own.const)}\``;
  if (Array.isArray(own.enum)) return own.enum.map((v) => `\`${v}\``).join(' \\| ');
  const branches = (own.anyOf ?? own.oneOf) as Json[] | undefined;
  if (branches) return branches.map((b) => typeText(b, defs)).join(' or ');
  if (own.type === 'string' && typeof own.format === 'string') return `string (${own.format})`;
  if (own.type === 'object') return 'object';
  if (own.type === 'array') return `array of ${typeText(own.items as Json, defs)}`;
  return Array.isArray(own.type) ? own.type.join(' or ') : String(own.type ?? 'any');
}

function fieldTable(schema: z.ZodType): string {
  const { root, defs } = jsonSchemaOf(schema);
  const own = resolve(root, defs);
  const rows = Object.entries((own.properties ?? {}) as Record<string, Json>).map(([name, field]) => {
    const description = String(field.description ?? resolve(field, defs).description ?? '').replace(/\|/g, '\\|');
    return `| \`${name}\` | ${typeText(field, defs)} | ${description} |`;
  });
  return ['| Field | Type | Meaning |', '|---|---|---|', ...rows].join('\n');
}

const fence = (value: unknown) => ['```json', JSON.stringify(value, null, 2), '```'].join('\n');

/** docs/webhook-events.md: the catalogue as a merchant's developer reads it. */
export function webhookEventsMarkdown(): string {
  const out: string[] = [
    '# Webhook events',
    '',
    'Generated by `npm run openapi` from the schemas of the OpenAPI document (docs/openapi.json, `webhooks`);',
    'never edit by hand. How webhooks are signed, retried and resent: docs/webhooks.md.',
    '',
    'Every webhook is a `POST` with a JSON body and these headers:',
    '',
    '| Header | Value |',
    '|---|---|',
    '| `X-Kasir-Event` | The event\'s name (`order.paid`, ...), on every body shape, legacy ones included |',
    '| `webhook-id` | The delivery\'s id: the same on every retry and resend; a V1 body carries it as `event_id` |',
    '| `webhook-timestamp` | Unix seconds of this attempt |',
    '| `X-Signature` | With a webhook secret: `sha256=<lowercase hex HMAC-SHA256 of the raw body>` |',
    '| `webhook-signature` | With a webhook secret: `v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>">` |',
    '',
    'A V1 body is the resource as the API shows it, plus `event`, `event_id` and `event_created_at`. Resources',
    'created through the legacy API get the legacy shape instead, unchanged: the event\'s name and id are then',
    'in the `X-Kasir-Event` and `webhook-id` headers only. New fields may be added to any body; receivers',
    'should ignore fields they do not know.',
    '',
    '| Event | Body |',
    '|---|---|',
    ...webhookEvents.map((e) => `| [\`${e.name}\`](#${e.name.replace(/\./g, '')}) | \`${componentName(e.schema)}\`${e.legacy ? ` (legacy: \`${componentName(e.legacy)}\`)` : ''} |`),
  ];
  const described = new Set<z.ZodType>();
  for (const e of webhookEvents) {
    out.push('', `## ${e.name}`, '', e.summary, '', `Sent to: ${e.destination}`, '');
    if (described.has(e.schema)) {
      out.push(`Body: \`${componentName(e.schema)}\` (fields above).`);
    } else {
      described.add(e.schema);
      out.push(`Body: \`${componentName(e.schema)}\`.`, '', fieldTable(e.schema));
    }
    out.push('', 'Sample:', '', fence(sampleBody(e)));
    const legacy = legacySampleBody(e);
    if (legacy) out.push('', `Legacy-created resources (\`${componentName(e.legacy!)}\`):`, '', fence(legacy));
  }
  return `${out.join('\n')}\n`;
}
