// A CSV import racing the wallet's other writers, step by step. The import writes its rows for
// the balance as last committed (a forecast), then locks the wallet (WALLET, then
// DISBURSEMENTS_IN_FLIGHT, for update: lockMerchantAccounts) and decides again
// (db/disbursement-imports.ts). The test's own sessions take those same row locks through the
// same function, so the import waits at them while the wallet moves, and a session queued behind
// the import gets the lock exactly when the import gives it back (a replan) or commits: the
// balance that session reads under the lock tells which, and whether the import then waits
// behind it tells whether the import made another attempt.
//
// Postgres grants a row lock to its waiters in arrival order only while the row is not updated:
// when its holder updates it and commits, every waiter moves to the new row version and they
// race for it. So the wallet lock is held in two halves: the WALLET row by the session that
// moves the wallet, with the import alone behind it, and the DISBURSEMENTS_IN_FLIGHT row by a
// gate that keeps the import inside its lock, holding the moved WALLET row, until the next
// session has queued behind it. No sleeps: each step waits, with a deadline, for a state seen
// in pg_stat_activity. Real HTTP and Postgres; every test ends with the ledger audit.
import t, { type Test } from 'tap';
import { randomUUID } from 'node:crypto';
import { adjustWallet, lockMerchantAccounts, peekWallet, type AccountKind } from '../../db/ledger.ts';
import { createPool, sql, type Tx } from '../../db/pool.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { call, eventually } from '../helpers/http.ts';
import { bankPayout } from '../helpers/merchant-api.ts';
import { balanceOf, fundWallet, ledgerAudit } from '../helpers/money.ts';
import { startStack, type Stack } from '../helpers/stack.ts';

type M = Awaited<ReturnType<typeof makeMerchant>>;
type Payout = ReturnType<typeof bankPayout>;

/** A bank row costs its amount plus the default bank fee. */
const ROW = 10_000;
const COST = 12_500;

const HEADER = 'channel,bank_short_code,account_number,account_name,ewallet_provider,ewallet_phone,amount,notify_url';
const payroll = (rows: number): Payout[] => Array.from({ length: rows }, (_, i) => bankPayout(ROW, String(1_000_000_000 + i)));
const csv = (rows: Payout[]) =>
  [HEADER, ...rows.map((r) => `${r.channel},${r.bank_short_code},${r.account_number},${r.account_name},,,${r.amount},`)].join('\n') + '\n';

/** An upload whose answer is awaited later; `answered` says whether it has come yet. */
function startImport(stack: Stack, merchant: M, prefix: string, rows: Payout[]) {
  const form = new FormData();
  form.set('file', new Blob([csv(rows)], { type: 'text/csv' }), 'payroll.csv');
  form.set('idempotency_prefix', prefix);
  const state = { answered: false };
  const answer = fetch(`${stack.api.url}/v1/disbursements/import`, { method: 'POST', headers: { 'x-api-key': merchant.api_key }, body: form })
    .then(async (res) => ({ status: res.status, json: (await res.json()) as any }))
    .finally(() => (state.answered = true));
  return { state, answer };
}
type Importing = ReturnType<typeof startImport>;

/** An operator's adjustment (as `ops ledger:adjust` posts it), in the caller's transaction. */
const adjust = (merchant: M, amount: number) => (tx: Tx) =>
  adjustWallet(tx, { merchantId: merchant.merchant_id, adjustmentId: randomUUID(), amount, reason: `race ${amount}` });

interface Holder {
  pid: number;
  /** Resolves once the rows are locked, with the wallet's balance then (under the lock, for a WALLET holder). */
  granted: Promise<{ tx: Tx; balance: number }>;
  commit(): Promise<void>;
}

/**
 * The test's own sessions on the merchant's wallet lock, on a pool of their own (the API's is
 * the import's), and the view of who waits behind whom.
 */
