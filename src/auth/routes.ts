/** Every identity route's handler, keyed by operationId, gathered from the modules that own them. */
import type { AuthHandlers } from './identity-route.ts';
import { accountRoutes } from './accounts/routes.ts';
import { sessionRoutes } from './accounts/session-routes.ts';
import { socialRoutes } from './social/routes.ts';
import { organizationRoutes } from '../organizations/routes.ts';
import { teamRoutes } from '../organizations/team-routes.ts';
import { adminUserRoutes } from '../admin/user-routes.ts';
import { subscriptionRoutes } from '../billing/subscription-routes.ts';
import { webhookRoutes } from '../billing/webhook.ts';

export const authHandlers: AuthHandlers = {
  ...sessionRoutes,
  ...accountRoutes,
  ...socialRoutes,
  ...organizationRoutes,
  ...teamRoutes,
  ...adminUserRoutes,
  ...subscriptionRoutes,
  ...webhookRoutes,
};
