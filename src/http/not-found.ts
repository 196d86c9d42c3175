/**
 * The last stop: a path the contract declares but with another method answers 405 with Allow;
 * anything else answers 404 in the error envelope.
 */
import type { RequestHandler } from 'express';
import { procedures } from '../../generated/procedures.ts';
import { ApiError } from './errors.ts';
import { sendError } from './error-handler.ts';

const templates = new Map<RegExp, Set<string>>();
for (const { path, method } of Object.values(procedures)) {
  const pattern = new RegExp(`^/api/v1${path.replace(/\{[^}]+\}/g, '[^/]+')}$`);
  const existing = [...templates.keys()].find((key) => key.source === pattern.source);
  const methods = existing ? templates.get(existing)! : new Set<string>();
  methods.add(method);
  if (method === 'GET') methods.add('HEAD');
  if (!existing) templates.set(pattern, methods);
}

export function allowedMethods(path: string): string[] {
  const allowed = new Set<string>();
  for (const [pattern, methods] of templates) {
    if (pattern.test(path)) for (const method of methods) allowed.add(method);
  }
  return [...allowed].sort();
}

export function notFound(): RequestHandler {
  return (req, res) => {
    const allowed = allowedMethods(req.path);
    const error = allowed.length > 0
      ? new ApiError('METHOD_NOT_ALLOWED', { message: `${req.method} is not allowed here.`, headers: { Allow: allowed.join(', ') } })
      : new ApiError('NOT_FOUND', { message: `No route for ${req.method} ${req.path}.` });
    sendError(req, res, error);
  };
}
