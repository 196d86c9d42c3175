/**
 * Every resource a by-id operation can name in its `x-access` (`tenant: row, resource: <name>`),
 * with its one loader, registered next to its store. The binding layer loads the row through it,
 * answers 404 when there is none and 403 when the caller lacks the declared permission in the
 * row's organization, then hands the row to the handler as `ctx.row`.
 */
import type { Sql } from './db/connection.ts';
import { documentResource } from './documents/store.ts';
import { flagResource } from './flags/store.ts';
import { jobResource } from './jobs/store.ts';
import { invitationResource } from './organizations/invitations-store.ts';
import { organizationResource } from './organizations/store.ts';
import { teamResource } from './organizations/teams-store.ts';
import { workspaceResource } from './workspaces/store.ts';

export interface Resource<Row> {
  /** The row with this id, or null when there is none (ids of any shape: the contract validated them). */
  load(sql: Sql, id: string): Promise<Row | null>;
  /** The organization that owns the row, where access is decided; absent for rows only platform admins reach (flags). */
  organizationOf?(row: Row): string;
  /** The message of the 404 when the row does not exist. */
  notFound: string;
}

export const resources = {
  workspace: workspaceResource,
  document: documentResource,
  team: teamResource,
  invitation: invitationResource,
  job: jobResource,
  organization: organizationResource,
  flag: flagResource,
} satisfies Record<string, Resource<any>>;

export type ResourceName = keyof typeof resources;
/** The row type each resource's loader answers. */
export type ResourceRow<R extends ResourceName> = (typeof resources)[R] extends Resource<infer Row> ? Row : never;

export function findResource(name: string): Resource<unknown> | undefined {
  return Object.hasOwn(resources, name) ? (resources[name as ResourceName] as Resource<unknown>) : undefined;
}
