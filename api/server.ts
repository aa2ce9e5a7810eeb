// Process entry of the `web` Procfile line: config, pool, queue sender, HTTP server, and the
// operator-only metrics listener when METRICS_PORT is set (GET /metrics is not on PORT).
// SIGTERM/SIGINT stop accepting connections, let in-flight requests finish, then close the
// pool and pg-boss, so a rolling restart drops no request.
import { createServer } from 'node:http';
import { createApp } from './app.ts';
import { directDatabaseUrl, loadConfig, publicBaseUrl } from '../db/config.ts';
import { logger } from '../db/logger.ts';
import { startMetricsServer } from '../db/metrics.ts';
import { waitForDatabaseOrExit } from '../db/wait-for-database.ts';
import { openContext } from './context.ts';
import { sandboxVendorCodes } from '../db/vendors.ts';
import { publishedSecretProblem, warnWithoutTrustProxy } from './start-checks.ts';

const config = loadConfig();
logger.level = config.LOG_LEVEL;
await waitForDatabaseOrExit([config.DATABASE_URL, directDatabaseUrl(config)], config.DATABASE_WAIT_SECONDS, 'api');
const { ctx, close } = await openContext(config);
const refusal = await publishedSecretProblem(config, ctx.pool, ctx.sealer);
if (refusal) {
  logger.fatal(refusal);
  process.stderr.write(`${refusal}\n`);
  await close();
  process.exit(78);
}
warnWithoutTrustProxy(config);
const app = createApp(ctx);
const metrics = await startMetricsServer(config, ctx.pool);
// Said in the line every operator reads: a sandbox vendor's dashboard can "pay" any order.
const sandboxVendors = await sandboxVendorCodes(ctx.pool);

// Node checks the headers and request timers of open sockets every connectionsCheckingInterval
// (30 s by default, which would let a 1 s limit hold a socket for 31 s); once a second bounds
// the overshoot at a cost of one walk over the open sockets.
const server = createServer({ connectionsCheckingInterval: 1_000 }, app);
server.keepAliveTimeout = 65_000; // longer than common load balancer idle timeouts
// A client trickling its headers or body, or connecting and sending nothing, gets a 408 and a
// closed socket once these run out (db/config.ts); an idle keep-alive socket is governed by
// keepAliveTimeout instead. The cap turns a flood of such sockets into refused connections
// rather than exhausted file descriptors and memory.
server.headersTimeout = config.HEADERS_TIMEOUT_MS;
server.requestTimeout = config.REQUEST_TIMEOUT_MS;
server.maxConnections = config.MAX_CONNECTIONS;
server.listen(config.PORT, config.HOST, () => {
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.PORT;
  if (sandboxVendors.length) {
    logger.warn({ port, publicBaseUrl: publicBaseUrl(config), sandboxVendors }, `api listening with SANDBOX vendors (${sandboxVendors.join(', ')}): take no real money on this stack`);
  } else {
    logger.info({ port, publicBaseUrl: publicBaseUrl(config) }, 'api listening');
  }
  process.send?.({ listening: true, port, metricsPort: metrics?.port ?? null });
});

let stopping = false;
async function stop(signal: string) {
  if (stopping) return;
  stopping = true;
  logger.info({ signal }, 'api stopping');
  server.close();
  server.closeIdleConnections();
  await new Promise<void>((resolve) => server.once('close', resolve));
  await metrics?.close();
  await close();
  process.exit(0);
}
process.on('SIGTERM', () => void stop('SIGTERM'));
process.on('SIGINT', () => void stop('SIGINT'));
process.on('disconnect', () => void stop('parent gone'));
