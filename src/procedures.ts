/** Every procedure's handler, keyed by procedure name, gathered from the group folders. */
import type { Handlers } from './context.ts';
import type { StreamHandlers } from './http/streams.ts';
import { contactProcedures } from './contact/procedures.ts';
import { systemProcedures } from './system/procedures.ts';

export const handlers: Handlers = {
  ...systemProcedures,
  ...contactProcedures,
};

export const streamHandlers: StreamHandlers = {};
