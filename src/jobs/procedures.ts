/**
 * jobs.list, get, create, cancel, retry. Access is the binding layer's (by-id operations get their
 * row in ctx.row); these only apply the job rules: a job works on a ready document of its own
 * organization, only queued jobs cancel, only failed ones retry, and an organization has at most
 * MAX_QUEUED_JOBS_PER_ORGANIZATION queued jobs. jobs.stream is in stream.ts.
 */
import type { Context, Handlers } from '../context.ts';
import { ApiError } from '../contract/errors.ts';
import { findDocument } from '../documents/store.ts';
import { decodeCursor, encodeCursor } from '../pagination/cursor.ts';
import type { NewJob } from './lifecycle.ts';
import { creditsFor } from '../credits/pricing.ts';
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
    const document = await findDocument(ctx.services.db.sql, input.documentId);
    if (!document || document.organizationId !== input.organizationId) throw new ApiError('NOT_FOUND', { message: 'Document not found.' });
    if (document.status !== 'ready') throw new ApiError('PRECONDITION_FAILED', { message: "The document's upload is not complete." });
    return toJob(await enqueue(ctx, { ...base, workspaceId: document.workspaceId, documentId: document.id, input: {} }));
  },

  'jobs.cancel': async (_input, ctx) => {
    const canceled = await ctx.services.jobs.cancel(ctx.row.id, ctx.services.now());
    if (!canceled) throw new ApiError('CONFLICT', { message: `Only queued jobs can be canceled; this one is ${ctx.row.status}.` });
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
      }),
    );
  },
} satisfies Handlers;

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
