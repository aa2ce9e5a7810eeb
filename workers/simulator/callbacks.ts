// Outgoing callbacks to Kasir, signed like Kasir's requests (docs/simulator.md).
//
// Delivery runs in the background with its own backoff (got's retry is off: a retry must be
// re-signed with a fresh timestamp). Each callback carries a unique event_id; a duplicate
// delivery, whether injected or a retry after a lost answer, reuses it so Kasir can dedupe.
import { randomUUID } from 'node:crypto';
import got from 'got';
import type { Logger } from 'pino';
import type { Fault, Faults } from './faults.ts';
import { signedHeaders } from './signing.ts';
import type { Timers } from './timers.ts';

/** Waits before attempts 2..5: about 23 s in all, enough to ride out a Kasir restart in dev. */
const RETRY_DELAYS_MS = [500, 2000, 5000, 15000];
const ATTEMPT_TIMEOUT_MS = 5000;
/** How long an out_of_order_callback waits for a later callback before going out anyway. */
const OUT_OF_ORDER_MAX_HOLD_MS = 5000;

export type CallbackPayload =
  | { type: 'qris.paid'; reference: string; id: string; amount: number; paid_at: string; rrn: string }
  | { type: 'disbursement.updated'; reference: string; id: string; status: 'SUCCESS' | 'FAILED'; failure_reason: string | null };

/** How one callback is sent: its headers per attempt, and who hears the answers. */
export interface Delivery {
  /** Headers for an attempt (a fresh signature each time); null skips the attempt (no token yet). */
  headers(body: string): Record<string, string> | null | Promise<Record<string, string> | null>;
  /** Log fields naming the callback. */
  about: Record<string, string>;
  /** Hears every HTTP answer (a dialect's stats of what Kasir answered). */
  onAnswer?(status: number, body: string): void;
  /** false: fault rules pass it by (only its request's X-Sim-Fault applies). */
  takesFaults?: boolean;
}

export function createCallbackSender(deps: { secret: string; logger: Logger; faults: Faults; timers: Timers; signal: AbortSignal }) {
  const { secret, logger, faults, timers, signal } = deps;
  /** Callbacks created so far; orders out_of_order holds against later callbacks. */
  let sequence = 0;
  /** out_of_order callbacks, each released by the first delivery attempt of a later one. */
  let held: Array<{ seq: number; release: () => void }> = [];

  async function attempt(url: string, body: string, delivery: Delivery): Promise<number | string> {
    const headers = await delivery.headers(body);
    if (!headers) return 'NO_HEADERS';
    try {
      const response = await got.post(url, {
        body,
        headers: { 'content-type': 'application/json', ...headers },
        timeout: { request: ATTEMPT_TIMEOUT_MS },
        retry: { limit: 0 },
        throwHttpErrors: false,
        followRedirect: false,
        signal,
      });
      delivery.onAnswer?.(response.statusCode, response.body);
      return response.statusCode;
    } catch (error) {
      return (error as { code?: string }).code ?? 'ERROR';
    }
  }

  async function deliver(url: string, body: string, delivery: Delivery, log: Logger, seq: number): Promise<void> {
    for (let n = 0; n <= RETRY_DELAYS_MS.length; n++) {
      if (n > 0) await timers.sleep(RETRY_DELAYS_MS[n - 1]);
      const result = await attempt(url, body, delivery);
      if (n === 0) {
        const earlier = held.filter((h) => h.seq < seq);
        held = held.filter((h) => h.seq >= seq);
        for (const h of earlier) h.release();
      }
      if (typeof result === 'number' && result >= 200 && result < 300) {
        log.info({ attempt: n + 1, status: result }, 'callback delivered');
        return;
      }
      log.warn({ attempt: n + 1, result }, 'callback attempt failed');
    }
    log.error('callback given up after all attempts');
  }

  /** Queues a callback; `override` is a fault given in the X-Sim-Fault header of the request that caused it. */
  function send(url: string, payload: CallbackPayload, override: Fault | null = null): void {
    const eventId = `evt_${randomUUID()}`;
    const body = JSON.stringify({ event_id: eventId, ...payload });
    sendAs(url, body, { headers: (signed) => signedHeaders(secret, signed), about: { event_id: eventId, type: payload.type, reference: payload.reference } }, override);
  }

  /**
   * Queues a callback in a vendor dialect's own body and headers (made per attempt, so a
   * signature can carry a fresh timestamp), with the same retries and callback faults.
   */
  function sendAs(url: string, body: string, delivery: Delivery, override: Fault | null = null): void {
    const seq = ++sequence;
    const log = logger.child(delivery.about);
    const fault = override ?? (delivery.takesFaults === false ? null : faults.take('callback'));
    if (fault) log.info({ fault: fault.mode }, 'fault injected on callback');
    const go = () => void deliver(url, body, delivery, log, seq);
    switch (fault?.mode) {
      case 'drop_callback':
        return;
      case 'duplicate_callback':
        void deliver(url, body, delivery, log, seq).then(() => deliver(url, body, delivery, log, seq));
        return;
      case 'latency':
        timers.after(fault.latencyMs ?? 1000, go);
        return;
      case 'out_of_order_callback': {
        let released = false;
        const release = () => {
          if (released) return;
          released = true;
          cancel();
          held = held.filter((h) => h.release !== release);
          go();
        };
        const cancel = timers.after(fault.latencyMs ?? OUT_OF_ORDER_MAX_HOLD_MS, release);
        held.push({ seq, release });
        return;
      }
      default:
        go();
    }
  }

  return { send, sendAs };
}

export type CallbackSender = ReturnType<typeof createCallbackSender>;
