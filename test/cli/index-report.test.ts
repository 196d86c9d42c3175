/**
 * How the CLI words a workspace.index job, without a server: the summary of its result, its final
 * line when it succeeded or was canceled part way, and the table of the documents that failed.
 */
import { describe, expect, it } from 'vitest';
import { failuresTable, indexSummary } from '../../clients/typescript/src/cli/index-report.ts';
import type { Job } from '../../clients/typescript/src/cli/job-follow.ts';
import { finalLine } from '../../clients/typescript/src/cli/job-watch.ts';

const result = { documents: 3, indexed: 2, unchanged: 0, gone: 0, failed: 1, chunks: 7, model: 'all-MiniLM-L6-v2', failures: [] };

describe('indexSummary', () => {
  it.each([
    { given: result, want: '2 of 3 documents indexed, 1 failed; 7 chunks embedded with all-MiniLM-L6-v2' },
    {
      given: { ...result, documents: 2000, indexed: 1500, unchanged: 498, failed: 2, chunks: 4411 },
      want: '1 998 of 2 000 documents indexed (498 already up to date), 2 failed; 4 411 chunks embedded with all-MiniLM-L6-v2',
    },
    { given: { ...result, documents: 1, indexed: 0, failed: 0, gone: 1, chunks: 0 }, want: '0 of 1 document indexed, 1 deleted meanwhile; 0 chunks embedded with all-MiniLM-L6-v2' },
    { given: { ...result, documents: 1, indexed: 1, failed: 0, chunks: 1 }, want: '1 of 1 document indexed; 1 chunk embedded with all-MiniLM-L6-v2' },
    { given: { ...result, documents: 0, indexed: 0, failed: 0, chunks: 0 }, want: 'nothing to index: every ready document is indexed with all-MiniLM-L6-v2' },
  ])('$want', ({ given, want }) => {
    expect(indexSummary(given)).toBe(want);
  });
});

describe('finalLine of a workspace.index job', () => {
  const job = (changes: Partial<Job>): Job => ({
    id: 'job_s6kc6o6oya7vngcngsuu4stu',
    organizationId: 'org_pycdybk377oxtzq6svizx3or',
    workspaceId: 'ws_i5xx2bzn3kir2gshyl7sn5pk',
    documentId: null,
    kind: 'workspace.index',
    status: 'succeeded',
    error: null,
    credits: 6,
    attempt: 1,
    retryOf: null,
    createdBy: null,
    createdAt: new Date('2026-11-21T09:16:00.000Z'),
    startedAt: new Date('2026-11-21T09:16:00.000Z'),
    finishedAt: new Date('2026-11-21T09:16:12.300Z'),
    updatedAt: new Date('2026-11-21T09:16:12.300Z'),
    ...changes,
  });

  it.each([
    {
      given: job({ result, progress: { documents: 3, done: 3, failed: 1 } }),
      want: 'Job job_s6kc6o6oya7vngcngsuu4stu (workspace.index) succeeded in 12.3 s: 2 of 3 documents indexed, 1 failed; 7 chunks embedded with all-MiniLM-L6-v2.',
    },
    {
      given: job({ status: 'canceled', progress: { documents: 2000, done: 1250, failed: 1 } }),
      want: 'Job job_s6kc6o6oya7vngcngsuu4stu (workspace.index) was canceled after 1 250 of 2 000 documents (what it indexed stays indexed).',
    },
    { given: job({ status: 'canceled', progress: { documents: 3, done: 0, failed: 0 } }), want: 'Job job_s6kc6o6oya7vngcngsuu4stu (workspace.index) was canceled.' },
    {
      given: job({ status: 'failed', error: { message: 'The AI service is unavailable, try again later.' } }),
      want: 'Job job_s6kc6o6oya7vngcngsuu4stu (workspace.index) failed after 12.3 s: The AI service is unavailable, try again later.',
    },
  ])('$want', ({ given, want }) => {
    expect(finalLine(given, false)).toBe(want);
  });
});

describe('failuresTable', () => {
  it('lists id, name and reason; a document deleted since has no name', () => {
    const table = failuresTable(
      [
        { documentId: 'doc_zjli6ufh3reosfhypn5nwk2d', name: 'broken.pdf', message: 'The PDF could not be read.' },
        { documentId: 'doc_aaaaaaaaaaaaaaaaaaaaaaaa', name: undefined, message: 'The document is empty.' },
      ],
      undefined,
    );
    expect(table.split('\n')).toEqual([
      'DOCUMENT                      NAME        REASON',
      'doc_zjli6ufh3reosfhypn5nwk2d  broken.pdf  The PDF could not be read.',
      'doc_aaaaaaaaaaaaaaaaaaaaaaaa  -           The document is empty.',
    ]);
  });
});
