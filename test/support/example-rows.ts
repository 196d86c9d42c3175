/**
 * The rows the contract's examples name (organization, team, workspace, document), owned by a real
 * signed-in user, so the examples a mock answers with are also real on the server.
 */
import document from '../../generated/openapi.json' with { type: 'json' };
import type { TestServer } from './server.ts';
import { addMembership, createUser, type TestUser } from './users.ts';

export async function seedExamples(server: TestServer, options: { role?: 'admin' | null } = {}): Promise<TestUser> {
  const owner = await createUser(server.db, { role: options.role ?? null });
  const { sql } = server.db;
  const schemas = document.components.schemas as unknown as Record<string, { examples: Record<string, any>[] }>;
  const example = (schema: string) => schemas[schema]!.examples[0]!;
  const workspace = example('Workspace');
  const doc = example('Document');
  await sql`insert into organizations (id, name, slug) values (${workspace.organizationId}, 'Acme Corp', 'acme')`;
  await addMembership(server.db, owner, 'owner', workspace.organizationId);
  await sql`insert into teams (id, organization_id, name) values (${workspace.teamId}, ${workspace.organizationId}, 'Research team')`;
  await sql`insert into workspaces (id, organization_id, team_id, name, slug) values (${workspace.id}, ${workspace.organizationId}, ${workspace.teamId}, ${workspace.name}, ${workspace.slug})`;
  await sql`insert into documents (id, organization_id, workspace_id, uploaded_by, name, content_type, size, status)
            values (${doc.id}, ${doc.organizationId}, ${doc.workspaceId}, ${owner.id}, ${doc.name}, ${doc.contentType}, ${doc.size}, 'ready')`;
  return owner;
}
