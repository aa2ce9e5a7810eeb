// Team test helpers: users created through the API with the merchant's key, keys issued with
// the ops CLI exactly as an operator issues them.
import { call, type TestResponse } from './http.ts';
import { ops } from './processes.ts';
import type { Stack } from './stack.ts';

export type Role = 'owner' | 'finance' | 'ops' | 'viewer';

export interface TeamUser {
  id: string;
  full_name: string;
  email: string;
  phone_number: string | null;
  role: Role;
  created_at: string;
}

let seq = 0;

export function addUser(stack: Stack, apiKey: string, body: Record<string, unknown>): Promise<TestResponse> {
  return call(stack.api.url, { path: '/v1/my/users', headers: { 'x-api-key': apiKey }, body });
}

/** A new user of the merchant whose key is given; throws unless it was created. */
export async function makeUser(stack: Stack, apiKey: string, role: Role, extra: Record<string, unknown> = {}): Promise<TeamUser> {
  const n = ++seq;
  const res = await addUser(stack, apiKey, { full_name: `User ${n}`, email: `user${n}.${process.pid}@example.test`, role, ...extra });
  if (res.status !== 201) throw new Error(`POST /v1/my/users: ${res.status} ${res.text}`);
  return res.json.data;
}

/** `user:issue-key --user ID --json` through the ops CLI; throws unless it printed a key. */
export async function issueKey(stack: Stack, userId: string): Promise<{ key_id: string; api_key: string; role: Role; merchant_id: string; user_id: string }> {
  const out = await ops(stack.env, 'user:issue-key', '--user', userId, '--json');
  if (out.code !== 0) throw new Error(`user:issue-key: ${out.code} ${out.stdout} ${out.stderr}`);
  return JSON.parse(out.stdout);
}

export function setRole(stack: Stack, apiKey: string, userId: string, role: unknown): Promise<TestResponse> {
  return call(stack.api.url, { method: 'PATCH', path: `/v1/my/users/${userId}/role`, headers: { 'x-api-key': apiKey }, body: { role } });
}

export function removeUser(stack: Stack, apiKey: string, userId: string): Promise<TestResponse> {
  return call(stack.api.url, { method: 'DELETE', path: `/v1/my/users/${userId}/role`, headers: { 'x-api-key': apiKey } });
}

export function listUsers(stack: Stack, apiKey: string): Promise<TestResponse> {
  return call(stack.api.url, { path: '/v1/my/users', headers: { 'x-api-key': apiKey } });
}
