// The typed client as a merchant gets it: docs/client packed with npm (the tarball `npm publish`
// would upload), installed with npm into a scratch project of its own (offline: its one
// dependency, openapi-fetch, is packed from this repository's node_modules), then
// - plain JavaScript run by the machine's own Node (no TypeScript, no loader; 20 here, below the
//   22.18 that running TypeScript needs) creates a signed order, reads it, gets a typed error and
//   signs a legacy call, against a running Kasir;
// - a TypeScript file of the scratch project type-checks against the package's .d.ts with plain
//   NodeNext settings (no allowImportingTsExtensions) and no @types/node, and a wrong path or
//   field fails the check.
// The package's version is Kasir's own; its dist/ is built at pack time (prepack), so the
// repository holds one copy of the generated schema.
import { execFile } from 'node:child_process';
import { createHmac, generateKeyPairSync, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { setLegacyPublicKey } from '../../db/merchants.ts';
import { ROOT } from '../../scripts/lib/local.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { startStack } from '../helpers/stack.ts';

const exec = promisify(execFile);
const stack = await startStack(t, { groups: ['vendor'] });
const scratch = await mkdtemp(join(tmpdir(), 'kasir-client-'));
t.teardown(() => rm(scratch, { recursive: true, force: true }));

/** The machine's own Node, as a merchant's project would run it (this process runs Node 24). */
const systemNode = ['/usr/bin/node', '/usr/local/bin/node'].find((p) => existsSync(p)) ?? process.execPath;

const pack = async (dir: string) => {
  const { stdout } = await exec('npm', ['pack', dir, '--pack-destination', join(scratch, 'tarballs'), '--json'], { cwd: ROOT });
  return join(scratch, 'tarballs', (JSON.parse(stdout) as { filename: string }[])[0].filename);
};

t.test('the package is what npm pack makes of docs/client, versioned as Kasir', async (t) => {
  await exec('mkdir', ['-p', join(scratch, 'tarballs'), join(scratch, 'project')]);
  const kasir = JSON.parse(await readFile(`${ROOT}package.json`, 'utf8')) as { version: string };
  const manifest = JSON.parse(await readFile(`${ROOT}docs/client/package.json`, 'utf8')) as { name: string; version: string; engines: { node: string } };
  t.equal(manifest.version, kasir.version, 'the client\'s version is the server\'s');
  t.equal(manifest.engines.node, '>=18');
  const { stdout } = await exec('npm', ['pack', './docs/client', '--dry-run', '--json'], { cwd: ROOT });
  const files = (JSON.parse(stdout) as { files: { path: string }[] }[])[0].files.map((f) => f.path).sort();
  t.same(files, ['dist/index.d.ts', 'dist/index.js', 'dist/schema.d.ts', 'package.json'], 'built JavaScript and its types, no TypeScript source');
  const { stdout: tracked } = await exec('git', ['ls-files', 'docs/client'], { cwd: ROOT });
  t.same(tracked.trim().split('\n').sort(), ['docs/client/index.ts', 'docs/client/package.json', 'docs/client/schema.d.ts'], 'the repository holds no built copy: prepack builds dist/');
  t.equal(
    await readFile(`${ROOT}docs/client/dist/schema.d.ts`, 'utf8'), await readFile(`${ROOT}docs/client/schema.d.ts`, 'utf8'),
    'the packed types are the committed schema',
  );
  t.notMatch(await readFile(`${ROOT}docs/client/dist/index.d.ts`, 'utf8'), /from 'node:|types="node"|\bBuffer\b|NodeJS\./, 'the types reference nothing of @types/node');
});

t.test('installed from its tarball, it runs in plain JavaScript on the machine\'s Node and type-checks', async (t) => {
  const project = join(scratch, 'project');
  const tarballs = [await pack('./docs/client'), await pack('./node_modules/openapi-fetch'), await pack('./node_modules/openapi-typescript-helpers')];
  await writeFile(join(project, 'package.json'), JSON.stringify({ name: 'merchant-shop', version: '1.0.0', private: true, type: 'module' }));
  await exec('npm', ['install', '--offline', '--no-audit', '--no-fund', ...tarballs], { cwd: project });
  t.ok((await readdir(join(project, 'node_modules'))).includes('kasir-client'), 'installed');

  const secret = `whsec_${randomBytes(16).toString('hex')}`;
  const merchant = await makeMerchant(stack.api.ctx, { webhookSecret: secret });
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  await setLegacyPublicKey(stack.api.ctx.pool, merchant.merchant_id, publicKey.export({ type: 'spki', format: 'pem' }).toString());

  await writeFile(join(project, 'shop.js'), `
import { createKasirClient, orderSignature, signedLegacyCall } from 'kasir-client';
const { KASIR_URL: baseUrl, KASIR_API_KEY: apiKey, KASIR_WEBHOOK_SECRET: webhookSecret } = process.env;
const kasir = createKasirClient({ baseUrl, apiKey, webhookSecret });
const out = { node: process.version };
const created = await kasir.POST('/v1/orders', { body: { merchant_order_id: 'SHOP-' + Date.now(), amount: 150000, payment_method: 'QRIS' } });
out.created = { status: created.response.status, ref: created.data?.data.ref_code, error: created.error };
const read = await kasir.GET('/v1/orders/{ref_code}', { params: { path: { ref_code: out.created.ref } } });
out.read = { status: read.response.status, amount: read.data?.data.amount };
const invalid = await kasir.POST('/v1/orders', { body: { merchant_order_id: 'x', amount: '150000', payment_method: 'QRIS' } });
out.invalid = { status: invalid.response.status, code: invalid.error?.error.code, message: invalid.error?.error.message };
out.signature = orderSignature('k', '{}');
const legacy = { clientId: process.env.LEGACY_ID, clientSecret: process.env.LEGACY_SECRET, privateKey: process.env.LEGACY_KEY };
const balance = await kasir.POST('/api/disbursement/get-balance', signedLegacyCall(legacy, { clientId: legacy.clientId }));
out.balance = { status: balance.response.status, body: balance.data };
console.log(JSON.stringify(out));
`);
  const { stdout } = await exec(systemNode, ['shop.js'], {
    cwd: project,
    env: {
      ...process.env, KASIR_URL: stack.api.url, KASIR_API_KEY: merchant.api_key, KASIR_WEBHOOK_SECRET: secret,
      LEGACY_ID: merchant.legacy_client_id, LEGACY_SECRET: merchant.legacy_client_secret, LEGACY_KEY: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    },
  });
  const out = JSON.parse(stdout);
  t.comment(`ran on Node ${out.node}`);
  t.match(out.created, { status: 201, ref: /^ORD-/ }, 'a signed order is created (the merchant has a webhook secret)');
  t.same(out.read, { status: 200, amount: 150_000 });
  t.same(out.invalid, { status: 400, code: 'INVALID_BODY', message: 'amount: must be an integer number of Rupiah; got the string "150000"' });
  t.equal(out.signature, `sha256=${createHmac('sha256', 'k').update('{}').digest('hex')}`, 'orderSignature is exported');
  t.match(out.balance, { status: 200, body: { code: 200, message: 'Success', data: { clientId: merchant.legacy_client_id } } }, 'a signed legacy call is accepted');

  // The types, from the package's .d.ts, with settings a merchant's project would have.
  const tsc = `${ROOT}node_modules/typescript5/bin/tsc`;
  await writeFile(join(project, 'tsconfig.json'), JSON.stringify({
    // No @types/node: a merchant's project for the browser-free fetch of Node 18+ has lib.dom's Request.
    compilerOptions: { target: 'es2022', lib: ['es2022', 'dom'], module: 'nodenext', moduleResolution: 'nodenext', strict: true, noEmit: true, types: [] },
    include: ['*.ts'],
  }));
  await writeFile(join(project, 'shop.ts'), `
import { createKasirClient, type Schemas } from 'kasir-client';
const kasir = createKasirClient({ baseUrl: 'http://127.0.0.1:3000', apiKey: '0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef' });
const { data, error } = await kasir.POST('/v1/orders', { body: { merchant_order_id: 'INV-1', amount: 150000, payment_method: 'QRIS' } });
const order: Schemas['Order'] | undefined = data?.data;
const code: string | undefined = error?.error.code;
export { order, code };
`);
  const ok = await exec(process.execPath, [tsc, '-p', project, '--pretty', 'false']).then(() => ({ code: 0, out: '' }), (err: { code: number; stdout: string }) => ({ code: err.code, out: err.stdout }));
  t.equal(ok.code, 0, `a correct use type-checks: ${ok.out}`);
  await writeFile(join(project, 'wrong.ts'), `
import { createKasirClient } from 'kasir-client';
const kasir = createKasirClient({ baseUrl: 'http://127.0.0.1:3000' });
await kasir.GET('/v1/nope');
await kasir.POST('/v1/orders', { body: { merchant_order_id: 'INV-1', amount: 150000, payment_method: 'CARD' } });
`);
  const wrong = await exec(process.execPath, [tsc, '-p', project, '--pretty', 'false']).then(() => ({ code: 0, out: '' }), (err: { code: number; stdout: string }) => ({ code: err.code, out: err.stdout }));
  t.not(wrong.code, 0, 'a path and a value the API does not have fail the check');
  t.match(wrong.out, /wrong\.ts\(4,\d+\): error TS/, 'the unknown path');
  t.match(wrong.out, /wrong\.ts\(5,\d+\): error TS2322: Type '"CARD"'/, 'the payment method outside the enum');
  t.notMatch(wrong.out, /shop\.ts/, 'the correct file still checks');
});
