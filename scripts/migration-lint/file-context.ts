/**
 * What the checks of one statement need to know about the file around it and the history before it.
 */
import type { ReleaseSource } from './previous-release.ts';

export interface FileContext {
  /** True when the table held rows before this file ran: the lock rules apply to it. */
  existing(table: string): boolean;
  /** The table as a finding names it: with the migration that created it. */
  describe(table: string): string;
  /** True when a valid CHECK (column IS NOT NULL) lets SET NOT NULL skip its scan. */
  provenNotNull(table: string, column: string): boolean;
  /** The previous release's source: what it still mentions must not be dropped or renamed yet. */
  source: ReleaseSource;
  /** `table.constraint` of the constraints this file added NOT VALID so far (validate-same-file). */
  notValidHere: Set<string>;
}

/** The rewrite that several rules prevent, in the words every such finding uses. */
export const REWRITE_LOCK = 'rewrites the whole table under an ACCESS EXCLUSIVE lock: every read and write of it waits until that ends';
