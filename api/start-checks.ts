// What the web process checks before it listens: settings that would let strangers act as a
// vendor, or lock merchants out, are refused or named at start rather than found in an audit.
import type { Config } from '../db/config.ts';
import { logger } from '../db/logger.ts';
import type { Db } from '../db/pool.ts';
import { vendorsWithPublishedSecrets } from '../db/published-secrets.ts';
import type { Sealer } from '../db/secrets.ts';

/**
 * The reason the web process must not start, or null: a vendor holds a secret published with
 * Kasir (anyone can sign its callbacks), and ALLOW_DEVELOPMENT_SECRETS does not say this is a
 * development stack.
 */
export async function publishedSecretProblem(config: Config, db: Db, sealer: Sealer): Promise<string | null> {
  const found = await vendorsWithPublishedSecrets(db, sealer);
  if (found.length === 0) return null;
  const list = found.map((v) => `${v.code} (${v.credentials.join(', ')})`).join(', ');
  if (config.ALLOW_DEVELOPMENT_SECRETS) {
    logger.warn({ vendors: found }, 'vendors hold development secrets published with Kasir; allowed by ALLOW_DEVELOPMENT_SECRETS');
    return null;
  }
  return (
    `refusing to start: vendor ${list} holds a development secret published with Kasir, so anyone can sign its callbacks. ` +
    'Give it its own secret (ops vendor:add with the same code) or remove it (ops vendor:remove); ' +
    'on a development stack nobody else can reach, ALLOW_DEVELOPMENT_SECRETS=true allows it'
  );
}

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|localhost)$/i;

/**
 * Behind a load balancer every request comes from the balancer's address unless TRUST_PROXY
 * says whose X-Forwarded-For to believe: logs name the balancer, and the failed-authentication
 * throttle counts every client as one. Listening beyond loopback without it is worth a warning.
 */
export function warnWithoutTrustProxy(config: Config): void {
  if (config.TRUST_PROXY !== false || LOOPBACK.test(config.HOST)) return;
  logger.warn(
    { host: config.HOST },
    'listening beyond loopback without TRUST_PROXY: behind a load balancer or proxy, every client has its address (set TRUST_PROXY, docs/deploy.md)',
  );
}
