/**
 * documents.search: embeds the query with the AI service, then answers the workspace's chunks of
 * that model, ranked by meaning and words together (chunk-search.ts). 30 searches per minute per
 * user; the embedding gets 10 seconds;
 * a query that cannot be embedded answers 503 with a generic message (the detail is logged). A
 * search costs one AI credit unless the embedding came from the local provider, charged only
 * once the query is embedded, atomically against the plan (credits/credit-ledger.ts).
 */
import type { Handler } from '../context.ts';
import { ApiError } from '../contract/errors.ts';
import { AiServiceError, LOCAL_EMBEDDING_MODEL } from '../ai-service/client.ts';
import { refusal } from '../auth/rate-limit.ts';
import { charge } from '../credits/credit-ledger.ts';
import { findWorkspace } from '../workspaces/store.ts';
import { searchChunks } from './chunk-search.ts';
import { payerOf } from '../organizations/payer.ts';

export const SEARCH_TIMEOUT_MS = 10_000;
export const SEARCH_LIMIT_MESSAGE = 'Too many searches, try again in a minute.';

export const search: Handler<'documents.search'> = async (input, ctx) => {
  const { services } = ctx;
  const limited = await refusal(services.limiters.search, ctx.principal!.userId, SEARCH_LIMIT_MESSAGE);
  if (limited) throw limited;
  const workspace = await findWorkspace(services.db.sql, input.workspaceId);
  if (!workspace) throw new ApiError('NOT_FOUND', { message: 'Workspace not found.' });

  // Its payer takes the turn in the AI service's queries lane (organizations/payer.ts).
  const plan = await services.plans.limitsFor(workspace.organizationId);
  const payer = await payerOf(services.db.sql, workspace.organizationId, plan);
  let embedded: { vectors: number[][]; model: string };
  try {
    embedded = await services.ai.embed([input.query], { timeoutMs: SEARCH_TIMEOUT_MS, organizationId: workspace.organizationId, payer, purpose: 'query' });
  } catch (error: unknown) {
    if (!(error instanceof AiServiceError)) throw error;
    ctx.log.warn({ err: error, detail: error.detail }, 'search query could not be embedded');
    throw new ApiError('SERVICE_UNAVAILABLE', { message: 'The AI service is unavailable, try again later.' });
  }
  if (embedded.model !== LOCAL_EMBEDDING_MODEL) {
    await services.db.sql.begin((tx) => charge(tx, { organizationId: workspace.organizationId, amount: 1, reason: 'search', jobId: null, now: services.now(), plan }));
  }
  const results = await searchChunks(
    services.db.sql,
    {
      workspaceId: workspace.id,
      model: embedded.model,
      text: input.query,
      vector: embedded.vectors[0]!,
      limit: input.limit ?? 10,
      filters: input.filters,
    },
    services.config.searchRanking,
  );
  return { model: embedded.model, results };
};