async function walletLock(t: Test, stack: Stack, merchant: M) {
  const pool = await createPool(stack.env.DATABASE_URL, { size: 4, name: 'wallet-lock-holders' });
  const open = new Set<() => void>();
  // A test that fails half-way still ends its sessions, so the import and the teardown go on.
  const releaseAll = () => {
    for (const release of open) release();
    open.clear();
  };
  t.teardown(async () => {
    releaseAll();
    await pool.end();
  });

  /** Opens a transaction that locks the wallet's rows of `kinds` and keeps them until commit(). */
  async function hold(kinds: AccountKind[]): Promise<Holder> {
    const session = Promise.withResolvers<number>();
    const granted = Promise.withResolvers<{ tx: Tx; balance: number }>();
    const release = Promise.withResolvers<void>();
    open.add(release.resolve);
    const done = pool.transaction(async (tx) => {
      session.resolve((await tx.oneFirst(sql.unsafe`select pg_backend_pid() as pid`)) as number);
      await lockMerchantAccounts(tx, merchant.merchant_id, kinds);
      granted.resolve({ tx, balance: (await peekWallet(tx, merchant.merchant_id)).balance });
      await release.promise;
    });
    done.catch((err) => {
      session.reject(err);
      granted.reject(err);
    });
    granted.promise.catch(() => undefined);
    return {
      pid: await session.promise,
      granted: granted.promise,
      async commit() {
        open.delete(release.resolve);
        release.resolve();
        await done;
      },
    };
  }

  /** Sessions waiting, in the wallet lock's statement, for a lock `pid` holds or is ahead for. */
  async function waitingBehind(pid: number): Promise<number[]> {
    return (await pool.anyFirst(sql.unsafe`
      select pid from pg_stat_activity
      where datname = current_database() and wait_event_type = 'Lock'
        and query ilike '%from ledger_accounts%for update%' and ${pid} = any(pg_blocking_pids(pid))`)) as number[];
  }

  /** The one session that comes to wait behind `pid` (the import, or a single create). */
  const arrivesBehind = (pid: number, what: string) =>
    eventually(async () => {
      const waiting = await waitingBehind(pid);
      if (waiting.length > 1) throw new Error(`${what}: ${waiting.length} sessions wait behind ${pid}`);
      return waiting[0];
    }, `${what} to wait for the wallet lock`);

  /** Until `waiter` waits behind `pid` (true), or the import has answered instead (false). */
  const waits = (waiter: number, pid: number, importing: Importing, what: string) =>
    eventually(async () => {
      if ((await waitingBehind(pid)).includes(waiter)) return true;
      return importing.state.answered ? false : undefined;
    }, what);

  return { hold, arrivesBehind, waits, releaseAll };
}

/**
 * Uploads `rows` while the test holds the wallet lock, so the import writes its forecast and
 * then waits at the lock, and drives its attempts. At each, the session holding the WALLET row
 * applies the next of `moves` (null: none) and commits; the import takes the moved WALLET row
 * and waits for the gate's DISBURSEMENTS_IN_FLIGHT row; a new session queues for the WALLET row
 * behind the import; the gate commits, and the import decides. If it gives the lock back, the
 * queued session gets the WALLET row with the import uncommitted, and the import, back for its
 * next attempt, waits behind it; if the import commits, the queued session gets the row after
 * its debit. Returns, per attempt, the balance the queued session found under the lock (fewer
 * than `moves` if the import stopped coming back), and the import's answer.
 */
async function interleave(t: Test, stack: Stack, merchant: M, prefix: string, rows: Payout[], moves: (((tx: Tx) => Promise<unknown>) | null)[]) {
  const lock = await walletLock(t, stack, merchant);
  let mover = await lock.hold(['WALLET']);
  let gate = await lock.hold(['DISBURSEMENTS_IN_FLIGHT']);
  await Promise.all([mover.granted, gate.granted]);
  const importing = startImport(stack, merchant, prefix, rows);
  const seen: number[] = [];
  try {
    const importPid = await lock.arrivesBehind(mover.pid, 'the import');
    for (const [n, move] of moves.entries()) {
      const attempt = `attempt ${n + 1}`;
      if (n > 0) {
        if (!(await lock.waits(importPid, mover.pid, importing, `${attempt}: the import back at the lock`))) break;
        // The import waits for the WALLET row: it holds no row of the wallet, so the gate's is free.
        gate = await lock.hold(['DISBURSEMENTS_IN_FLIGHT']);
        await gate.granted;
      }
      if (move) await move((await mover.granted).tx);
      await mover.commit();
      if (!(await lock.waits(importPid, gate.pid, importing, `${attempt}: the import holding the WALLET row, at the gate`))) {
        throw new Error(`${attempt}: the import answered without waiting at the gate`);
      }
      const next = await lock.hold(['WALLET']);
      await lock.waits(next.pid, importPid, importing, `${attempt}: a session queued behind the import`);
      await gate.commit();
      seen.push((await next.granted).balance);
      mover = next;
    }
    await mover.commit();
    return { seen, answer: await importing.answer };
  } finally {
    lock.releaseAll();
    await importing.answer.catch(() => undefined);
  }
}

