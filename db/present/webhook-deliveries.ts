// A webhook delivery as its merchant sees it (GET /v1/webhook-deliveries): what was sent where,
// about which resource, and how each attempt went. The body is the exact text signed and sent.
// `sample` marks an operator's sample (ops webhooks:trigger): not a real event.
import type { AttemptRow, MerchantDeliveryRow } from '../webhooks.ts';
import { iso } from './time.ts';

export function presentDelivery(d: MerchantDeliveryRow, attempts?: readonly AttemptRow[]) {
  return {
    id: d.id,
    event: d.event,
    sample: d.sample,
    url: d.url,
    status: d.status,
    resource: d.resource_type ? { type: d.resource_type, ref_code: d.resource_ref } : null,
    attempts: d.attempts,
    last_status_code: d.last_status_code,
    last_error: d.last_error,
    next_attempt_at: d.next_attempt_at ? iso(d.next_attempt_at) : null,
    delivered_at: d.delivered_at ? iso(d.delivered_at) : null,
    created_at: iso(d.created_at),
    body: d.body,
    ...(attempts
      ? { attempt_log: attempts.map((a) => ({ attempt: a.attempt, status_code: a.status_code, latency_ms: a.latency_ms, error: a.error, created_at: iso(a.created_at) })) }
      : {}),
  };
}
