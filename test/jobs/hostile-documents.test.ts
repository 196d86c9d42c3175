/**
 * The hostile files of issue 15 through the whole product: uploaded, completed and given to a
 * document.extract job like any file. Each job fails at once (one attempt, no retry) with a
 * message that says which limit the file broke; the API answers all along; the next sane document
 * extracts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../support/server.ts';
import { docxBomb, DOCX_TYPE, nestedHtml, pdfOfText, pdfStreamBomb, pngHeader } from '../support/hostile-documents.ts';
import { startTenantServer, uploadDocument, waitForJob, type Tenant } from './support.ts';

type ContentType = Parameters<typeof uploadDocument>[2];

describe('hostile documents fail their jobs, not the service', () => {
  let server: TestServer;
  let t: Tenant;
  beforeAll(async () => ({ server, t } = await startTenantServer()), 60_000);
  afterAll(() => server?.close());

  it.each([
    { given: 'a DOCX whose word/document.xml inflates to 100 MB', name: 'bomb.docx', type: DOCX_TYPE, bytes: () => docxBomb(100), want: /^The DOCX document's part word\/document\.xml inflates to [\d ]+ times its stored size; at most 100 times can be read\.$/ },
    { given: 'a 10 MB page of nested <div>s', name: 'nested.html', type: 'text/html', bytes: () => nestedHtml(2_000_000), want: /^The HTML document nests elements more than 256 deep; at most 256 levels can be read\.$/ },
    { given: 'a PDF whose one stream inflates to 500 MB', name: 'stream-bomb.pdf', type: 'application/pdf', bytes: () => pdfStreamBomb(500), want: /^The PDF inflates to more than 128 MiB; at most 128 MiB can be read\.$/ },
    { given: 'a PDF of text operators showing 52 million characters', name: 'text-bomb.pdf', type: 'application/pdf', bytes: () => pdfOfText(52_000_000), want: /^The document's text has more than 2 000 000 characters; at most 2 000 000 can be stored\.$/ },
    { given: 'a 7000 × 7000 PNG', name: 'huge.png', type: 'image/png', bytes: () => pngHeader(7000, 7000), want: /^The image is 7 000 × 7 000 pixels \(49 megapixels\); at most 36 megapixels can be read\.$/ },
  ] as { given: string; name: string; type: ContentType; bytes: () => Buffer; want: RegExp }[])('$given: the job fails at once, readably', { timeout: 120_000 }, async ({ name, type, bytes, want }) => {
    const document = await uploadDocument(t, name, type, bytes());
    const job = await t.client.jobs.create({ organizationId: t.org, kind: 'document.extract', documentId: document.id });
    // While it is read, the API answers (health, and an authenticated list that reads the database).
    const [health, list] = await Promise.all([server.fetch('/healthz'), t.client.workspaces.list({ organizationId: t.org })]);
    expect(health.status).toBe(200);
    expect(list.length).toBeGreaterThan(0);
    const failed = await waitForJob(t, job.id);
    expect(failed).toMatchObject({ status: 'failed', attempt: 1 });
    expect(failed.error!.message).toMatch(want);
    expect(await t.client.documents.text({ id: document.id })).toBeNull();

    const sane = await uploadDocument(t, 'after.txt', 'text/plain', new TextEncoder().encode(`Read after ${name}.`));
    const next = await t.client.jobs.create({ organizationId: t.org, kind: 'document.extract', documentId: sane.id });
    expect(await waitForJob(t, next.id)).toMatchObject({ status: 'succeeded', result: { characters: `Read after ${name}.`.length } });
  });
});
