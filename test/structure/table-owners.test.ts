/**
 * One owner per table (docs/architecture.md, "Stores"): every table the migrations create is
 * written (INSERT, UPDATE, DELETE) by exactly one module of src/, the one named here, and every
 * other module reads or changes it through that module's functions. A new table needs a line
 * here; a second writer fails this test.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));

const owners: Record<string, string> = {
  users: 'src/auth/users-store.ts',
  accounts: 'src/auth/accounts-store.ts',
  sessions: 'src/auth/sessions-store.ts',
  verification_tokens: 'src/auth/verification-tokens-store.ts',
  organizations: 'src/organizations/store.ts',
  members: 'src/organizations/members-store.ts',
  invitations: 'src/organizations/invitations-store.ts',
  teams: 'src/organizations/teams-store.ts',
  team_members: 'src/organizations/teams-store.ts',
  workspaces: 'src/workspaces/store.ts',
  documents: 'src/documents/store.ts',
  document_texts: 'src/documents/text-store.ts',
  document_chunks: 'src/documents/text-store.ts',
  jobs: 'src/jobs/store.ts',
  job_events: 'src/jobs/events-store.ts',
  credit_ledger: 'src/credits/credit-ledger.ts',
  feature_flags: 'src/flags/store.ts',
  feature_flag_overrides: 'src/flags/store.ts',
  audit_log: 'src/audit/store.ts',
  subscriptions: 'src/billing/subscriptions-store.ts',
  stripe_events: 'src/billing/stripe-events-store.ts',
  rate_limits: 'src/auth/shared-rate-limit.ts',
  stream_leases: 'src/jobs/stream-leases.ts',
  idempotency_keys: 'src/idempotency/store.ts',
  background_migrations: 'src/jobs/background-migrations-store.ts',
  job_documents: 'src/jobs/job-documents-store.ts',
};

/** The tables the migrations create. */
function migratedTables(): string[] {
  const dir = join(root, 'sql');
  const tables = new Set<string>();
  for (const file of readdirSync(dir).filter((name) => name.endsWith('.sql'))) {
    for (const match of readFileSync(join(dir, file), 'utf8').matchAll(/create\s+(?:unlogged\s+)?table\s+(?:if\s+not\s+exists\s+)?([a-z_]+)/gi)) tables.add(match[1]!.toLowerCase());
  }
  return [...tables].sort();
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/**
 * Which modules write each table: the SQL statements are the template literals (postgres.js
 * tagged templates); a write names its table right after INSERT INTO, UPDATE or DELETE FROM.
 */
function writers(): Map<string, Set<string>> {
  const found = new Map<string, Set<string>>();
  for (const path of sourceFiles(join(root, 'src'))) {
    const file = relative(root, path);
    for (const literal of readFileSync(path, 'utf8').matchAll(/`[^`]*`/g)) {
      for (const write of literal[0].matchAll(/\b(?:insert\s+into|update|delete\s+from)\s+([a-z_]+)\b/gi)) {
        const table = write[1]!.toLowerCase();
        if (!found.has(table)) found.set(table, new Set());
        found.get(table)!.add(file);
      }
    }
  }
  return found;
}

describe('one owner per table', () => {
  const tables = migratedTables();
  const written = writers();

  it('names an owner for every table the migrations create, and no other', () => {
    expect(Object.keys(owners).sort()).toEqual(tables);
  });

  it.each(tables)('%s is written only by its owner', (table) => {
    expect([...(written.get(table) ?? [])].sort()).toEqual([owners[table]]);
  });

  it('finds the writes it looks for (a write in an owner is seen)', () => {
    // Guards the scanner itself: were it to find nothing, every table above would fail for want of
    // its owner, not pass.
    expect(written.get('jobs')).toContain('src/jobs/store.ts');
  });
});
