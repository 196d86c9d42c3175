/**
 * SQL of the feature flags (sql/0006_feature_flags.sql): a global default per key and
 * per-organization overrides that win over it. Flags are platform rows, changed by platform
 * admins only (admin.flags.*); system.flags reads them for anyone signed in.
 */
import type { components } from '../../generated/types.ts';
import type { Db } from '../db/db.ts';
import type { Sql } from '../db/connection.ts';
import type { Resource } from '../db/resource.ts';
import { findOrganization } from '../organizations/store.ts';

/** The contract's FeatureFlag (date-time fields are Dates). */
export type FeatureFlag = components['schemas']['FeatureFlag'];

interface FlagRow {
  key: string;
  description: string;
  enabled: boolean;
  createdAt: Date;
  updatedAt: Date;
}

interface OverrideRow {
  flagKey: string;
  organizationId: string;
  enabled: boolean;
}

const FLAG_COLUMNS = `key, description, enabled, created_at as "createdAt", updated_at as "updatedAt"`;

/** Flags with their overrides (oldest override first), in the order of `flags`. */
async function withOverrides(sql: Db, flags: FlagRow[]): Promise<FeatureFlag[]> {
  if (flags.length === 0) return [];
  const overrides = await sql<OverrideRow[]>`
    select flag_key as "flagKey", organization_id as "organizationId", enabled from feature_flag_overrides
    where flag_key in ${sql(flags.map((flag) => flag.key))}
    order by created_at, organization_id`;
  return flags.map((flag) => ({
    ...flag,
    overrides: overrides.filter((o) => o.flagKey === flag.key).map(({ organizationId, enabled }) => ({ organizationId, enabled })),
  }));
}

export async function listFlags(sql: Db): Promise<FeatureFlag[]> {
  return withOverrides(sql, await sql<FlagRow[]>`select ${sql.unsafe(FLAG_COLUMNS)} from feature_flags order by key`);
}

export async function findFlag(sql: Db, key: string): Promise<FeatureFlag | null> {
  const [flag] = await withOverrides(sql, await sql<FlagRow[]>`select ${sql.unsafe(FLAG_COLUMNS)} from feature_flags where key = ${key}`);
  return flag ?? null;
}

/** The loader of `resource: flag` operations (src/composition/resources.ts). No organizationOf: only platform admins reach flags by key. */
export const flagResource: Resource<FeatureFlag> = {
  load: (sql: Sql, key: string) => findFlag(sql, key),
  notFound: 'Feature flag not found.',
};

export interface FlagChange {
  /** The flag before the change, or null when it was created. */
  before: FlagRow | null;
  after: FlagRow;
}

/**
 * admin.flags.upsert, PUT semantics as the contract words them: fields left out take an empty
 * description and `enabled: false` on a new flag, and keep their values on an existing one.
 * `updated_at` moves only when something changed. Insert first, then lock and update: of two
 * concurrent creations exactly one reports `before: null`.
 */
export async function upsertFlag(tx: Db, key: string, fields: { description?: string | undefined; enabled?: boolean | undefined }, now: Date): Promise<FlagChange> {
  const [created] = await tx<FlagRow[]>`
    insert into feature_flags (key, description, enabled, created_at, updated_at)
    values (${key}, ${fields.description ?? ''}, ${fields.enabled ?? false}, ${now}, ${now})
    on conflict (key) do nothing
    returning ${tx.unsafe(FLAG_COLUMNS)}`;
  if (created) return { before: null, after: created };
  const [before] = await tx<FlagRow[]>`select ${tx.unsafe(FLAG_COLUMNS)} from feature_flags where key = ${key} for update`;
  // Deleted between the two statements: create it after all.
  if (!before) return upsertFlag(tx, key, fields, now);
  const description = fields.description ?? before.description;
  const enabled = fields.enabled ?? before.enabled;
  if (description === before.description && enabled === before.enabled) return { before, after: before };
  const [after] = await tx<FlagRow[]>`
    update feature_flags set description = ${description}, enabled = ${enabled}, updated_at = ${now}
    where key = ${key} returning ${tx.unsafe(FLAG_COLUMNS)}`;
  return { before, after: after! };
}

/** Deletes the flag; its overrides go with it (on delete cascade). Answers how many it had, or null when there was no flag. */
export async function deleteFlag(tx: Db, key: string): Promise<{ flag: FlagRow; overrides: number } | null> {
  const [counted] = await tx<{ count: number }[]>`select count(*)::int as count from feature_flag_overrides where flag_key = ${key}`;
  const [flag] = await tx<FlagRow[]>`delete from feature_flags where key = ${key} returning ${tx.unsafe(FLAG_COLUMNS)}`;
  return flag ? { flag, overrides: counted?.count ?? 0 } : null;
}

export type OverrideOutcome =
  | { kind: 'no-flag' }
  | { kind: 'no-organization' }
  /** `from` and `to` are the override before and after (null: none). */
  | { kind: 'done'; from: boolean | null; to: boolean | null };

/**
 * admin.flags.setOverride: forces `enabled` for one organization, or removes its override with
 * null (removing one that does not exist changes nothing). The flag's updated_at moves when an
 * override changed.
 */
export async function setOverride(tx: Db, key: string, organizationId: string, enabled: boolean | null, now: Date): Promise<OverrideOutcome> {
  // Locking the flag orders concurrent changes of its overrides (and a concurrent delete).
  const [flag] = await tx`select key from feature_flags where key = ${key} for update`;
  if (!flag) return { kind: 'no-flag' };
  if (!(await findOrganization(tx, organizationId))) return { kind: 'no-organization' };
  const [current] = await tx<{ enabled: boolean }[]>`
    select enabled from feature_flag_overrides where flag_key = ${key} and organization_id = ${organizationId}`;
  const from = current?.enabled ?? null;
  if (from === enabled) return { kind: 'done', from, to: enabled };
  if (enabled === null) {
    await tx`delete from feature_flag_overrides where flag_key = ${key} and organization_id = ${organizationId}`;
  } else {
    await tx`
      insert into feature_flag_overrides (flag_key, organization_id, enabled, created_at) values (${key}, ${organizationId}, ${enabled}, ${now})
      on conflict (flag_key, organization_id) do update set enabled = excluded.enabled`;
  }
  await tx`update feature_flags set updated_at = ${now} where key = ${key}`;
  return { kind: 'done', from, to: enabled };
}

/** system.flags: every key to its global default, or with an organization, to its override where it has one. */
export async function flagValues(sql: Db, organizationId: string | null): Promise<Record<string, boolean>> {
  const rows = await sql<{ key: string; value: boolean }[]>`
    select f.key, coalesce(o.enabled, f.enabled) as value
    from feature_flags f
    left join feature_flag_overrides o on o.flag_key = f.key and o.organization_id = ${organizationId}
    order by f.key`;
  return Object.fromEntries(rows.map((row) => [row.key, row.value]));
}
