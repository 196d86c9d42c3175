/**
 * A contract rendered for people: Swagger UI, whose script and styles are served from the
 * installed swagger-ui-dist package (no CDN, nothing fetched from elsewhere). Mounted twice:
 * /api/v1/reference (the procedures' contract, operational-routes.ts) and /api/auth/reference
 * (the identity routes', identity-transport.ts). Neither is an operation of its contract, like
 * the documents they render.
 *
 * The page keeps a Content-Security-Policy of its own instead of the API's `default-src 'none'`:
 * scripts, styles, fonts and fetches from this origin only (the page's settings are a script file,
 * never inline), images from this origin or `data:` (Swagger UI's icons), no framing.
 */
import { createRequire } from 'node:module';
import express, { type Router } from 'express';

const require = createRequire(import.meta.url);
// The package's own helper for where its files are; its main module would also load the whole
// Swagger UI bundle into the server (about 0.3 s of every start) for nothing.
const assets = (require('swagger-ui-dist/absolute-path.js') as () => string)();

export const REFERENCE_PAGE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "font-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

export interface ReferencePageOptions {
  /** The page's title. */
  title: string;
  /** The absolute path of the contract document it renders, on this origin (`/api/v1/openapi.json`). */
  documentPath: string;
}

/**
 * The page at the router's mount path (with or without a trailing slash), its settings at
 * `<mount>/init.js` and Swagger UI's files under `<mount>/assets/`. Addresses are built from the
 * mount path (`req.baseUrl`), so one module serves every mount.
 */
export function referencePage(options: ReferencePageOptions): Router {
  // `deepLinking`: `#/<tag>/<operationId>` opens that operation, and opening one sets the address.
  // The schema view ('model') is the default: the page is a reference of the shapes first.
  const init = `window.ui = SwaggerUIBundle(${JSON.stringify({
    url: options.documentPath,
    dom_id: '#swagger-ui',
    deepLinking: true,
    docExpansion: 'list',
    defaultModelRendering: 'model',
    defaultModelExpandDepth: 2,
    // Swagger UI would otherwise send the document to validator.swagger.io for a badge.
    validatorUrl: null,
  })});\n`;
  const router = express.Router({ strict: true });
  router.use((_req, res, next) => {
    res.setHeader('Content-Security-Policy', REFERENCE_PAGE_CSP);
    // Public and unchanging between deployments' restarts, but revalidated (assets carry ETags).
    res.setHeader('Cache-Control', 'no-cache');
    next();
  });
  router.get('/', (req, res) => {
    res.type('html').send(page(options.title, req.baseUrl));
  });
  router.get('/init.js', (_req, res) => {
    res.type('text/javascript').send(init);
  });
  // A file the package does not have falls through to the API's 404 (no route), in the error envelope.
  router.use('/assets', express.static(assets, { index: false, etag: true }));
  return router;
}

function page(title: string, base: string): string {
  return `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>${escapeHtml(title)}</title>
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <link rel="stylesheet" href="${escapeHtml(base)}/assets/swagger-ui.css">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="${escapeHtml(base)}/assets/swagger-ui-bundle.js"></script>
  <script src="${escapeHtml(base)}/init.js"></script>
</body>
</html>
`;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`);
}
