// The import rule of docs/architecture.md, checked by `npm test` (npm run deps).
// Layers, bottom to top: db/ (data, shared core), then api/ and workers/ side by side, then
// scripts/. A module may import its own layer and the layers below it, never above or beside.
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'db-imports-nothing-above',
      comment: 'db/ is the bottom layer: data modules and what every process shares (architecture.md)',
      severity: 'error',
      from: { path: '^db/' },
      to: { path: '^(api|workers|scripts|test)/' },
    },
    {
      name: 'api-does-not-import-workers',
      comment: 'api/ and workers/ sit side by side on db/: what both need belongs in db/',
      severity: 'error',
      from: { path: '^api/' },
      to: { path: '^(workers|scripts|test)/' },
    },
    {
      name: 'workers-do-not-import-api',
      comment: 'api/ and workers/ sit side by side on db/: what both need belongs in db/',
      severity: 'error',
      from: { path: '^workers/' },
      to: { path: '^(api|scripts|test)/' },
    },
    {
      name: 'scripts-are-not-imported',
      comment: 'scripts/ is the top layer: only tests may use it',
      severity: 'error',
      from: { path: '^(db|api|workers)/' },
      to: { path: '^scripts/' },
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
