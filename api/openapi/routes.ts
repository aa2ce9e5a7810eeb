// GET /openapi.json (the generated document, api/openapi/document.ts) and GET /docs (Swagger UI
// from the swagger-ui-dist package, served from node_modules: no CDN, the page works offline).
// Public, no API key: the document describes the API, it holds nothing of any merchant.
//
// Only the UI files the page loads are served from the package directory (not its README,
// package.json or the petstore initializer), and the page runs no inline script, so it is
// served under a CSP that allows nothing but this origin. `validatorUrl: null` keeps Swagger UI
// from sending the document to validator.swagger.io.
import { createRequire } from 'node:module';
import express, { Router } from 'express';
import { openApiText } from './document.ts';

const require = createRequire(import.meta.url);
/** swagger-ui-dist's getAbsoluteFSPath, without loading its browser bundle into this process. */
const uiDir: string = require('swagger-ui-dist/absolute-path.js')();

const UI_FILES = new Set(['/swagger-ui.css', '/swagger-ui-bundle.js', '/favicon-32x32.png', '/favicon-16x16.png']);

const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'", // Swagger UI sets style attributes
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const PAGE = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Kasir API reference</title>
<link rel="stylesheet" href="/docs/swagger-ui.css">
<link rel="icon" type="image/png" href="/docs/favicon-32x32.png" sizes="32x32">
</head>
<body>
<div id="swagger-ui"></div>
<script src="/docs/swagger-ui-bundle.js"></script>
<script src="/docs/init.js"></script>
</body>
</html>
`;

const INIT = `window.ui = SwaggerUIBundle({
  url: '/openapi.json',
  dom_id: '#swagger-ui',
  deepLinking: true,
  validatorUrl: null,
  presets: [SwaggerUIBundle.presets.apis],
  layout: 'BaseLayout',
  defaultModelsExpandDepth: 0,
});
`;

export function docsRoutes(): Router {
  const router = Router();
  const ui = express.static(uiDir, { index: false, redirect: false, maxAge: '1d' });

  router.get('/openapi.json', (_req, res) => {
    res.setHeader('Cache-Control', 'no-cache');
    res.setHeader('Access-Control-Allow-Origin', '*');
    res.type('application/json').send(openApiText());
  });

  // express.static keeps a Cache-Control already set, so the no-store default (api/http/response-headers.ts)
  // is dropped for these static files (swagger-ui-dist, pinned), letting maxAge apply.
  router.use('/docs', (req, res, next) => {
    if (!UI_FILES.has(req.path)) return next();
    res.removeHeader('Cache-Control');
    ui(req, res, next);
  });

  router.get('/docs/init.js', (_req, res) => {
    res.setHeader('Cache-Control', 'no-cache');
    res.type('text/javascript').send(INIT);
  });

  router.get('/docs', (_req, res) => {
    res.setHeader('Content-Security-Policy', CSP);
    res.setHeader('Cache-Control', 'no-cache');
    res.type('html').send(PAGE);
  });

  return router;
}
