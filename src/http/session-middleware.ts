/** Resolves `req.principal` once per request and hands a renewed session back to the client. */
import type { RequestHandler } from 'express';
import type { Services } from '../context.ts';
import { sendSessionToken } from '../auth/authenticate.ts';

export function sessionMiddleware(services: Services): RequestHandler {
  const secure = services.config.publicUrl.startsWith('https:');
  return async (req, res, next) => {
    try {
      const auth = await services.authenticate(req.headers);
      req.principal = auth?.principal ?? null;
      if (auth?.renewal) sendSessionToken(res, auth.renewal.token, auth.renewal.expiresAt, { cookie: auth.via === 'cookie', secure, now: services.now() });
      next();
    } catch (error) {
      next(error);
    }
  };
}
