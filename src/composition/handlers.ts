/**
 * Every handler, keyed by the name the contract gives its operation: the procedures of
 * openapi/openapi.yaml (with the streaming ones apart: they write events, not one answer) and the
 * identity routes of openapi/auth.yaml. The only module that imports every group's handlers.
 */
import type { CompleteAuthHandlers, CompleteHandlers, StreamHandlers } from '../context.ts';
import { contactProcedures } from '../contact/procedures.ts';
import { systemProcedures } from '../system/procedures.ts';
import { userProcedures } from '../user/procedures.ts';
import { workspaceProcedures } from '../workspaces/procedures.ts';
import { documentProcedures } from '../documents/procedures.ts';
import { jobProcedures } from '../jobs/procedures.ts';
import { jobStreamProcedures } from '../jobs/stream.ts';
import { flagProcedures } from '../admin/flag-procedures.ts';
import { systemStatusProcedures } from '../admin/system-status.ts';
import { adminOrganizationProcedures } from '../admin/organization-procedures.ts';
import { billingProcedures } from '../billing/procedures.ts';
import { organizationProcedures } from '../organizations/procedures.ts';
import { accountRoutes } from '../auth/accounts/routes.ts';
import { sessionRoutes } from '../auth/accounts/session-routes.ts';
import { socialRoutes } from '../auth/social/routes.ts';
import { organizationRoutes } from '../organizations/routes.ts';
import { teamRoutes } from '../organizations/team-routes.ts';
import { adminUserRoutes } from '../admin/user-routes.ts';
import { subscriptionRoutes } from '../billing/subscription-routes.ts';
import { webhookRoutes } from '../billing/webhook.ts';

/** `satisfies`: a procedure of the contract without a handler here fails the build (test/types/handlers.ts). */
export const procedureHandlers = {
  ...systemProcedures,
  ...contactProcedures,
  ...userProcedures,
  ...workspaceProcedures,
  ...documentProcedures,
  ...jobProcedures,
  ...flagProcedures,
  ...systemStatusProcedures,
  ...adminOrganizationProcedures,
  ...billingProcedures,
  ...organizationProcedures,
} satisfies CompleteHandlers;

export const streamHandlers: StreamHandlers = {
  ...jobStreamProcedures,
};

export const identityHandlers = {
  ...sessionRoutes,
  ...accountRoutes,
  ...socialRoutes,
  ...organizationRoutes,
  ...teamRoutes,
  ...adminUserRoutes,
  ...subscriptionRoutes,
  ...webhookRoutes,
} satisfies CompleteAuthHandlers;
