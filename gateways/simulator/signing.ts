// Request and callback signing, as the simulator's API documentation states it (docs/simulator.md):
// X-Sim-Signature = hex HMAC-SHA256(secret, X-Sim-Timestamp + "." + raw body), timestamp in
// unix seconds. Kasir's adapter implements the same rule independently, so a mistake on one side
// shows up as a failing test instead of cancelling out.
import { createHmac, createSecretKey, timingSafeEqual, type KeyObject } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

/** Signatures older or newer than this are refused, which bounds replays of captured requests. */
export const MAX_SKEW_SECONDS = 300;

// Each secret's key as a KeyObject, made once: given a string, createHmac prepares the key anew
// on every call (a seventh of the time a KeyObject takes; db/signatures.ts measured it, and keeps
// Kasir's keys the same way, out of the simulator's reach by the layering rules). A simulator
// knows a handful of secrets, its own and its merchants'.
const keys = new Map<string, KeyObject>();
function keyOf(secret: string): KeyObject {
  let key = keys.get(secret);
  if (!key) {
    if (keys.size >= 1_000) keys.clear();
    keys.set(secret, (key = createSecretKey(Buffer.from(secret, 'utf8'))));
  }
  return key;
}

export function sign(secret: string, timestamp: string, body: Buffer | string): string {
  return createHmac('sha256', keyOf(secret)).update(`${timestamp}.`).update(body).digest('hex');
}

export function signedHeaders(secret: string, body: string): Record<string, string> {
  const timestamp = String(Math.floor(Date.now() / 1000));
  return { 'x-sim-timestamp': timestamp, 'x-sim-signature': sign(secret, timestamp, body) };
}

/** Returns why the request is not authentic, or null when it is. */
export function verifySignature(secret: string, headers: IncomingHttpHeaders, body: Buffer): string | null {
  const timestamp = headers['x-sim-timestamp'];
  const signature = headers['x-sim-signature'];
  if (typeof timestamp !== 'string' || typeof signature !== 'string') return 'X-Sim-Timestamp and X-Sim-Signature headers are required';
  if (!/^\d{1,12}$/.test(timestamp)) return 'X-Sim-Timestamp must be unix seconds';
  if (Math.abs(Date.now() / 1000 - Number(timestamp)) > MAX_SKEW_SECONDS) return 'X-Sim-Timestamp is more than 5 minutes away from now';
  if (!/^[0-9a-fA-F]{64}$/.test(signature)) return 'X-Sim-Signature must be 64 hex characters';
  const expected = Buffer.from(sign(secret, timestamp, body), 'hex');
  if (!timingSafeEqual(expected, Buffer.from(signature, 'hex'))) return 'X-Sim-Signature does not match';
  return null;
}
