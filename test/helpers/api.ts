// Starts Kasir's API in the test process on an ephemeral port, against a test database,
// with the same wiring as api/server.ts.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp } from '../../api/app.ts';
import { openContext, type AppContext } from '../../api/context.ts';
import type { Config } from '../../db/config.ts';

interface Teardown {
  teardown(fn: () => unknown): void;
}

export interface TestApi {
  url: string;
  ctx: AppContext;
  server: Server;
}

export async function startApi(t: Teardown, config: Config): Promise<TestApi> {
  const { ctx, close } = await openContext(config, { bossPoolSize: 2 });
  const server = createServer(createApp(ctx));
  await new Promise<void>((resolve) => server.listen(config.PORT, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  t.teardown(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await close();
  });
  return { url: `http://127.0.0.1:${port}`, ctx, server };
}
