// Starts Kasir's API in the test process on an ephemeral port, against a test database,
// with the same wiring as api/server.ts.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp } from '../../api/app.ts';
import type { AppContext } from '../../api/context.ts';
import type { Config } from '../../db/config.ts';
import { createPool } from '../../db/pool.ts';
import { startBoss } from '../../db/queue.ts';
import { createSealer } from '../../db/secrets.ts';

interface Teardown {
  teardown(fn: () => unknown): void;
}

export interface TestApi {
  url: string;
  ctx: AppContext;
  server: Server;
}

export async function startApi(t: Teardown, config: Config): Promise<TestApi> {
  const pool = await createPool(config.DATABASE_URL, { size: config.DB_POOL_SIZE });
  const boss = await startBoss(config.DATABASE_URL, { role: 'sender', poolSize: 2 });
  const ctx: AppContext = { config, pool, boss, sealer: createSealer(config.KASIR_MASTER_KEY) };
  const server = createServer(createApp(ctx));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  t.teardown(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await boss.stop({ graceful: false });
    await pool.end();
  });
  return { url: `http://127.0.0.1:${port}`, ctx, server };
}
