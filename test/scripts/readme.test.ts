// README.md's walkthrough ("First merchant, first order"), run as written: its shell blocks,
// taken from the README itself, in bash, against a running Kasir (API, simulator and workers as
// processes), with curl, openssl and the example receiver. Only what the README leaves to the
// reader's machine is set: PORT (the URL npm start prints), RECEIVER_PORT, and HOME (the keys
// directory). Each figure the README promises in a comment is checked in the output.
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { sql } from '../../db/pool.ts';
import { freePort } from '../../scripts/lib/cluster.ts';
import { ROOT } from '../../scripts/lib/local.ts';
import { eventually } from '../helpers/http.ts';
import { startStack } from '../helpers/stack.ts';

const readme = await readFile(`${ROOT}README.md`, 'utf8');
const section = readme.slice(readme.indexOf('## First merchant, first order'), readme.indexOf('## API reference'));
const blocks = [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]);

t.test('the walkthrough has its two blocks', async (t) => {
  t.equal(blocks.length, 2, 'the V1 walkthrough and the legacy payout');
  t.match(blocks[0], /merchant:create/);
  t.match(blocks[1], /get-balance/);
});

t.test('README walkthrough runs as written', async (t) => {
  const stack = await startStack(t, { groups: ['vendor', 'disbursement', 'webhook'] });
  const home = await mkdtemp(join(tmpdir(), 'kasir-readme-'));
  t.teardown(() => rm(home, { recursive: true, force: true }));
  const port = new URL(stack.api.url).port;
  const receiverPort = await freePort();
  // Stop at the first failing command; keep the shell (and the receiver it started) until killed.
  const script = `set -eo pipefail\n${blocks.join('\n')}\necho WALKTHROUGH-DONE\nwait\n`;
  const child = spawn('bash', ['-c', script], {
    cwd: ROOT,
    env: { ...process.env, ...stack.env, PORT: port, RECEIVER_PORT: String(receiverPort), HOME: home },
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString()));
  let exited: number | null = null;
  child.on('exit', (code) => (exited = code));
  t.teardown(() => {
    try {
      process.kill(-child.pid!, 'SIGTERM');
    } catch {}
  });

  await eventually(async () => (out.includes('WALKTHROUGH-DONE') ? true : exited !== null ? (() => {
    throw new Error(`the walkthrough stopped (exit ${exited}):\n${out}\n${err}`);
  })() : undefined), 'the walkthrough to finish', 90_000);

  t.match(out, /"ref_code":"ORD-\d+-[0-9A-Z]+"/, 'the order was created');
  t.match(out, /paid ORD-\d+-[0-9A-Z]+ at sim/, 'simulate:pay paid it');
  t.match(out, /"status":"PAID"/, 'the order reads PAID');
  t.match(out, /\{"success":true,"data":\{"merchant_id":"[0-9a-f-]+","balance":148950\}\}/, 'the balance is the amount minus the MDR (148950)');
  t.match(out, /"amount":50000,"reason":"one item returned","status":"PENDING"/, 'the refund is accepted');
  t.match(out, /"idempotency_key":"payout-1".*"total_debit":52500.*"status":"PENDING"/, 'the payout is accepted after the test float');
  t.match(out, /\{"code":200,"message":"Success","data":\{"clientId":"[^"]+","balance":"1046450\.00"\}\}/, 'the legacy balance is the README\'s');
  await eventually(async () => (/\{"id":"[^"]+","event":"order\.paid","sample":false,"body":\{"ref_code":"ORD-[^"]+",[^\n]*"status":"PAID"/.test(out) ? true : undefined),
    'the receiver to print the verified order.paid', 15_000);
  t.pass('the example receiver printed the order.paid it verified');
  // Issue 37: the README's payout is paid by the simulator, which confirms the holder's name it
  // was given (the same destination saved as a beneficiary is VERIFIED, not NAME_MISMATCH).
  await eventually(async () => (await stack.api.ctx.pool.maybeOneFirst(sql.unsafe`
    select status from disbursements where idempotency_key = 'payout-1'`)) === 'SUCCESS' ? true : undefined, 'the README payout to succeed', 30_000);
  t.pass('the README payout succeeded');
});
