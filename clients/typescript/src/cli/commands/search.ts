/**
 * `search <workspace> <query>`: documents.search, as a table of the best chunks, where each sits
 * (its pages, its headings) and the words that matched in [brackets].
 */
import { InvalidArgumentError, type Command } from 'commander';
import type { components } from '../../types.ts';
import { citationPlace } from '../citation-place.ts';
import { wholeNumber, withSession, type RunState } from '../command-kit.ts';
import { markHighlights } from '../highlight.ts';
import { renderTable } from '../table.ts';

type SearchFilters = components['schemas']['SearchFilters'];

interface SearchOptions {
  limit?: number;
  document?: string[];
  type?: string[];
  after?: Date;
  before?: Date;
}

/** An instant as the contract takes it (ISO 8601, e.g. 2026-11-01 or 2026-11-01T09:00:00Z). */
function instant(value: string): Date {
  const parsed = new Date(value);
  if (!/^\d{4}-\d{2}-\d{2}/.test(value) || Number.isNaN(parsed.getTime())) throw new InvalidArgumentError('expected a date or date-time such as 2026-11-01 or 2026-11-01T09:00:00Z.');
  return parsed;
}

/** Repeatable options collect into a list. */
const collect = (value: string, previous: string[] = []) => [...previous, value];

/** The options as documents.search's `filters`, or none. */
function filtersOf(options: SearchOptions): SearchFilters | undefined {
  const filters: SearchFilters = {
    ...(options.document ? { documentIds: options.document } : {}),
    ...(options.type ? { contentTypes: options.type as SearchFilters['contentTypes'] } : {}),
    ...(options.after ? { createdAfter: options.after } : {}),
    ...(options.before ? { createdBefore: options.before } : {}),
  };
  return Object.keys(filters).length > 0 ? filters : undefined;
}

export function registerSearchCommand(program: Command, state: RunState): void {
  program
    .command('search')
    .description('search the indexed documents of a workspace by meaning and by words, best matches first')
    .argument('<workspace>', 'workspace id (ws_...) or slug')
    .argument('<query...>', 'what to look for (several words need no quotes)')
    .option('--limit <n>', 'the most matches to show (1-50, default 10)', wholeNumber(50))
    .option('--document <id>', 'only in this document (repeatable, up to 100)', collect)
    .option('--type <media-type>', 'only in documents of this media type, e.g. application/pdf (repeatable)', collect)
    .option('--after <date>', 'only in documents created at or after this date', instant)
    .option('--before <date>', 'only in documents created before this date', instant)
    .addHelpText('after', '\nExamples:\n  $ workspace-api search research third quarter revenue --limit 5\n  $ workspace-api search research revenue --type application/pdf --after 2026-11-01')
    .action(
      withSession(state, async (session, workspace: string, words: string[], options: SearchOptions) => {
        const filters = filtersOf(options);
        const answer = await session.client().documents.search({
          workspaceId: await session.workspace(workspace),
          query: words.join(' '),
          ...(options.limit ? { limit: options.limit } : {}),
          ...(filters ? { filters } : {}),
        });
        session.output.result(answer, () => {
          if (answer.results.length === 0) return session.output.note('No matches (only documents indexed by a document.index job are searched).');
          const rows = answer.results.map((hit, i) => ({ ...hit, rank: i + 1, place: citationPlace(hit.citation) }));
          // WHERE only when some hit has pages or headings: plain-text answers keep their width for the text.
          const where = rows.some((hit) => hit.place !== '') ? [{ header: 'WHERE', value: (hit: (typeof rows)[number]) => hit.place, shrink: true }] : [];
          session.output.line(
            renderTable(
              rows,
              [
                { header: '#', value: (hit) => String(hit.rank), right: true },
                { header: 'SCORE', value: (hit) => hit.score.toFixed(4), right: true },
                { header: 'DOCUMENT', value: (hit) => hit.documentName, shrink: true },
                { header: 'CHUNK', value: (hit) => String(hit.index), right: true },
                ...where,
                { header: 'TEXT', value: (hit) => markHighlights(hit.text, hit.highlights), shrink: true },
              ],
              session.output.columns,
            ),
          );
        });
      }),
    );
}
