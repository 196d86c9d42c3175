/**
 * Who may import whom (docs/architecture.md, "Layers"). `make deps` (and CI) fails on any import
 * circle and on any import that runs upward. Type-only imports count: a type from a higher layer
 * ties the lower one to it as much as a value does.
 *
 * Layers, bottom to top:
 *   base         generated/, src/contract/, src/pagination/, src/rpc/, src/config.ts + src/config/, ids, logger, version, secret,
 *                the Principal type (auth/principal.ts), and tracing (telemetry/tracing.ts: every layer makes spans,
 *                and telemetry/span-ids.ts, its SDK's ids)
 *   infra        src/db/, src/storage/, src/email/, src/process/, src/ai-service/
 *   stores       every store.ts and *-store.ts (one owner per table), the credit ledger, and the
 *                revocation channel stores publish on (auth/revocations.ts)
 *   rules        every other module of a feature folder (sessions, the job lifecycle, plans, ...)
 *   context      src/context.ts: the handler types
 *   handlers     procedures.ts, *-procedures.ts, routes.ts, *-routes.ts, and the few handler files
 *                named for their operation (jobs/stream.ts, billing/webhook.ts, documents/search.ts,
 *                admin/system-status.ts) or helping them (auth/accounts/email-sign-in.ts,
 *                auth/social/flow-cookies.ts)
 *   http         src/http/
 *   composition  src/composition/ (the composition root), then src/main.ts
 */
const base = '^(generated/|src/(contract|pagination|rpc|config)/|src/(config|ids|logger|version|secret|auth/principal|telemetry/(tracing|span-ids))\\.ts$)';
const infra = '^src/(db|storage|email|process|ai-service)/';
const stores = '^src/.+[/-]store\\.ts$|^src/credits/credit-ledger\\.ts$|^src/auth/revocations\\.ts$';
const handlers = '^src/(admin|audit|auth|billing|contact|credits|documents|flags|jobs|organizations|system|user|workspaces)/.*(procedures|routes)\\.ts$|^src/(jobs/stream|billing/webhook|documents/search|admin/system-status|auth/accounts/email-sign-in|auth/social/flow-cookies)\\.ts$';
const context = '^src/context\\.ts$';
const http = '^src/http/';
const composition = '^src/(composition/|main\\.ts$)';
const features = '^src/(?!telemetry/(tracing|span-ids)\\.ts$)(admin|audit|auth|billing|contact|credits|documents|flags|idempotency|jobs|organizations|system|telemetry|user|workspaces)/'; // idempotency: the rules and store of idempotent retries, run by the binding layer

const above = (...layers) => ({ path: layers });

module.exports = {
  forbidden: [
    { name: 'no-circular', severity: 'error', comment: 'Import circles make layers meaningless.', from: {}, to: { circular: true } },
    {
      name: 'base-imports-only-base', severity: 'error',
      comment: 'The contract, generated code and the small shared modules import nothing of the service.',
      from: { path: base }, to: { path: '^src/', pathNot: base },
    },
    // clients/ is a base layer of its own: the published client package carries copies (codegen), never an import of the service.
    { name: 'clients-import-nothing-of-the-service', severity: 'error', comment: 'A client package is installed alone: nothing of src/, generated/ or codegen/.', from: { path: '^clients/' }, to: { path: '^(src|generated|codegen)/' } },
    {
      name: 'infra-imports-no-feature', severity: 'error',
      comment: 'Database, storage, email, processes and the AI service know no feature.',
      from: { path: infra }, to: above(stores, features, context, http, composition),
    },
    {
      name: 'stores-import-only-below', severity: 'error',
      comment: 'A store imports the database, base modules and other stores: never rules, handlers, the handler types or HTTP.',
      from: { path: stores }, to: { path: [features, context, http, composition], pathNot: stores },
    },
    {
      name: 'rules-import-no-handler', severity: 'error',
      comment: 'Rules (feature modules that are not stores or handlers) never import handlers, the handler types, HTTP or the composition root.',
      from: { path: features, pathNot: [stores, handlers] }, to: above(handlers, context, http, composition),
    },
    {
      name: 'context-imports-only-below', severity: 'error',
      comment: 'The handler types sit under the handlers.',
      from: { path: context }, to: above(handlers, http, composition),
    },
    {
      name: 'handlers-import-no-http', severity: 'error',
      comment: 'Handlers know nothing about HTTP and are assembled only by the composition root.',
      from: { path: handlers }, to: above(http, composition),
    },
    {
      name: 'handlers-import-no-other-group-handler', severity: 'error',
      comment: "A group's handlers never import another group's handlers: shared logic lives in a rule or a store.",
      from: { path: '^src/(admin|audit|auth|billing|contact|credits|documents|flags|jobs|organizations|system|user|workspaces)/' }, to: { path: handlers, pathNot: '^src/$1/' },
    },
    {
      name: 'http-imports-no-handler', severity: 'error',
      comment: 'The HTTP layer gets the handlers as tables from the composition root.',
      from: { path: http }, to: above(handlers, composition),
    },
    {
      name: 'composition-only-from-the-top', severity: 'error',
      comment: 'Nothing imports the composition root but main.ts, tests and benchmarks.',
      from: { pathNot: '^(src/composition/|src/main\\.ts$|test/|bench/)' }, to: { path: '^src/composition/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js', '.cjs', '.json'] },
  },
};
