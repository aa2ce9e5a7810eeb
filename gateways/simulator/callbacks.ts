// Outgoing callbacks to Kasir, signed like Kasir's requests (docs/simulator.md).
//
// Delivery runs in the background with its own backoff (got's retry is off: a retry must be
// re-signed with a fresh timestamp). Each callback carries a unique event_id; a duplicate
// delivery, whether injected or a retry after a lost answer, reuses it so Kasir can dedupe.
// A callback is journaled as owed when queued (in the same step as the change it reports) and
// removed once delivered or given up, so a restart sends again what was still owed: at least
// once, with the same body. A dialect's channel (how its callbacks are signed) is registered by
// name, so a callback queued before a restart is signed the same way after it.
import { randomUUID } from 'node:crypto';
import got from 'got';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { Fault, Faults } from './faults.ts';
import type { Journal } from './journal.ts';
import { signedHeaders } from './signing.ts';
import type { Timers } from './timers.ts';

/**
 * Waits before attempts 2..7: about 112 s in all. Long enough to ride out a Kasir restart and a
 * database failover with Patroni's default ttl of 30 s (promotion in 30-40 s), which the old
 * 23 s did not (docs/deploy.md, High availability); the real vendors retry for hours.
 */
const RETRY_DELAYS_MS = [500, 2000, 5000, 15000, 30000, 60000];
const ATTEMPT_TIMEOUT_MS = 5000;
/** How long an out_of_order_callback waits for a later callback before going out anyway. */
const OUT_OF_ORDER_MAX_HOLD_MS = 5000;

export type CallbackPayload =
  | { type: 'qris.paid'; reference: string; id: string; amount: number; paid_at: string; rrn: string }
  | { type: 'disbursement.updated'; reference: string; id: string; status: 'SUCCESS' | 'FAILED'; failure_reason: string | null };

/** How one sender's callbacks go out: headers per attempt, and who hears the answers. */
export interface Channel {
  /** Headers for an attempt (a fresh signature each time); null skips the attempt (no token yet). */
  headers(url: string, body: string): Record<string, string> | null | Promise<Record<string, string> | null>;
  /** Hears every HTTP answer (a dialect's stats of what Kasir answered). */
  onAnswer?(status: number, body: string): void;
}

/** One callback to send, as journaled while owed. */
export interface Callback {
  /** The registered channel that signs it ('native' or a dialect). */
  channel: string;
  url: string;
  body: string;
  /** Log fields naming the callback. */
  about: Record<string, string>;
}

const owedSchema = z.object({ channel: z.string(), url: z.string(), body: z.string(), about: z.record(z.string(), z.string()) });

export function createCallbackSender(deps: { secret: string; logger: Logger; faults: Faults; timers: Timers; signal: AbortSignal; journal: Journal }) {
  const { secret, logger, faults, timers, signal, journal } = deps;
  const channels = new Map<string, Channel>([['native', { headers: (url, body) => signedHeaders(secret, body) }]]);
  /** Callbacks created so far; orders out_of_order holds against later callbacks. */
  let sequence = 0;
  /** out_of_order callbacks, each released by the first delivery attempt of a later one. */
  let held: Array<{ seq: number; release: () => void }> = [];

  async function attempt({ channel, url, body }: Callback): Promise<number | string> {
    const via = channels.get(channel);
    if (!via) return 'NO_CHANNEL';
    const headers = await via.headers(url, body);
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
      via.onAnswer?.(response.statusCode, response.body);
      return response.statusCode;
    } catch (error) {
      return (error as { code?: string }).code ?? 'ERROR';
    }
  }

  async function deliver(callback: Callback, log: Logger, seq: number): Promise<void> {
    for (let n = 0; n <= RETRY_DELAYS_MS.length; n++) {
      if (n > 0) await timers.sleep(RETRY_DELAYS_MS[n - 1]);
      const result = await attempt(callback);
      // Stopped mid-attempt: abandoned like a stopped sleep, so it stays owed for the next start.
      if (signal.aborted) return new Promise<void>(() => {});
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

  /** Queues a native callback; `override` is a fault given in the X-Sim-Fault header of the request that caused it. */
  function send(url: string, payload: CallbackPayload, override: Fault | null = null): void {
    const eventId = `evt_${randomUUID()}`;
    const body = JSON.stringify({ event_id: eventId, ...payload });
    sendAs({ channel: 'native', url, body, about: { event_id: eventId, type: payload.type, reference: payload.reference } }, override);
  }

  /**
   * Queues a callback of any channel, with the same retries and callback faults; `takesFaults`
   * false lets fault rules pass it by (only `override` applies).
   */
  function sendAs(callback: Callback, override: Fault | null = null, takesFaults = true): void {
    const seq = ++sequence;
    const log = logger.child(callback.about);
    const fault = override ?? (takesFaults ? faults.take('callback') : null);
    if (fault) log.info({ fault: fault.mode }, 'fault injected on callback');
    if (fault?.mode === 'drop_callback') return;
    const id = randomUUID();
    journal.put('callback', id, callback);
    const done = () => journal.remove('callback', id);
    const go = () => void deliver(callback, log, seq).then(done);
    switch (fault?.mode) {
      case 'duplicate_callback':
        void deliver(callback, log, seq)
          .then(() => deliver(callback, log, seq))
          .then(done);
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

  /** Sends again, once each and without faults, the callbacks still owed when the journal was last written. */
  function resume(): void {
    for (const [id, callback] of journal.loaded('callback', owedSchema)) {
      const log = logger.child(callback.about);
      log.info('callback owed before the restart: sending it again');
      void deliver(callback, log, ++sequence).then(() => journal.remove('callback', id));
    }
  }

  /** Registers how a dialect's callbacks are signed and heard, before resume(). */
  function channel(name: string, via: Channel): void {
    channels.set(name, via);
  }

  return { send, sendAs, resume, channel };
}

export type CallbackSender = ReturnType<typeof createCallbackSender>;
