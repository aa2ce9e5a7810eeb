// Test helpers around the simulator gateway: start it as a child process (the real entry) or
// in-process, receive its callbacks, drive it over HTTP as Kasir and as a payer would.
import { spawn } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { readRequest } from './http.ts';
import { startSimulator, type RunningSimulator } from '../../gateways/simulator/app.ts';
import { loadSimulatorConfig } from '../../gateways/simulator/config.ts';
import type { VendorRecord } from '../../gateways/gateway.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const NODE = `${ROOT}node_modules/.bin/node`;
const TEST_SECRET = 'test-simulator-secret';

export interface SimulatorProcess {
  url: string;
  code: string;
  secret: string;
  /** Every line the process wrote to stdout so far (the listening line, and nothing else). */
  stdoutLines: string[];
  vendor(): VendorRecord;
  /** SIGTERM, then SIGKILL after 5 s; resolves with how the process ended. */
  stop(): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGKILL at once (a crash: nothing is flushed or closed); resolves once the process is gone. */
  kill(): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * Spawns `node gateways/simulator/server.ts` on an ephemeral port with `env` on top of this
 * process's environment (LOG_LEVEL: this process's, else warn), and resolves once it prints its URL.
 * With SIMULATOR_STATE_FILE in `env` its state outlives the process (kill() then start again).
 */
export async function startSimulatorProcess(env: Record<string, string> = {}): Promise<SimulatorProcess> {
  const fullEnv: Record<string, string | undefined> = { ...process.env, LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn', SIMULATOR_SECRET: TEST_SECRET, ...env, SIMULATOR_PORT: env.SIMULATOR_PORT ?? '0' };
  const child = spawn(NODE, ['gateways/simulator/server.ts'], { cwd: ROOT, env: fullEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = once(child, 'exit').then(([code, signal]) => ({ code: code as number | null, signal: signal as NodeJS.Signals | null }));
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-4000);
  });
  const stdoutLines: string[] = [];
  const url = await new Promise<string>((resolve, reject) => {
    const deadline = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`simulator did not start within 10 s; stderr:\n${stderr}`));
    }, 10_000);
    createInterface({ input: child.stdout }).on('line', (line) => {
      stdoutLines.push(line);
      const match = /^simulator listening on (http:\/\/\S+)$/.exec(line);
      if (match) {
        clearTimeout(deadline);
        resolve(match[1]);
      }
    });
    void exited.then(({ code, signal }) => {
      clearTimeout(deadline);
      reject(new Error(`simulator exited (${code ?? signal}) before listening; stderr:\n${stderr}`));
    });
  });
  const code = fullEnv.SIMULATOR_CODE ?? 'sim';
  const secret = fullEnv.SIMULATOR_SECRET!;
  return {
    url,
    code,
    secret,
    stdoutLines,
    vendor: () => simulatorVendor(url, secret, code),
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const kill = setTimeout(() => child.kill('SIGKILL'), 5000);
        const result = await exited;
        clearTimeout(kill);
        return result;
      }
      return exited;
    },
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      return exited;
    },
  };
}

export type InProcessSimulator = RunningSimulator & { code: string; secret: string; vendor(): VendorRecord };

/** The simulator app in this process; `env` uses the same variables as the process entry. */
export async function startSimulatorInProcess(env: Record<string, string> = {}): Promise<InProcessSimulator> {
  const config = loadSimulatorConfig({ SIMULATOR_SECRET: TEST_SECRET, ...env, SIMULATOR_PORT: env.SIMULATOR_PORT ?? '0' });
  const logger = pino({ level: process.env.LOG_LEVEL ?? 'silent' }, pino.destination(2));
  const simulator = await startSimulator({ ...config, logger });
  return { ...simulator, code: config.code, secret: config.secret, vendor: () => simulatorVendor(simulator.url, config.secret, config.code) };
}

export function simulatorVendor(baseUrl: string, secret: string, code = 'sim'): VendorRecord {
  return { code, kind: 'simulator', baseUrl, credentials: { secret } };
}

/** A request signed as Kasir signs it, for tests that speak to the simulator directly. */
export async function simulatorRequest(
  baseUrl: string,
  secret: string,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: any }> {
  const raw = body === undefined ? '' : JSON.stringify(body);
  const timestamp = String(Math.floor(Date.now() / 1000));
  const signature = createHmac('sha256', secret).update(`${timestamp}.${raw}`).digest('hex');
  const response = await fetch(baseUrl + path, {
    method,
    body: body === undefined ? undefined : raw,
    headers: { 'content-type': 'application/json', 'x-sim-timestamp': timestamp, 'x-sim-signature': signature, ...headers },
  });
  return { status: response.status, body: await response.json() };
}

/** Unsigned, as the payer's phone; `headers` may carry X-Sim-Fault for the payment's callback. */
export async function simulatePay(baseUrl: string, body: object, headers: Record<string, string> = {}) {
  const response = await fetch(`${baseUrl}/simulate/pay`, { method: 'POST', body: JSON.stringify(body), headers });
  return { status: response.status, body: (await response.json()) as any };
}

/** Fault rules over loopback (no signature needed there). */
export async function setFaults(baseUrl: string, rules: object | object[]): Promise<void> {
  const response = await fetch(`${baseUrl}/admin/faults`, { method: 'POST', body: JSON.stringify(rules) });
  if (response.status !== 201) throw new Error(`setting faults failed: ${response.status} ${await response.text()}`);
}

export async function clearFaults(baseUrl: string): Promise<void> {
  await fetch(`${baseUrl}/admin/faults`, { method: 'DELETE' });
}

export interface ReceivedCallback {
  headers: IncomingHttpHeaders;
  body: Buffer;
  json: any;
}

export interface CallbackReceiver {
  url: string;
  received: ReceivedCallback[];
  /** Resolves with everything received once there are at least `count` callbacks. */
  waitFor(count: number, timeoutMs?: number): Promise<ReceivedCallback[]>;
  close(): Promise<void>;
}

/**
 * A stand-in for Kasir's callback endpoint. `status(n)` picks the answer to the n-th callback
 * (1-based), 200 by default, so tests can make the sender retry.
 */
export async function startCallbackReceiver(status: (n: number) => number = () => 200): Promise<CallbackReceiver> {
  const received: ReceivedCallback[] = [];
  let waiters: Array<{ count: number; resolve: () => void }> = [];
  const server = createServer((req, res) => {
    void readRequest(req).then(({ body, json }) => {
      received.push({ headers: req.headers, body, json });
      res.statusCode = status(received.length);
      res.end();
      const ready = waiters.filter((w) => received.length >= w.count);
      waiters = waiters.filter((w) => received.length < w.count);
      for (const w of ready) w.resolve();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/callbacks/sim`,
    received,
    waitFor(count, timeoutMs = 5000) {
      if (received.length >= count) return Promise.resolve([...received]);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`expected ${count} callbacks, got ${received.length} in ${timeoutMs} ms`)), timeoutMs);
        waiters.push({
          count,
          resolve: () => {
            clearTimeout(timer);
            resolve([...received]);
          },
        });
      });
    },
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}
