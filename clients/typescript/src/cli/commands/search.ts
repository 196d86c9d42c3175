/** `search <workspace> <query>`: documents.search, as a table of the best chunks. */
import type { Command } from 'commander';
import { wholeNumber, withSession, type RunState } from '../command-kit.ts';
import { renderTable } from '../table.ts';

export function registerSearchCommand(program: Command, state: RunState): void {
  program
    .command('search')
    .description('search the indexed documents of a workspace by meaning and by words, best matches first')
    .argument('<workspace>', 'workspace id (ws_...) or slug')
    .argument('<query...>', 'what to look for (several words need no quotes)')
    .option('--limit <n>', 'the most matches to show (1-50, default 10)', wholeNumber(50))
    .addHelpText('after', '\nExample:\n  $ workspace-api search research third quarter revenue --limit 5')
    .action(withSession(state, async (session, workspace: string, words: string[], options: { limit?: number }) => {
      const answer = await session.client().documents.search({ workspaceId: await session.workspace(workspace), query: words.join(' '), ...(options.limit ? { limit: options.limit } : {}) });
      session.output.result(answer, () => {
        if (answer.results.length === 0) return session.output.note('No matches (only documents indexed by a document.index job are searched).');
        session.output.line(renderTable(answer.results.map((hit, i) => ({ ...hit, rank: i + 1 })), [
          { header: '#', value: (hit) => String(hit.rank), right: true },
          { header: 'SCORE', value: (hit) => hit.score.toFixed(4), right: true },
          { header: 'DOCUMENT', value: (hit) => hit.documentName, shrink: true },
          { header: 'CHUNK', value: (hit) => String(hit.index), right: true },
          { header: 'TEXT', value: (hit) => hit.text, shrink: true },
        ], session.output.columns));
      });
    }));
}
