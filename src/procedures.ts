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

export const handlers: Handlers = {
  ...systemProcedures,
  ...contactProcedures,
  ...userProcedures,
  ...workspaceProcedures,
  ...documentProcedures,
  ...jobProcedures,
};

export const streamHandlers: StreamHandlers = {
  ...jobStreamProcedures,
};
