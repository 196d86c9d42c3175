import type { Logger } from '../logger.ts';
import type { Principal } from '../auth/principal.ts';

declare global {
  namespace Express {
    interface Request {
      /** X-Request-Id of this request (see request-id.ts). */
      id: string;
      /** The request's logger; every line carries the request id. */
      log: Logger;
      /** The client's address, from Express's `trust proxy` (TRUST_PROXY; see client-ip.ts). */
      clientIp: string;
      /** The signed-in caller, or null (see http/session-middleware.ts). */
      principal: Principal | null;
      /** The JSON body's bytes as received, before parsing (json-body.ts): signatures cover these, not the parse. */
      rawBody?: Buffer;
    }
    interface Application {
      locals: { validateResponses?: boolean } & Record<string, unknown>;
    }
    interface Locals {
      /** The code of an error answer (`NOT_FOUND`, `payload_too_large`, ...), for the access-log line (error-handler.ts). */
      errorCode?: string;
    }
  }
}

export {};
