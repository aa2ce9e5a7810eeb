// The project's benchmarks: `npm run bench -- <name> [flags]`, one module per bench under
// scripts/bench/. Each module parses its own flags, gets its own database (scripts/bench/
// database.ts) and prints its own report (plain text, or one JSON object with --json).
const benches: Record<string, { summary: string; load: () => Promise<{ run(args: string[]): Promise<void> }> }> = {
  queue: {
    summary:
      'pg-boss: ping pickup latency and burst drain rate through one real worker process\n' +
      '                [--pings 200] [--jobs 10000] [--rounds 2] [--stale-stats]',
    load: () => import('./bench/queue.ts'),
  },
  orders: {
    summary:
      'POST /v1/orders through the API, vendor worker and simulator processes, vs Express 5 + one INSERT\n' +
      '                [--connections 10,25,50] [--duration 15] [--warmup 3] [--pool 10] [--worker-pool 20] [--stats] [--orders-only]',
    load: () => import('./bench/orders.ts'),
  },
  disbursements: {
    summary:
      'POST /v1/disbursements through the API vs Express 5 + one INSERT; 1,000 concurrent on a wallet for 100\n' +
      '                [--connections 10,25,50] [--duration 15] [--warmup 3] [--pool 10] [--merchants 1] [--worker]\n' +
      '                [--worker-pool 20] [--race 1000] [--afford 100] [--race-only] [--stats]',
    load: () => import('./bench/disbursements.ts'),
  },
  webhooks: {
    summary:
      'order.expired webhooks of a burst through the scheduler and webhook worker to local receivers: deliveries/s, lag, a same-run\n' +
      '                ceiling, fairness beside a broken receiver, and the 100,000-order expiry burst\n' +
      '                [--burst 20000] [--fairness 8000] [--fast 8] [--slow hang|fail] [--expiry 100000] [--concurrency 100] [--stats]',
    load: () => import('./bench/webhooks.ts'),
  },
  settlements: {
    summary: 'one settlement build (and cancel) over one merchant\'s day of paid orders\n' + '                [--orders 100000] [--rounds 3]',
    load: () => import('./bench/settlements.ts'),
  },
  import: {
    summary:
      'POST /v1/disbursements/import of a 100,000-row CSV through the API, and GET /v1/balance latency during it\n' +
      '                [--rows 100000] [--connections 10] [--rate 200] [--baseline 5] [--pool 20]',
    load: () => import('./bench/import.ts'),
  },
  recon: {
    summary: 'one reconciliation run (and its rerun) of a day of orders and payouts at the simulator, read over HTTP\n' + '                [--orders 10000] [--payouts 2000]',
    load: () => import('./bench/recon.ts'),
  },
  history: {
    summary:
      'a synthetic year (one merchant of --orders in an installation ~20 % larger), then every merchant read over HTTP at\n' +
      '                concurrency 1 and 10, the exports, the ledger audit, bytes and WAL per paid order\n' +
      '                [--orders 1000000] [--requests 20] [--budget 20]',
    load: () => import('./bench/history.ts'),
  },
  routing: {
    summary:
      'a vendor brownout (half its creates 5xx or timing out) under priority and adaptive routing side by side: first-attempt\n' +
      '                creates, p50/p99, left to reconciliation, A\'s share over time [--rate 20] [--before 20] [--brownout 60] [--after 60]',
    load: () => import('./bench/routing.ts'),
  },
  export: {
    summary:
      'orders CSV export through one csv worker process: rows/s and the worker\'s peak RSS per size\n' +
      '                [--rows 100000,300000,1000000]',
    load: () => import('./bench/export.ts'),
  },
  cli: {
    summary: 'what one ops command costs to start and answer (CPU and wall, compile cache cold and warm); jobs:rerun of 200 ids\n' + '                [--runs 10]',
    load: () => import('./bench/cli.ts'),
  },
};

function help(): string {
  const lines = Object.entries(benches).map(([name, b]) => `  ${name.padEnd(13)} ${b.summary}`);
  return ['usage: npm run bench -- <name> [--ephemeral] [--json] [bench flags]', '', ...lines].join('\n');
}

const [name, ...args] = process.argv.slice(2);
if (!name || name === 'help' || name === '--help') {
  process.stdout.write(`${help()}\n`);
  process.exit(name ? 0 : 64);
}
const bench = benches[name];
if (!bench) {
  process.stderr.write(`unknown bench ${name}\n${help()}\n`);
  process.exit(64);
}

try {
  await (await bench.load()).run(args);
} catch (err) {
  if (String((err as { code?: unknown }).code).startsWith('ERR_PARSE_ARGS')) {
    process.stderr.write(`${(err as Error).message}\n${help()}\n`);
    process.exit(64);
  }
  process.stderr.write(`bench ${name} failed: ${(err as Error).stack ?? err}\n`);
  process.exit(1);
}
// Explicit: a lingering pool handle must not keep a finished bench alive.
process.exit(0);
