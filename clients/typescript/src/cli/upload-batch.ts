/**
 * Uploading files as documents: one (documents.createUpload, the PUT of its bytes, documents.complete),
 * and several, a few at a time, each with its line as it is done. A file that fails does not stop
 * the others: it is reported, and the command ends with the exit code of the first that failed.
 */
import type { RunState } from './command-kit.ts';
import { describeFailure, reportFailure, type Failure } from './failure.ts';
import { bytes } from './format.ts';
import { spinner, type Progress } from './progress.ts';
import type { Client, Session } from './session.ts';
import { putFile } from './upload.ts';

type ContentType = Parameters<Client['documents']['createUpload']>[0]['contentType'];
export type UploadedDocument = Awaited<ReturnType<Client['documents']['complete']>>;

/** A local file to upload, checked: its media type known and its size measured. */
export interface LocalFile {
  path: string;
  name: string;
  contentType: string;
  size: number;
}

/** Uploads at once: enough to hide the round trips of small files, few enough to leave the service's other callers room. */
export const UPLOADS_AT_ONCE = 4;

/** One file's upload: create it, send the bytes (reporting to the progress `start` makes), complete it. */
export async function uploadDocument(client: Client, target: { organizationId: string; workspaceId: string }, file: LocalFile, start: () => Progress): Promise<UploadedDocument> {
  const { document, upload } = await client.documents.createUpload({ ...target, name: file.name, contentType: file.contentType as ContentType, size: file.size });
  const progress = start();
  try {
    await putFile(upload, file.path, file.size, (sent) => progress.update(sent));
  } finally {
    progress.stop();
  }
  return client.documents.complete({ id: document.id });
}

/** The line a person reads for an uploaded document. */
export const uploadedLine = (document: UploadedDocument) => `Uploaded ${document.name} (${bytes(document.size)}) as ${document.id}.`;

/** What became of one file of several: its document, or the failure (as --json prints errors). */
type BatchEntry = { file: string; document: UploadedDocument } | { file: string; error: Omit<Failure, 'hint'> };

/**
 * Uploads several files, UPLOADS_AT_ONCE at a time: a line per file as it is done (a failure on
 * stderr), a spinner counting files and bytes for a person; with --json one array, an entry per
 * file in the order given. Exit code: the first failure's, in that order. `workspace` is the
 * workspace as the caller named it, for the hint to index it.
 */
export async function uploadFiles(session: Session, state: RunState, workspace: string, target: { organizationId: string; workspaceId: string }, files: readonly LocalFile[]): Promise<void> {
  const { output } = session;
  const client = session.client();
  let total = files.reduce((sum, file) => sum + file.size, 0);
  let sent = 0;
  let done = 0;
  const status = () => `Uploading ${files.length} files: ${done} done, ${bytes(sent)} of ${bytes(total)} sent`;
  const spin = spinner(output, status());
  const entries: BatchEntry[] = [];
  let next = 0;

  async function uploadNext(): Promise<void> {
    for (let index = next++; index < files.length; index = next++) {
      const file = files[index]!;
      let fileSent = 0;
      // Bytes of every file add up into one count.
      const progress = (): Progress => ({
        update(now) {
          sent += now - fileSent;
          fileSent = now;
          spin.text(status());
        },
        stop() {},
      });
      try {
        const document = await uploadDocument(client, target, file, progress);
        entries[index] = { file: file.path, document };
        if (!output.json) spin.above(() => output.line(uploadedLine(document)));
      } catch (error) {
        // Its bytes leave the count: the spinner's total is what can still be sent.
        sent -= fileSent;
        total -= file.size;
        const { hint: _hint, ...failure } = describeFailure(error, session.url);
        entries[index] = { file: file.path, error: failure };
        if (!output.json) spin.above(() => reportFailure({ ...failure, message: `${file.path}: ${failure.message}` }, false));
      }
      done++;
      spin.text(status());
    }
  }

  try {
    await Promise.all(Array.from({ length: Math.min(UPLOADS_AT_ONCE, files.length) }, uploadNext));
  } finally {
    spin.stop();
  }
  const failed = entries.filter((entry) => 'error' in entry);
  output.result(entries, () => {
    if (failed.length > 0) output.note(`Uploaded ${files.length - failed.length} of ${files.length} files; ${failed.length} failed.`);
    else output.note(`Uploaded ${files.length} files. Index them for search in one job: workspace-api workspaces index ${workspace}`);
  });
  const first = failed[0];
  if (first && 'error' in first) state.exitCode = first.error.exitCode;
}
