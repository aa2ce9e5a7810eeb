// The import rule of docs/architecture.md, checked by `npm test` (npm run deps).
// Layers, bottom to top: db/ (Postgres and what every process shares), then gateways/ (the vendor
// connectors and the simulator's dialects), then api/ and workers/ side by side, then scripts/.
// A module may import its own layer and the layers below it, never above or beside.
//
// Inside gateways/ there are two sides that speak each protocol: Kasir's connectors (what Kasir
// sends and how it reads the answer) and the simulator (what a vendor does with it). Each side is
// written from the vendor's official sources on its own; if one imported the other, a misreading of
// the protocol would be mirrored on both sides and every test would still pass. Only the standards
// both must share (the QRIS payload codec) sit in a module of their own that either may import.

// The simulator's side: its process shell (gateways/simulator/, except the connector that Kasir
// uses to call it) and each vendor's dialect (gateways/<vendor>/dialect.ts, iris-dialect.ts).
const SIMULATOR_SIDE = ['^gateways/simulator/', '^gateways/[a-z]+/[a-z-]*dialect[.]ts$'];
// (connector-report.ts reads the simulator's daily report for it).
const SIMULATOR_CONNECTOR = '^gateways/simulator/connector(-report)?[.]ts$';
// Standards shared by both sides.
const SHARED_STANDARDS = '^gateways/qris[.]ts$';

// ---- no-package-internals: a self-contained block (the rule and the list it needs) ----------
// A package's dist/ is its build output; of it, only the file its manifest names as its entry
// point (module, else main) is its public API. A package with an `exports` map already refuses
// every path it does not export (the import does not resolve: no-unresolvable). One without,
// like pg-boss, lets `pkg/dist/internal.js` resolve, which ties Kasir to the one version whose
// internals that import was written against. dependency-cruiser matches resolved files, not the
// import as written, and a package's own entry point resolves into dist/ too, so the rule
// exempts exactly the entry points, read from the installed packages' manifests.
const { existsSync, readFileSync } = require('node:fs');
const escapeRegExp = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const packageEntryPoints = (() => {
  const manifest = JSON.parse(readFileSync(`${__dirname}/package.json`, 'utf8'));
  const exporting = [];
  const entries = [];
  for (const name of Object.keys({ ...manifest.dependencies, ...manifest.devDependencies })) {
    const folder = `${__dirname}/node_modules/${name}`;
    if (!existsSync(`${folder}/package.json`)) continue; // not installed: nothing of it resolves
    const installed = JSON.parse(readFileSync(`${folder}/package.json`, 'utf8'));
    if (installed.exports) {
      exporting.push(escapeRegExp(name));
      continue;
    }
    const entry = (installed.module ?? installed.main ?? 'index.js').replace(/^\.\//, '');
    const file = [entry, `${entry}.js`, `${entry}/index.js`].find((f) => existsSync(`${folder}/${f}`));
    if (file && /(^|\/)dist\//.test(file)) entries.push(`node_modules/${escapeRegExp(name)}/${escapeRegExp(file)}$`);
  }
  return [`node_modules/(${exporting.join('|')})/`, ...entries];
})();
const noPackageInternals = {
  name: 'no-package-internals',
  comment: "a package only through its public entry point, never a file of its dist/ (pins the package's exact version)",
  severity: 'error',
  from: { pathNot: 'node_modules/' },
  // `(@[^/]+/)?[^/]+` would read better, but dependency-cruiser refuses a nested repetition.
  to: { path: 'node_modules/(@[^/]+/[^/]+|[^/]+)/dist/', pathNot: packageEntryPoints },
};
// ---- end of no-package-internals -------------------------------------------------------------

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'db-imports-nothing-above',
      comment: 'db/ is the bottom layer: what reads or writes Postgres, and what every process shares',
      severity: 'error',
      from: { path: '^db/' },
      to: { path: '^(gateways|api|workers|scripts|test)/' },
    },
    {
      name: 'gateways-import-only-db',
      comment: 'gateways/ sits on db/, below the processes that call it (api/ for callbacks, workers/ for jobs)',
      severity: 'error',
      from: { path: '^gateways/' },
      to: { path: '^(api|workers|scripts|test)/' },
    },
    {
      name: 'connector-does-not-import-simulator',
      comment: 'a connector is written from the vendor\'s sources, never from the simulator that plays the vendor',
      severity: 'error',
      from: { path: '^gateways/', pathNot: SIMULATOR_SIDE },
      to: { path: SIMULATOR_SIDE, pathNot: SIMULATOR_CONNECTOR },
    },
    {
      name: 'simulator-connector-does-not-import-simulator',
      comment: 'the connector for the simulator\'s own protocol is Kasir\'s side, though it sits in the simulator\'s folder',
      severity: 'error',
      from: { path: SIMULATOR_CONNECTOR },
      to: { path: SIMULATOR_SIDE, pathNot: SIMULATOR_CONNECTOR },
    },
    {
      name: 'simulator-does-not-import-connector',
      comment: 'a dialect is written from the vendor\'s sources, never from Kasir\'s connector (only shared standards such as the QRIS codec)',
      severity: 'error',
      from: { path: SIMULATOR_SIDE, pathNot: SIMULATOR_CONNECTOR },
      to: { path: '^(gateways|db)/', pathNot: [...SIMULATOR_SIDE, SHARED_STANDARDS] },
    },
    {
      name: 'simulator-does-not-import-its-connector',
      comment: 'the simulator\'s shell and the connector that calls it are two sides of one protocol',
      severity: 'error',
      from: { path: SIMULATOR_SIDE, pathNot: SIMULATOR_CONNECTOR },
      to: { path: SIMULATOR_CONNECTOR },
    },
    {
      name: 'api-does-not-import-workers',
      comment: 'api/ and workers/ sit side by side on gateways/ and db/: what both need belongs below them',
      severity: 'error',
      from: { path: '^api/' },
      to: { path: '^(workers|scripts|test)/' },
    },
    {
      name: 'workers-do-not-import-api',
      comment: 'api/ and workers/ sit side by side on gateways/ and db/: what both need belongs below them',
      severity: 'error',
      from: { path: '^workers/' },
      to: { path: '^(api|scripts|test)/' },
    },
    {
      name: 'scripts-are-not-imported',
      comment: 'scripts/ is the top layer: only tests may use it',
      severity: 'error',
      from: { path: '^(db|gateways|api|workers)/' },
      to: { path: '^scripts/' },
    },
    {
      name: 'presenters-are-leaves',
      comment: 'a presenter turns a row into its wire shape: it reads row types and other presenters, and nothing that does work',
      severity: 'error',
      from: { path: '^db/present/' },
      to: { path: '^db/', pathNot: ['^db/present/', '^db/[^/]+[.]sql[.]ts$', '^db/(master-data|users|webhooks|money-rules)[.]ts$'] },
    },
    {
      name: 'no-circular',
      comment: 'two modules that import each other (directly or through others) are one module in two files',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'no-unresolvable',
      comment: 'an import that resolves to nothing',
      severity: 'error',
      from: {},
      to: { couldNotResolve: true },
    },
    noPackageInternals,
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(node_modules|\\.tap|\\.data)/' },
    // TypeScript 7 has no compiler API yet; swc parses the sources instead. It reports
    // `import type` too: a type taken from a layer above is still a dependency on it.
    parser: 'swc',
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      extensions: ['.ts', '.js', '.json'],
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default'],
      mainFields: ['module', 'main'],
    },
  },
};
