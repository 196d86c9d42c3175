/**
 * /api/auth/*: the identity routes of openapi/auth.yaml. Each request is read like a REST
 * procedure call (path, query and body as one input), passes the same checks (401, 400 from the
 * generated validators, the declared access), and its handler's AuthAnswer becomes the response:
 * a JSON body or a redirect, plus any session token or cookie it hands out. The body reader and the
 * identity limiters run before it, in app.ts (json-body.ts, identity-limiter.ts).
 * Also serves the contract at /api/auth/openapi.json and its reference page at /api/auth/reference.
 */
import express, { type Request, type Response, type Router } from 'express';
import { authRoutes, type AuthRouteName } from '../../generated/auth-routes.ts';
import type { ProcedureDefinition } from '../../generated/procedures.ts';
import type { Services, AuthAnswer, AuthExtra, AuthHandlers } from '../context.ts';
import { sendError } from './error-handler.ts';
import { invoke, NO_BODY } from './procedure-call.ts';
import { documentRoute } from './operational-routes.ts';
import { callRequest, restInput, toExpressPath } from './rest-transport.ts';
import { ApiError } from '../contract/errors.ts';
import { clearSessionCookie, sendSessionToken } from '../auth/authenticate.ts';
import { readCookie, serializeCookie } from '../auth/cookies.ts';
import { referencePage } from './reference-page.ts';

export function identityRouter(options: { document: () => object; handlers: AuthHandlers; services: Services }): Router {
  const { document, handlers, services } = options;
  const { config } = services;
  const secure = config.publicUrl.startsWith('https:');

  const router = express.Router({ strict: true });
  router.get('/openapi.json', documentRoute(document, `${config.publicUrl}/api/auth`));
  router.use('/reference', referencePage({ title: 'Workspace API identity routes: reference', documentPath: '/api/auth/openapi.json' }));

  for (const route of Object.values(authRoutes) as ProcedureDefinition[]) {
    const method = route.method.toLowerCase() as 'get' | 'post';
    router[method](toExpressPath(route.path), async (req: Request, res: Response) => {
      res.locals.procedure = route.name; // the metrics' label (call-metrics.ts)
      try {
        // Express answers HEAD with the GET route; these GETs act (verify-email spends its token).
        if (req.method === 'HEAD') throw new ApiError('METHOD_NOT_ALLOWED', { headers: { Allow: 'GET' } });
        const { input, refused } = restInput(route, req);
        const answer = await invoke<AuthAnswer<unknown>, AuthExtra>({
          procedure: route,
          input,
          refused,
          request: callRequest(req),
          services,
          run: handlers[route.name as AuthRouteName],
          extra: { userAgent: req.get('user-agent') ?? null, cookie: (name) => readCookie(req.headers.cookie, name), rawBody: () => req.rawBody?.toString('utf8'), header: (name) => req.get(name) },
          // A redirect has no body to check.
          body: (answer) => (answer.redirect === undefined ? (answer.body ?? null) : NO_BODY),
        });
        respond(route, answer, res, { secure, now: services.now() });
      } catch (error) {
        sendError(req, res, error, route);
      }
    });
  }
  return router;
}

function respond(route: ProcedureDefinition, answer: AuthAnswer<unknown>, res: Response, options: { secure: boolean; now: Date }): void {
  // The session middleware may have renewed the presented session already; an answer that ends
  // or replaces it speaks last, so the client never gets the dead token back.
  if (answer.clearSession || answer.session) {
    res.removeHeader('set-auth-token');
    res.removeHeader('Set-Cookie');
  }
  if (answer.clearSession) clearSessionCookie(res, options.secure);
  if (answer.session) sendSessionToken(res, answer.session.token, answer.session.expiresAt, { cookie: true, secure: options.secure, now: options.now });
  for (const cookie of answer.cookies ?? []) {
    res.append('Set-Cookie', serializeCookie(cookie.name, cookie.value, { maxAgeSeconds: cookie.maxAgeSeconds, secure: options.secure, path: cookie.path ?? '/api/auth' }));
  }
  if (answer.redirect !== undefined) {
    res.location(answer.redirect).status(302).end();
    return;
  }
  const body = answer.body ?? null;
  res.status(route.successStatus).json(body);
}
