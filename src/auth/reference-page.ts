/**
 * /api/auth/reference: the identity contract rendered by Swagger UI, whose script and styles are
 * served from the installed swagger-ui-dist package (no CDN). It is the one route exempt from the
 * Content-Security-Policy (specification, "Cross-cutting response headers").
 */
import { createRequire } from 'node:module';
import express, { type Router } from 'express';

const require = createRequire(import.meta.url);
// The package's own helper for where its files are; its main module would also load the whole
// Swagger UI bundle into the server (about 0.3 s of every start) for nothing.
const assets: string = require('swagger-ui-dist/absolute-path.js')();

const PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Workspace API identity routes: reference</title>
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <link rel="stylesheet" href="/api/auth/reference/assets/swagger-ui.css">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="/api/auth/reference/assets/swagger-ui-bundle.js"></script>
  <script src="/api/auth/reference/init.js"></script>
</body>
</html>
`;

const INIT = `window.ui = SwaggerUIBundle({ url: '/api/auth/openapi.json', dom_id: '#swagger-ui', deepLinking: true, docExpansion: 'list' });\n`;

export function referencePage(): Router {
  const router = express.Router({ strict: true });
  router.use((_req, res, next) => {
    res.removeHeader('Content-Security-Policy');
    res.setHeader('Cache-Control', 'no-cache');
    next();
  });
  router.get('/', (_req, res) => {
    res.type('html').send(PAGE);
  });
  router.get('/init.js', (_req, res) => {
    res.type('application/javascript').send(INIT);
  });
  router.use('/assets', express.static(assets, { index: false, fallthrough: false, etag: true }));
  return router;
}
