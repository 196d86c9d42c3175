/**
 * jobs.list, get, create, cancel, retry. Access is the binding layer's (by-id operations get their
 * row in ctx.row); these only apply the job rules: a job works on a ready document of its own
 * organization (workspace.index: a workspace of it), only queued jobs cancel (and running workspace.index ones), only failed ones retry, and an organization has at most
 * MAX_QUEUED_JOBS_PER_ORGANIZATION queued jobs. jobs.stream is in stream.ts.
 */
import type { Context, Handlers } from '../context.ts';
import { ApiError } from '../contract/errors.ts';
import { findDocument } from '../documents/store.ts';
import { decodeCursor, encodeCursor } from '../pagination/cursor.ts';
import type { NewJob } from './lifecycle.ts';
import { creditsFor, priceDocuments } from '../credits/pricing.ts';
import { findWorkspace } from '../workspaces/store.ts';
import { currentModel } from './embed-chunks.ts';
import { documentsToIndex } from './job-documents-store.ts';
import { pageJobs, toJob, type JobRow } from './store.ts';

export const jobProcedures = {
  'jobs.list': async (input, ctx) => {
    const { secret, db } = ctx.services;
    const after = input.cursor ? decodeCursor(secret, input.cursor, input.organizationId) : null;
    const page = await pageJobs(db.sql, input.organizationId, input, input.limit ?? 25, after);
    return {
      items: page.items.map((row) => toJob(row, { includeResult: input.includeResult ?? false })),
      nextCursor: page.last ? encodeCursor(secret, { at: page.last.cursorAt, id: page.last.id }, input.organizationId) : null,
    };
  },

  'jobs.get': (_input, ctx) => toJob(ctx.row),

  'jobs.create': async (input, ctx) => {
    const base = { organizationId: input.organizationId, kind: input.kind, createdBy: ctx.principal?.userId ?? null, retryOf: null };
    if (input.kind === 'text.embed') {
      return toJob(await enqueue(ctx, { ...base, workspaceId: null, documentId: null, input: input.input }));
    }
    if (input.kind === 'workspace.index') {
      const workspace = await findWorkspace(ctx.services.db.sql, input.workspaceId);
      if (!workspace || workspace.organizationId !== input.organizationId) throw new ApiError('NOT_FOUND', { message: 'Workspace not found.' });
      return toJob(await enqueue(ctx, { ...base, workspaceId: workspace.id, documentId: null, input: {}, documents: await workspaceDocuments(ctx, workspace.id) }));
    }
    const document = await findDocument(ctx.services.db.sql, input.documentId);
    if (!document || document.organizationId !== input.organizationId) throw new ApiError('NOT_FOUND', { message: 'Document not found.' });
    if (document.status !== 'ready') throw new ApiError('PRECONDITION_FAILED', { message: "The document's upload is not complete." });
    return toJob(await enqueue(ctx, { ...base, workspaceId: document.workspaceId, documentId: document.id, input: {} }));
  },

  'jobs.cancel': async (_input, ctx) => {
    const canceled = await ctx.services.jobs.cancel(ctx.row.id, ctx.services.now());
    if (!canceled) {
      const which = ctx.row.kind === 'workspace.index' ? 'Only queued or running workspace.index jobs' : 'Only queued jobs';
      throw new ApiError('CONFLICT', { message: `${which} can be canceled; this one is ${ctx.row.status}.` });
    }
    return toJob(canceled);
  },

  'jobs.retry': async (_input, ctx) => {
    const failed = ctx.row;
    if (failed.status !== 'failed') throw new ApiError('CONFLICT', { message: `Only failed jobs can be retried; this one is ${failed.status}.` });
    const { retryOf: _previous, ...input } = failed.input;
    return toJob(
      await enqueue(ctx, {
        organizationId: failed.organizationId,
        workspaceId: failed.workspaceId,
        documentId: failed.documentId,
        kind: failed.kind,
        input: { ...input, retryOf: failed.id },
        createdBy: ctx.principal?.userId ?? null,
        retryOf: failed.id,
        // A retry works on what is still to index now, priced now.
        ...(failed.kind === 'workspace.index' && failed.workspaceId ? { documents: await workspaceDocuments(ctx, failed.workspaceId) } : {}),
      }),
    );
  },
} satisfies Handlers;

/** A workspace.index job's documents: the workspace's ready ones not indexed with the current model, priced (job-documents-store.ts). */
async function workspaceDocuments(ctx: Context<unknown>, workspaceId: string) {
  return priceDocuments(await documentsToIndex(ctx.services.db.sql, workspaceId, await currentModel(ctx.services.ai)));
}

/**
 * Prices the job, then creates and queues it (charging its credits), within the organization's cap
 * on queued jobs (429 past it: lifecycle.ts create).
 */
async function enqueue(ctx: Context<unknown>, unpriced: Omit<NewJob, 'credits'>): Promise<JobRow> {
  const { services } = ctx;
  const plan = await services.plans.limitsFor(unpriced.organizationId);
  const job = { ...unpriced, credits: await creditsFor(services.db.sql, unpriced) };
  return services.jobs.create(job, {
    now: services.now(),
    plan,
    maxQueued: services.config.worker.maxQueuedPerOrganization,
    ...(job.retryOf && ctx.principal ? { retriedBy: ctx.principal } : {}),
  });
}
