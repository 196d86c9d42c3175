/** The workspaces table: the only module that writes it. Rows come back camelCase, in the contract's shape. */
import type { Sql } from '../db/connection.ts';
import type { components } from '../../generated/types.ts';
import type { Resource } from '../db/resource.ts';
import { storageKey } from '../storage/driver.ts';
import { lockOrganization } from '../organizations/store.ts';

/** The contract's Workspace (createdAt is a Date, see codegen/types.ts). */
export type Workspace = components['schemas']['Workspace'];

// A constant list, so `unsafe` injects nothing from outside.
const COLUMNS = 'id, organization_id as "organizationId", team_id as "teamId", name, slug, created_at as "createdAt"';

export async function listWorkspaces(sql: Sql, organizationId: string): Promise<Workspace[]> {
  return sql<Workspace[]>`select ${sql.unsafe(COLUMNS)} from workspaces where organization_id = ${organizationId} order by created_at, id`;
}

export async function findWorkspace(sql: Sql, id: string): Promise<Workspace | null> {
  const [row] = await sql<Workspace[]>`select ${sql.unsafe(COLUMNS)} from workspaces where id = ${id}`;
  return row ?? null;
}

/** The loader of `resource: workspace` operations (src/composition/resources.ts). */
export const workspaceResource: Resource<Workspace> = {
  load: findWorkspace,
  organizationOf: (workspace) => workspace.organizationId,
  notFound: 'Workspace not found.',
};

export async function findWorkspaceBySlug(sql: Sql, organizationId: string, slug: string): Promise<Workspace | null> {
  const [row] = await sql<Workspace[]>`select ${sql.unsafe(COLUMNS)} from workspaces where organization_id = ${organizationId} and slug = ${slug}`;
  return row ?? null;
}

/**
 * Inserts unless the plan's workspace limit is reached, in one statement: the count and the insert
 * happen together, so two concurrent creates cannot both slip under the limit. Answers null when
 * the limit stopped it; a taken slug raises the unique violation.
 */
export async function insertWorkspace(sql: Sql, row: Omit<Workspace, 'createdAt'> & { now: Date; limit: number | null }): Promise<Workspace | null> {
  return sql.begin<Workspace | null>(async (tx) => {
    if (row.limit !== null) {
      // Serializes creates per organization so the count below stays true until commit.
      await lockOrganization(tx, row.organizationId);
      const [counted] = await tx<{ count: number }[]>`select count(*)::int as count from workspaces where organization_id = ${row.organizationId}`;
      if (counted!.count >= row.limit) return null;
    }
    const [created] = await tx<Workspace[]>`
      insert into workspaces (id, organization_id, team_id, name, slug, created_at, updated_at)
      values (${row.id}, ${row.organizationId}, ${row.teamId}, ${row.name}, ${row.slug}, ${row.now}, ${row.now})
      returning ${tx.unsafe(COLUMNS)}`;
    return created!;
  });
}

export async function updateWorkspace(sql: Sql, id: string, changes: { name?: string; slug?: string; teamId?: string | null }, now: Date): Promise<Workspace> {
  const set: Record<string, unknown> = { updated_at: now };
  if (changes.name !== undefined) set.name = changes.name;
  if (changes.slug !== undefined) set.slug = changes.slug;
  if (changes.teamId !== undefined) set.team_id = changes.teamId;
  const [row] = await sql<Workspace[]>`update workspaces set ${sql(set)} where id = ${id} returning ${sql.unsafe(COLUMNS)}`;
  return row!;
}

/** Bytes stored by a workspace's documents (pending ones count with their declared size) and their extracted text. */
export async function workspaceUsage(sql: Sql, workspaceId: string): Promise<number> {
  const [row] = await sql<{ used: string }[]>`select coalesce(sum(size + text_bytes), 0)::text as used from documents where workspace_id = ${workspaceId}`;
  return Number(row!.used);
}

/** The storage keys of the workspace's documents (workspaces.delete removes their objects before the rows). */
export async function documentKeys(sql: Sql, workspaceId: string): Promise<string[]> {
  const rows = await sql<{ organizationId: string; id: string }[]>`select organization_id as "organizationId", id from documents where workspace_id = ${workspaceId}`;
  return rows.map((row) => storageKey(row.organizationId, row.id));
}

/**
 * Deletes the workspace (its documents cascade) and answers the storage keys of those documents,
 * read in the same transaction, so a document created or completed meanwhile is not missed.
 */
export async function deleteWorkspace(sql: Sql, id: string): Promise<string[]> {
  return sql.begin<string[]>(async (tx) => {
    const rows = await tx<{ organizationId: string; id: string }[]>`select organization_id as "organizationId", id from documents where workspace_id = ${id} for update`;
    await tx`delete from workspaces where id = ${id}`;
    return rows.map((row) => storageKey(row.organizationId, row.id));
  });
}

/** The slug is unique per organization: this constraint is the one a taken slug trips. */
export const SLUG_CONSTRAINT = 'workspaces_organization_id_slug_key';
