// How Kasir tells a vendor's sandbox from its production environment, from what vendor:add is
// given: the vendors' documented test-key prefixes and sandbox hosts (docs/vendors/*.md). A
// sandbox credential on an unmarked vendor is refused, and so is a production one on a vendor
// marked --sandbox: a mark that lies is worse than none. Credentials with neither sign (a local
// fake, another SNAP provider's production host) are taken as the operator says.

/** Hosts of the vendors' sandboxes and production environments, as their documents name them. */
const SANDBOX_HOSTS = new Set(['api.sandbox.midtrans.com', 'app.sandbox.midtrans.com', 'merchants.sbx.midtrans.com']);
const PRODUCTION_HOSTS = new Set(['api.midtrans.com', 'app.midtrans.com', 'merchants.midtrans.com']);
// Other SNAP providers name their sandboxes so too (api-sandbox.doku.com, sandbox.example.id).
const SANDBOX_LABEL = /(^|[.-])(sandbox|sbx)([.-]|$)/i;

/** Which credentials say which environment: a value's prefix, per credential name. */
const KEY_PREFIXES: Record<string, { sandbox: string; production: RegExp }> = {
  // Xendit: test keys start with xnd_development_, live ones with xnd_production_ (one host for both).
  secretKey: { sandbox: 'xnd_development_', production: /^xnd_production_/ },
  // Midtrans Core: sandbox server keys start with SB-Mid-server-, production ones with Mid-server-.
  serverKey: { sandbox: 'SB-Mid-', production: /^Mid-server-/ },
};

export interface EnvironmentSigns {
  /** What says sandbox, e.g. `--secret-key (xnd_development_…)`; empty when nothing does. */
  sandbox: string[];
  /** What says production. */
  production: string[];
}

function hostOf(url: string): string {
  try {
    return new URL(url).hostname.toLowerCase();
  } catch {
    return '';
  }
}

/** The signs of environment in a vendor's base URLs and credentials (flag names as vendor:add takes them). */
export function environmentSigns(urls: Record<string, string | undefined>, credentials: Record<string, string>): EnvironmentSigns {
  const signs: EnvironmentSigns = { sandbox: [], production: [] };
  for (const [flag, url] of Object.entries(urls)) {
    if (url === undefined) continue;
    const host = hostOf(url);
    if (SANDBOX_HOSTS.has(host) || SANDBOX_LABEL.test(host)) signs.sandbox.push(`--${flag} (${host})`);
    else if (PRODUCTION_HOSTS.has(host)) signs.production.push(`--${flag} (${host})`);
  }
  for (const [name, rule] of Object.entries(KEY_PREFIXES)) {
    const value = credentials[name];
    if (value === undefined) continue;
    const flag = `--${name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
    if (value.startsWith(rule.sandbox)) signs.sandbox.push(`${flag} (${rule.sandbox}…)`);
    else if (rule.production.test(value)) signs.production.push(`${flag} (${value.match(rule.production)![0]}…)`);
  }
  return signs;
}

/**
 * Why vendor:add must refuse these credentials with this mark, or null. Production signs under
 * --sandbox, sandbox signs without it, and both kinds at once (a sandbox key sent to a
 * production host is refused there anyway, and says the operator mixed two accounts).
 */
export function sandboxMarkProblem(signs: EnvironmentSigns, sandbox: boolean): string | null {
  if (signs.sandbox.length && signs.production.length) {
    return `${signs.sandbox.join(', ')} belong to a sandbox and ${signs.production.join(', ')} to production: use one environment's credentials and hosts`;
  }
  if (!sandbox && signs.sandbox.length) {
    return (
      `${signs.sandbox.join(', ')}: sandbox credentials. A payment simulated in the vendor's sandbox dashboard would pass every read Kasir makes ` +
      'and credit a wallet with no money received. Use production credentials, or pass --sandbox on a stack that takes no real money'
    );
  }
  if (sandbox && signs.production.length) {
    return `${signs.production.join(', ')}: production credentials, not a sandbox; drop --sandbox`;
  }
  return null;
}
