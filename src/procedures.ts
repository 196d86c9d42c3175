/** Every procedure's handler, keyed by procedure name, gathered from the group folders. */
import type { Handlers } from './context.ts';
import type { StreamHandlers } from './context.ts';
import { contactProcedures } from './contact/procedures.ts';
import { systemProcedures } from './system/procedures.ts';
import { userProcedures } from './user/procedures.ts';
import { workspaceProcedures } from './workspaces/procedures.ts';
import { documentProcedures } from './documents/procedures.ts';
import { jobProcedures } from './jobs/procedures.ts';
import { jobStreamProcedures } from './jobs/stream.ts';
import { flagProcedures } from './admin/flag-procedures.ts';
import { systemStatusProcedures } from './admin/system-status.ts';
import { adminOrganizationProcedures } from './admin/organization-procedures.ts';
import { billingProcedures } from './billing/procedures.ts';
import { organizationProcedures } from './organizations/procedures.ts';

export const handlers: Handlers = {
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
};

export const streamHandlers: StreamHandlers = {
  ...jobStreamProcedures,
};