/** What the merchant has: its disbursements, execute jobs, import debits, today's running total. */
async function written(stack: Stack, merchant: M) {
  const pool = stack.api.ctx.pool;
  return (await pool.one(sql.unsafe`
    select (select count(*)::int from disbursements where merchant_id = ${merchant.merchant_id}) as disbursements,
           (select count(*)::int from pgboss.job where name = 'disbursement-execute') as jobs,
           (select count(*)::int from ledger_transfers where merchant_id = ${merchant.merchant_id} and kind = 'DISBURSEMENT_IMPORT') as import_debits,
           (select coalesce(sum(total), 0)::int from disbursement_daily_totals
              where merchant_id = ${merchant.merchant_id} and wib_date = (now() at time zone 'Asia/Jakarta')::date) as today`)) as {
    disbursements: number; jobs: number; import_debits: number; today: number;
  };
}

const get = (stack: Stack, merchant: M, path: string) => call(stack.api.url, { path, headers: { 'x-api-key': merchant.api_key } });
const codes = (results: any[]) => results.map((r) => r.error?.code ?? r.status);
const refusedRows = (results: any[]) =>
  results.filter((r) => r.status === 'REFUSED').map((r) => ({ row: r.row, idempotency_key: r.idempotency_key, error: r.error }));

t.test('from the third attempt a smaller decision is applied under the lock, and the import commits', async (t) => {
  const stack = await startStack(t, { groups: [] });
  const merchant = await makeMerchant(stack.api.ctx);
  await fundWallet(stack.api.ctx.pool, merchant, 8 * COST);
  const debit = adjust(merchant, -COST);
  const { seen, answer } = await interleave(t, stack, merchant, 'shrink', payroll(8), [debit, debit, debit]);

  t.same(seen.slice(0, 2), [7 * COST, 6 * COST],
    'attempts 1 and 2 (the free replans): the decision shrank, and the import gave the lock back with nothing debited');
  t.same(seen.slice(2), [0],
    'attempt 3: the smaller decision was applied under the lock; the import committed its debit before letting the lock go, and made no fourth attempt');

  t.equal(answer.status, 200);
  const { data } = answer.json;
  t.match(data, { rows: 8, accepted: 5, already_imported: 0, refused: 3, queued: 5, total_debit: 5 * COST });
  t.same(codes(data.results), [...Array(5).fill('ACCEPTED'), 'INSUFFICIENT_BALANCE', 'INSUFFICIENT_BALANCE', 'INSUFFICIENT_BALANCE'],
    'rows paid top-down until the balance left under the lock ran out');
  t.match(data.results[5], { error: { message: /balance left after the rows above \(0\) is below this row's amount plus fee \(12500\)/ } },
    'the stop names the balance left under the lock');
  t.match(data.results[7], { error: { message: /row 6 was the first the balance could not cover/ } }, 'the rows after it name the stop');
  t.equal(await balanceOf(stack, merchant), 0, 'never more than the balance under the lock');
  t.same(await written(stack, merchant), { disbursements: 5, jobs: 5, import_debits: 1, today: 5 * ROW },
    'the rows deleted under the lock took their jobs with them; the running total counts the accepted rows');
  const record = await get(stack, merchant, `/v1/disbursements/imports/${data.import_id}`);
  t.match(record.json.data, { accepted: 5, refused: 3, total_debit: 5 * COST });
  t.same(record.json.data.refused_rows, refusedRows(data.results), 'the record keeps the refusals rewritten under the lock');
  await ledgerAudit(t, stack.env);
});

t.test('a larger decision goes back outside the lock even after the free replans', async (t) => {
  const stack = await startStack(t, { groups: [] });
  const merchant = await makeMerchant(stack.api.ctx);
  await fundWallet(stack.api.ctx.pool, merchant, 8 * COST);
  const debit = adjust(merchant, -COST);
  const { seen, answer } = await interleave(t, stack, merchant, 'grow', payroll(8), [debit, debit, adjust(merchant, 2 * COST), null]);

  t.same(seen.slice(0, 2), [7 * COST, 6 * COST], 'attempts 1 and 2 replanned, giving the lock back');
  t.same(seen.slice(2, 3), [8 * COST], 'attempt 3: the larger decision gave the lock back too, with nothing debited');
  t.same(seen.slice(3), [0], 'attempt 4: the import came back, its decision stood, and it committed');

  t.equal(answer.status, 200);
  t.match(answer.json.data, { rows: 8, accepted: 8, refused: 0, queued: 8, total_debit: 8 * COST });
  t.same(codes(answer.json.data.results), Array(8).fill('ACCEPTED'), 'the rows written outside the lock for the larger decision');
  t.equal(await balanceOf(stack, merchant), 0);
  t.same(await written(stack, merchant), { disbursements: 8, jobs: 8, import_debits: 1, today: 8 * ROW });
  await ledgerAudit(t, stack.env);
});

t.test('a key a single create took while the import waited for the lock answers its row from that disbursement', async (t) => {
  const stack = await startStack(t, { groups: [] });
  const merchant = await makeMerchant(stack.api.ctx);
  await fundWallet(stack.api.ctx.pool, merchant, 4 * COST);
  const rows = payroll(5);
  const lock = await walletLock(t, stack, merchant);
  // Held only: a holder that updated the WALLET row would set its two waiters racing.
  const holder = await lock.hold(['WALLET', 'DISBURSEMENTS_IN_FLIGHT']);
  await holder.granted;

  // The merchant pays row 5 on its own, under the import's key for it: the create writes its
  // row, then waits for the wallet lock. The import, uploaded next, reads the keys (row 5's is
  // not committed), writes rows 1-4 (the balance covers four, so row 5 is the stop and never
  // written) and queues for the lock behind the create, which commits its debit first.
  const single = call(stack.api.url, { path: '/v1/disbursements', headers: { 'x-api-key': merchant.api_key }, body: { idempotency_key: 'split-5', ...rows[4] } });
  let importing: Importing | null = null;
  try {
    const singlePid = await lock.arrivesBehind(holder.pid, 'the single create');
    importing = startImport(stack, merchant, 'split', rows);
    await lock.arrivesBehind(singlePid, 'the import');
    await holder.commit();
  } finally {
    lock.releaseAll();
  }
  const made = await single;
  t.equal(made.status, 201, 'the single create committed');
  const answer = await importing!.answer;

  t.equal(answer.status, 200);
  const { data } = answer.json;
  t.match(data, { rows: 5, accepted: 3, already_imported: 1, refused: 1, queued: 3, total_debit: 3 * COST });
  t.same(data.results[4], {
    row: 5, idempotency_key: 'split-5', status: 'ALREADY_IMPORTED', disbursement_id: made.json.data.id, ref_code: made.json.data.ref_code,
    disbursement_status: 'PENDING', total_debit: COST,
  }, 'row 5 is answered from the disbursement that holds its key, not refused with the rows the balance could not cover');
  t.same(codes(data.results), ['ACCEPTED', 'ACCEPTED', 'ACCEPTED', 'INSUFFICIENT_BALANCE', 'ALREADY_IMPORTED'],
    'the rest decided on the balance the single create left');
  const keyed = await get(stack, merchant, '/v1/disbursements?idempotency_key=split-5');
  t.same(keyed.json.data.map((d: any) => [d.id, d.source]), [[made.json.data.id, 'API']], 'one disbursement under the key: the single create\'s');
  t.equal(await balanceOf(stack, merchant), 0);
  t.same(await written(stack, merchant), { disbursements: 4, jobs: 4, import_debits: 1, today: 4 * ROW });
  const record = await get(stack, merchant, `/v1/disbursements/imports/${data.import_id}`);
  t.match(record.json.data, { accepted: 3, already_imported: 1, refused: 1, total_debit: 3 * COST });
  t.same(record.json.data.refused_rows, refusedRows(data.results), 'the record refuses row 4 only');
  await ledgerAudit(t, stack.env);
});
