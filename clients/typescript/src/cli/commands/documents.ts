/** `documents list|upload|download|text|delete`; `upload --index` also indexes the file and follows the job. */
import { createWriteStream } from 'node:fs';
import { rename, rm, stat } from 'node:fs/promises';
import { basename } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Command } from 'commander';
import { ApiClientError } from '../../index.ts';
import { wholeNumber, withSession, type RunState } from '../command-kit.ts';
import { contentTypeOf, KNOWN_EXTENSIONS } from '../content-types.ts';
import { CliError, ExitCode, usageError } from '../exit-codes.ts';
import { bytes, date } from '../format.ts';
import { createJob, finalLine, watchJob } from '../job-watch.ts';
import { uploadProgress } from '../progress.ts';
import type { Client } from '../session.ts';
import { renderTable } from '../table.ts';
import { putFile } from '../upload.ts';

type ContentType = Parameters<Client['documents']['createUpload']>[0]['contentType'];

export function registerDocumentCommands(program: Command, state: RunState): void {
  const documents = program.command('documents').helpCommand(false).description('upload, list, read, download and delete the documents of a workspace');

  documents
    .command('list')
    .description('list the documents of a workspace, newest first')
    .argument('<workspace>', 'workspace id (ws_...) or slug')
    .option('--limit <n>', 'documents per page (1-100)', wholeNumber(100))
    .option('--cursor <cursor>', 'the page after the one that printed this cursor')
    .action(
      withSession(state, async (session, workspace: string, options: { limit?: number; cursor?: string }) => {
        const organizationId = await session.organization();
        const page = await session.client().documents.list({
          organizationId,
          workspaceId: await session.workspace(workspace),
          ...(options.limit ? { limit: options.limit } : {}),
          ...(options.cursor ? { cursor: options.cursor } : {}),
        });
        session.output.result(page, () => {
          if (page.items.length === 0) session.output.note('No documents.');
          else {
            session.output.line(
              renderTable(
                page.items,
                [
                  { header: 'ID', value: (d) => d.id },
                  { header: 'NAME', value: (d) => d.name, shrink: true },
                  { header: 'TYPE', value: (d) => d.contentType, shrink: true },
                  { header: 'SIZE', value: (d) => bytes(d.size), right: true },
                  { header: 'STATUS', value: (d) => (d.indexedAt ? 'indexed' : d.extracted ? 'extracted' : d.status) },
                  { header: 'CREATED', value: (d) => date(d.createdAt) },
                ],
                session.output.columns,
              ),
            );
          }
          session.output.note(`Storage: ${bytes(page.storage.usedBytes)} used${page.storage.limitBytes === null ? '' : ` of ${bytes(page.storage.limitBytes)}`}.`);
          if (page.nextCursor) session.output.note(`More: --cursor ${page.nextCursor}`);
        });
      }),
    );

  documents
    .command('upload')
    .description('upload a file into a workspace: create the upload, send the bytes (with a progress bar), complete it; with --index, index it for search')
    .argument('<workspace>', 'workspace id (ws_...) or slug')
    .argument('<file>', 'the file to upload')
    .option('--name <name>', "the document's name (default: the file's name)")
    .option('--content-type <type>', `the media type (default: from the extension, one of ${KNOWN_EXTENSIONS.join(' ')})`)
    .option('--index', 'then run a document.index job (it extracts the text first) and follow it to its end')
    .option('--extract', 'then run a document.extract job (the text only, not searchable yet) and follow it to its end')
    .addHelpText(
      'after',
      `
With --index or --extract the exit code is ${ExitCode.jobFailed} when the job fails (the document stays
uploaded), and --json prints { "document": ..., "job": ... }. Examples:
  $ workspace-api documents upload research ./q3-report.pdf --index
  $ workspace-api documents upload research ./q3-report.pdf --json | jq -r .id`,
    )
    .action(
      withSession(state, async (session, workspace: string, file: string, options: { name?: string; contentType?: string; index?: boolean; extract?: boolean }) => {
        if (options.index && options.extract) throw usageError('Pass --index or --extract, not both: indexing extracts the text first.');
        const contentType = options.contentType ?? contentTypeOf(file);
        if (!contentType) throw usageError(`Cannot tell the media type of ${file} from its extension: pass --content-type.`);
        const size = await fileSize(file);
        const client = session.client();
        const organizationId = await session.organization();
        const name = options.name ?? basename(file);
        const { document, upload } = await client.documents.createUpload({ organizationId, workspaceId: await session.workspace(workspace), name, contentType: contentType as ContentType, size });
        const progress = uploadProgress(session.output, name, size);
        try {
          await putFile(upload, file, size, (sent) => progress.update(sent));
        } finally {
          progress.stop();
        }
        const completed = await client.documents.complete({ id: document.id });
        const uploaded = `Uploaded ${completed.name} (${bytes(completed.size)}) as ${completed.id}.`;
        const kind = options.index ? 'document.index' : options.extract ? 'document.extract' : undefined;
        if (!kind) return session.output.result(completed, () => session.output.line(uploaded));
        // Said at once: the job may take minutes, and the document is there whatever it ends in.
        if (!session.output.json) session.output.line(uploaded);
        const queued = await createJob(session, { organizationId, kind, documentId: completed.id });
        const job = await watchJob(session, queued.id);
        session.output.result({ document: completed, job }, () => session.output.line(finalLine(job, session.output.interactive)));
        if (job.status !== 'succeeded') state.exitCode = ExitCode.jobFailed;
      }),
    );

  documents
    .command('download')
    .description("download a document's bytes to a file, or to stdout")
    .argument('<document>', 'document id (doc_...)')
    .option('-o, --output <file>', 'write to this file (default: stdout, which must not be a terminal)')
    .addHelpText('after', '\nExamples:\n  $ workspace-api documents download doc_... -o report.pdf\n  $ workspace-api documents download doc_... > report.pdf')
    .action(
      withSession(state, async (session, id: string, options: { output?: string }) => {
        if (!options.output && session.output.json) throw usageError('With --json, stdout carries the JSON answer: pass --output <file>.');
        if (!options.output && process.stdout.isTTY) throw usageError('Refusing to write a document to the terminal: pass --output <file> or redirect stdout.');
        const client = session.client();
        const { url } = await client.documents.downloadUrl({ id });
        const response = await fetch(url).catch((error: unknown) => {
          throw new ApiClientError({ code: 'network_error', status: 0, message: `GET the download address: ${(error as Error).message}`, cause: error });
        });
        if (!response.ok || !response.body) {
          const body = (await response.json().catch(() => undefined)) as { code?: unknown; message?: unknown } | null | undefined;
          const requestId = response.headers.get('x-request-id') ?? undefined;
          const message = typeof body?.message === 'string' ? body.message : `The download address answered ${response.status}.`;
          throw new ApiClientError({ code: typeof body?.code === 'string' ? body.code : `HTTP_${response.status}`, status: response.status, message, ...(requestId ? { requestId } : {}) });
        }
        let received = 0;
        const count = new Transform({
          transform(chunk: Buffer, _encoding, done) {
            received += chunk.length;
            done(null, chunk);
          },
        });
        const source = Readable.fromWeb(response.body as import('node:stream/web').ReadableStream<Uint8Array>);
        if (!options.output) {
          await pipeline(source, count, process.stdout, { end: false });
          return;
        }
        // A partial file never takes the target's name: written beside it, renamed once complete.
        const partial = `${options.output}.part`;
        try {
          await pipeline(source, count, createWriteStream(partial));
          await rename(partial, options.output);
        } catch (error) {
          await rm(partial, { force: true });
          if ((error as NodeJS.ErrnoException).syscall) throw new CliError(ExitCode.localFile, 'LOCAL_FILE', `Cannot write ${options.output}: ${(error as Error).message}`);
          throw error;
        }
        session.output.result({ id, path: options.output, bytes: received }, () => session.output.line(`Saved ${bytes(received)} to ${options.output}.`));
      }),
    );

  documents
    .command('text')
    .description('print the text extracted from a document (by a document.extract or document.index job)')
    .argument('<document>', 'document id (doc_...)')
    .action(
      withSession(state, async (session, id: string) => {
        const extracted = await session.client().documents.text({ id });
        session.output.result(extracted, () => {
          if (!extracted) return session.output.note(`No text extracted yet: run \`workspace-api jobs run document.extract --document ${id}\`.`);
          session.output.write(extracted.text.endsWith('\n') ? extracted.text : `${extracted.text}\n`);
        });
      }),
    );

  documents
    .command('delete')
    .description('delete a document, its bytes and its search chunks')
    .argument('<document>', 'document id (doc_...)')
    .action(
      withSession(state, async (session, id: string) => {
        const deleted = await session.client().documents.delete({ id });
        session.output.result(deleted, () => session.output.line(`Deleted ${id}.`));
      }),
    );
}

/** The size of a regular file to upload; a missing or unreadable one is the caller's mistake. */
async function fileSize(path: string): Promise<number> {
  try {
    const info = await stat(path);
    if (!info.isFile()) throw usageError(`${path} is not a file.`);
    return info.size;
  } catch (error) {
    if (error instanceof CliError) throw error;
    throw new CliError(ExitCode.localFile, 'LOCAL_FILE', `Cannot read ${path}: ${(error as Error).message}`);
  }
}
