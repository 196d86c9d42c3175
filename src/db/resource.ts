/**
 * What a by-id operation's `x-access` (`tenant: row, resource: <name>`) needs of a table: its one
 * loader, written next to the table's store. The registry of every resource is assembled at the
 * composition root (src/composition/resources.ts); the binding layer loads the row through it,
 * answers 404 when there is none and 403 when the caller lacks the declared permission in the
 * row's organization, then hands the row to the handler as `ctx.row`.
 */
import type { Sql } from './connection.ts';

export interface Resource<Row> {
  /** The row with this id, or null when there is none (ids of any shape: the contract validated them). */
  load(sql: Sql, id: string): Promise<Row | null>;
  /** The organization that owns the row, where access is decided; absent for rows only platform admins reach (flags). */
  organizationOf?(row: Row): string;
  /** The message of the 404 when the row does not exist. */
  notFound: string;
}

/** Finds a resource by the name the contract gives it; undefined for a name nothing registered. */
export interface ResourceRegistry {
  find(name: string): Resource<unknown> | undefined;
}
