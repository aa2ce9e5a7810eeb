// A small HTTP client for tests, on node:http so every header (Host included) and the raw
// bytes of both directions are under the test's control.
import { request as httpRequest, type IncomingMessage } from 'node:http';

export interface TestResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  raw: Buffer;
  text: string;
  json: any;
}

export interface TestRequest {
  method?: string;
  path: string;
  headers?: Record<string, string>;
  /** An object is sent as JSON; a string or Buffer is sent byte for byte. */
  body?: unknown;
}

export async function call(baseUrl: string, req: TestRequest): Promise<TestResponse> {
  const url = new URL(req.path, baseUrl);
  const body =
    req.body === undefined
      ? undefined
      : Buffer.isBuffer(req.body)
        ? req.body
        : Buffer.from(typeof req.body === 'string' ? req.body : JSON.stringify(req.body));
  const headers: Record<string, string> = { ...(req.headers ?? {}) };
  if (body && !Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) headers['content-type'] = 'application/json';
  if (body) headers['content-length'] = String(body.length);
  return new Promise((resolve, reject) => {
    const r = httpRequest(url, { method: req.method ?? (body ? 'POST' : 'GET'), headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const raw = Buffer.concat(chunks);
        const text = raw.toString('utf8');
        let json: unknown;
        try {
          json = JSON.parse(text);
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, raw, text, json });
      });
    });
    r.on('error', reject);
    r.end(body);
  });
}

/** Polls `check` until it returns a value other than undefined, or fails after the deadline. */
export async function eventually<T>(check: () => Promise<T | undefined>, what: string, deadlineMs = 10_000): Promise<T> {
  const until = Date.now() + deadlineMs;
  let delay = 10;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, delay));
    delay = Math.min(delay * 2, 200);
  }
}

/** A received request's raw body, and the body parsed as JSON (null when it is empty or not JSON). */
export async function readRequest(req: IncomingMessage): Promise<{ body: Buffer; json: unknown }> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const body = Buffer.concat(chunks);
  let json: unknown = null;
  try {
    json = JSON.parse(body.toString('utf8'));
  } catch {}
  return { body, json };
}
