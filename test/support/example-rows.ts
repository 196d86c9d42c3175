/**
 * The rows the contract's examples name (organization, team, workspace, document, jobs), owned by a real
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
  // The jobs of the examples' story: a failed index, its successful retry, a canceled embedding.
  // The retry is stored without its retry_of link (input.retryOf still names the failed job): a
  // failed job is retried once (0009), and the jobs.retry example, which retries that failed job,
  // must find it not yet retried.
  const jobs = (document.paths as any)['/organizations/{organizationId}/jobs'].get.responses['200'].content['application/json'].example.items as Record<string, any>[];
  for (const job of jobs.map((job): Record<string, any> => ({ ...job, retryOf: null }))) {
    await sql`insert into jobs (id, organization_id, workspace_id, document_id, kind, status, input, error_message, credits, attempt, retry_of, created_by, created_at, started_at, finished_at, updated_at)
              values (${job.id}, ${job.organizationId}, ${job.workspaceId}, ${job.documentId}, ${job.kind}, ${job.status}, ${sql.json(job.input ?? {})},
                      ${job.error?.message ?? null}, ${job.credits}, ${job.attempt}, ${job.retryOf}, ${owner.id}, ${job.createdAt}, ${job.startedAt}, ${job.finishedAt}, ${job.updatedAt})`;
  }
  return owner;
}
