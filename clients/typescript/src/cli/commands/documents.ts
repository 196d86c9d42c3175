/** `documents list|upload|download|text|delete`; `upload --index` also indexes the file and follows the job, `upload` of several files sends them a few at a time. */
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
import type { Session } from '../session.ts';
import { renderTable } from '../table.ts';
import { uploadDocument, uploadedLine, uploadFiles, UPLOADS_AT_ONCE, type LocalFile } from '../upload-batch.ts';

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
    .description('upload a file, or several, into a workspace: create the upload, send the bytes (with a progress bar), complete it; with --index, index the file for search')
    .argument('<workspace>', 'workspace id (ws_...) or slug')
    .argument('<files...>', `the file to upload, or several (${UPLOADS_AT_ONCE} at a time)`)
    .option('--name <name>', "the document's name (default: the file's name; one file only)")
    .option('--content-type <type>', `the media type (default: from the extension, one of ${KNOWN_EXTENSIONS.join(' ')})`)
    .option('--index', 'then run a document.index job (it extracts the text first) and follow it to its end; one file only')
    .option('--extract', 'then run a document.extract job (the text only, not searchable yet) and follow it to its end; one file only')
    .addHelpText(
      'after',
      `
With --index or --extract the exit code is ${ExitCode.jobFailed} when the job fails (the document stays
uploaded), and --json prints { "document": ..., "job": ... }. Several files are uploaded
${UPLOADS_AT_ONCE} at a time, a line each; one that fails does not stop the others (the exit code is then
the first failure's), and --json prints an array of { "file", "document" } or { "file", "error" }.
Index them after with one job: workspace-api workspaces index <workspace>. Examples:
  $ workspace-api documents upload research ./q3-report.pdf --index
  $ workspace-api documents upload research ./q3-report.pdf --json | jq -r .id
  $ workspace-api documents upload research notes/*.md && workspace-api workspaces index research`,
    )
    .action(
      withSession(state, async (session, workspace: string, paths: string[], options: UploadOptions) => {
        if (options.index && options.extract) throw usageError('Pass --index or --extract, not both: indexing extracts the text first.');
        if (paths.length > 1) return uploadSeveral(session, state, workspace, paths, options);
        const file = await localFile(paths[0]!, options);
        const client = session.client();
        const organizationId = await session.organization();
        const target = { organizationId, workspaceId: await session.workspace(workspace) };
        const completed = await uploadDocument(client, target, file, () => uploadProgress(session.output, file.name, file.size));
        const uploaded = uploadedLine(completed);
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

interface UploadOptions {
  name?: string;
  contentType?: string;
  index?: boolean;
  extract?: boolean;
}

/**
 * Several files: checked first (a media type for each, each readable), so a typo fails before
 * anything is sent; then uploaded a few at a time. No job per file: one workspace.index job after
 * indexes them all, and a folder of per-file jobs would fill the organization's job queue.
 */
async function uploadSeveral(session: Session, state: RunState, workspace: string, paths: string[], options: UploadOptions): Promise<void> {
  if (options.name) throw usageError('--name names one document: upload one file with it, or leave it out.');
  if (options.index || options.extract) {
    throw usageError(`--${options.index ? 'index' : 'extract'} takes one file. Upload the files, then index them in one job: workspace-api workspaces index ${workspace}`);
  }
  const unknown = paths.filter((path) => !(options.contentType ?? contentTypeOf(path)));
  if (unknown.length > 0) throw usageError(`Cannot tell the media type of ${unknown.join(', ')} from the extension: pass --content-type, or upload them apart.`);
  const files: LocalFile[] = [];
  for (const path of paths) files.push(await localFile(path, options));
  const organizationId = await session.organization();
  await uploadFiles(session, state, workspace, { organizationId, workspaceId: await session.workspace(workspace) }, files);
}

/** A file to upload: its media type (usage error when unknown) and its size (exit 6 when unreadable). */
async function localFile(path: string, options: UploadOptions): Promise<LocalFile> {
  const contentType = options.contentType ?? contentTypeOf(path);
  if (!contentType) throw usageError(`Cannot tell the media type of ${path} from its extension: pass --content-type.`);
  return { path, name: options.name ?? basename(path), contentType, size: await fileSize(path) };
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
