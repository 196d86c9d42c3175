/**
 * Every resource a by-id operation can name in its `x-access`, with the one loader its store
 * registers (db/resource.ts). Checked against the row types the handlers are typed with
 * (context.ts, ResourceRows): a loader answering another row type does not compile.
 */
import type { ResourceName, ResourceRows } from '../context.ts';
import type { Resource, ResourceRegistry } from '../db/resource.ts';
import { documentResource } from '../documents/store.ts';
import { flagResource } from '../flags/store.ts';
import { jobResource } from '../jobs/store.ts';
import { invitationResource } from '../organizations/invitations-store.ts';
import { organizationResource } from '../organizations/store.ts';
import { teamResource } from '../organizations/teams-store.ts';
import { workspaceResource } from '../workspaces/store.ts';

const resources: { [R in ResourceName]: Resource<ResourceRows[R]> } = {
  workspace: workspaceResource,
  document: documentResource,
  team: teamResource,
  invitation: invitationResource,
  job: jobResource,
  organization: organizationResource,
  flag: flagResource,
};

export const resourceRegistry: ResourceRegistry = {
  find: (name) => (Object.hasOwn(resources, name) ? resources[name as ResourceName] : undefined),
};
