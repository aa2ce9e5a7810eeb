// The csv worker streams an export: its peak RSS (/proc/<pid>/status VmHWM) after a 400k-row
// export (~100 MB of CSV) is barely above its peak after a 20k-row one. The larger file is about
// twice the worker's 35-50 MB working plateau, so a build that held it, or a good share of its
// rows, would show; at 200k rows (49 MB) the plateau came within a few MB of the bound on a
// loaded machine. In a file of its own: loading and exporting 420k orders takes a minute or
// two on a busy machine, which the per-file timeout must not share with the other export tests.
import t from 'tap';
import { readFile } from 'node:fs/promises';
import { parse } from 'csv-parse/sync';
import { rawQuery, sql } from '../../db/pool.ts';
import { insertSyntheticOrders } from '../../scripts/lib/synthetic-orders.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { call, eventually } from '../helpers/http.ts';
import { startWorkerGroup } from '../helpers/processes.ts';
import { startStack } from '../helpers/stack.ts';

type M = Awaited<ReturnType<typeof makeMerchant>>;

const stack = await startStack(t, { groups: [] });
const pool = stack.api.ctx.pool;
const get = (m: M, path: string) => call(stack.api.url, { path, headers: { 'x-api-key': m.api_key } });

/** Requests an orders export, waits until it is COMPLETED and downloads it, unparsed. */
async function exportOrders(m: M) {
  const res = await call(stack.api.url, { path: '/v1/reports/export', headers: { 'x-api-key': m.api_key }, body: { type: 'orders' } });
  if (res.status !== 201) throw new Error(`export: ${res.status} ${res.text}`);
  const record = await eventually(async () => {
    const found = (await get(m, '/v1/reports/exports?limit=100')).json.data.find((e: { id: string }) => e.id === res.json.data.id);
    return found?.status === 'COMPLETED' ? found : undefined;
  }, 'the export to complete', 90_000);
  const file = await get(m, `/v1/reports/exports/${record.id}/download`);
  if (file.status !== 200) throw new Error(`download: ${file.status} ${file.text}`);
  return { record, raw: file.raw };
}

/** Rows of a CSV whose fields hold no line break (the synthetic orders'), counted by lines. */
function lineCount(raw: Buffer) {
  let lines = 0;
  for (let i = raw.indexOf(10); i >= 0; i = raw.indexOf(10, i + 1)) lines++;
  return lines;
}

t.test('streaming: the worker\'s peak memory does not grow with the rows', async (t) => {
  const small = await makeMerchant(stack.api.ctx);
  const large = await makeMerchant(stack.api.ctx);
  const run = (text: string, values: unknown[]) => pool.query(rawQuery(text, values));
  await insertSyntheticOrders(run, small.merchant_id, 20_000);
  await insertSyntheticOrders(run, large.merchant_id, 400_000);
  await pool.query(sql.unsafe`analyze orders`);
  const csv = await startWorkerGroup(t, 'csv', stack.env);
  const peak = async () => Number(/VmHWM:\s+(\d+) kB/.exec(await readFile(`/proc/${csv.child.pid}/status`, 'utf8'))![1]) / 1024;
  const idle = await peak();

  const a = await exportOrders(small);
  const afterSmall = await peak();
  const b = await exportOrders(large);
  const afterLarge = await peak();
  await csv.stop();

  t.equal(a.record.row_count, 20_000);
  t.equal(b.record.row_count, 400_000);
  t.equal(lineCount(b.raw), 400_001, 'every row downloaded (and the header), streamed from its chunks');
  const rowsOfSmall = parse(a.raw) as string[][];
  const last = parse(b.raw.subarray(b.raw.lastIndexOf(10, b.raw.length - 2) + 1)) as string[][];
  t.equal(last.length, 1);
  t.equal(last[0].length, rowsOfSmall[0].length, 'the last row is whole');
  t.match(last[0][1], /^ORD-/);
  t.ok(rowsOfSmall.slice(1).every((r) => r[15] === '0' && r[16] === '' && r[17] === ''),
    'orders without a payment transfer (synthetic rows, as an order never paid) have no MDR or net: empty cells');
  const mb = (n: number) => `${n.toFixed(0)} MB`;
  const fileMb = b.raw.length / 1e6;
  t.comment(`csv worker VmHWM: idle ${mb(idle)}, after 20k rows ${mb(afterSmall)}, after 400k rows ${mb(afterLarge)}; files ${mb(a.raw.length / 1e6)} and ${mb(fileMb)}`);
  // A build that held the file, or any share of the rows, would grow by the file's size or a
  // good part of it; a streaming one grows only by what the garbage collector lets pile up
  // between collections, which varies with the machine's load (25 MB was seen under a full CI).
  t.ok(afterLarge - afterSmall < fileMb / 3, `20x the rows (${mb(fileMb)} of CSV) raised the peak by ${mb(afterLarge - afterSmall)} (< a third of the file)`);
  t.ok(afterLarge - idle < fileMb, `the peak stays below the file's size above idle`);
});
