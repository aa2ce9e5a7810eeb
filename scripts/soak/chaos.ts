// The chaos of the soak's window: every few seconds (a random 3–8 s) one random Procfile
// process is SIGKILLed and restarted by the supervisor; at planned moments Postgres's
// postmaster is SIGKILLed and started again on the same data directory. One event at a time,
// so every one has a clear start and end in the report.
import { randomInt } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import type { SoakPostgres } from './postgres.ts';
import type { Supervisor } from './supervisor.ts';

const KILL_EVERY_MS: [number, number] = [3_000, 8_000];
/** A run of this length or more gets two Postgres crashes at least (about one per 30 s). */
const TWO_CRASHES_FROM_MS = 20_000;

/** When, from the window's start, Postgres is crashed: spread over the window, none at its edges. */
export function postgresCrashPlan(windowMs: number): number[] {
  const count = windowMs >= TWO_CRASHES_FROM_MS ? Math.max(2, Math.round(windowMs / 30_000)) : 1;
  const slot = windowMs / count;
  // Each crash somewhere in the middle half of its slot, so it never lands at the very end
  // of the window (the drain must start from a settled server) nor right after another one.
  return Array.from({ length: count }, (_, i) => Math.round(slot * i + slot * (0.25 + Math.random() * 0.5)));
}

export async function runChaos(windowMs: number, supervisor: Supervisor, postgres: SoakPostgres, log: (line: string) => void): Promise<void> {
  const started = Date.now();
  const end = started + windowMs;
  const crashes = postgresCrashPlan(windowMs).map((at) => started + at);
  let nextKill = started + randomInt(KILL_EVERY_MS[0], KILL_EVERY_MS[1]);
  const at = () => `${((Date.now() - started) / 1000).toFixed(1)}s`;

  for (;;) {
    const next = Math.min(nextKill, crashes[0] ?? Infinity);
    if (next >= end) break;
    await delay(Math.max(0, next - Date.now()));
    if (crashes.length && crashes[0] <= Date.now()) {
      crashes.shift();
      log(`${at()} postgres: SIGKILL to the postmaster`);
      const crash = await postgres.crashAndRestart();
      log(`${at()} postgres: accepting connections again after ${crash.readyAt - crash.killedAt} ms (${crash.attempts} start attempt${crash.attempts > 1 ? 's' : ''})`);
      continue;
    }
    // Only a process that is up: killing one still starting would test the start, not the crash.
    const candidates = supervisor.names.filter((name) => supervisor.isReady(name));
    if (candidates.length) {
      const name = candidates[randomInt(candidates.length)];
      supervisor.kill(name);
      log(`${at()} ${name}: SIGKILL`);
    }
    nextKill = Date.now() + randomInt(KILL_EVERY_MS[0], KILL_EVERY_MS[1]);
  }
  await delay(Math.max(0, end - Date.now()));
}

/**
 * The failover drill's chaos: no process is killed, only the primary, `count` times spread over
 * the window; each failover (promotion, first write, the dead node back as a standby) is waited
 * out before the next, so every kill again finds a synchronous standby to promote.
 */
export async function runFailovers(windowMs: number, count: number, postgres: SoakPostgres, log: (line: string) => void): Promise<void> {
  const started = Date.now();
  const at = () => `${((Date.now() - started) / 1000).toFixed(1)}s`;
  for (let i = 0; i < count; i++) {
    await delay(Math.max(0, started + Math.round((windowMs * (i + 0.5)) / (count + 0.5)) - Date.now()));
    log(`${at()} postgres: SIGKILL to the primary's Patroni, postmaster and backends`);
    const crash = await postgres.crashAndRestart();
    log(`${at()} postgres: a write went through after ${crash.readyAt - crash.killedAt} ms${describe(crash)}`);
  }
  await delay(Math.max(0, started + windowMs - Date.now()));
}

function describe(crash: object): string {
  const f = crash as { killed?: string; promoted?: string; promotedAt?: number; killedAt: number; rejoinedAt?: number | null };
  if (!f.promoted) return '';
  return ` (${f.killed} killed, ${f.promoted} promoted after ${f.promotedAt! - f.killedAt} ms, ${f.killed} back as a standby after ${f.rejoinedAt ? `${f.rejoinedAt - f.killedAt} ms` : 'never'})`;
}
