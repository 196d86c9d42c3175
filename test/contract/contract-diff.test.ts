/**
 * `make contract-diff` (scripts/contract-diff.ts): copies of the released snapshot
 * (openapi/released/), changed in memory the way a careless commit would, must fail the check,
 * and additive changes must pass. The classification is api-smart-diff's; these tests prove it is
 * wired so that it bites on our 3.1 documents, including the three adjustments compare.ts makes.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compareContract, type ContractDiff } from '../../scripts/contract-diff/compare.ts';
import { judge } from '../../scripts/contract-diff/verdict.ts';
import { pruneUnchanged } from '../../scripts/contract-diff/prune.ts';
import { recordRelease, writeUnreleased } from '../../scripts/contract-diff/changelog.ts';

type Json = Record<string, any>;

const root = fileURLToPath(new URL('../../', import.meta.url));
const readJson = (path: string): Json => JSON.parse(readFileSync(join(root, path), 'utf8'));
const released = { 'openapi.json': readJson('openapi/released/openapi.json'), 'auth-openapi.json': readJson('openapi/released/auth-openapi.json') };

/** The released procedures' contract, changed by `change` on a deep copy. */
function diffAfter(change: (doc: Json) => void, name: 'openapi.json' | 'auth-openapi.json' = 'openapi.json'): ContractDiff {
  const after = structuredClone(released[name]);
  change(after);
  return compareContract(name, released[name], after);
}

const breaking = (diff: ContractDiff) => diff.changes.filter((change) => change.kind === 'breaking');
const schemas = (doc: Json): Json => doc.components.schemas;

describe('contract-diff on changed copies of the released contract', () => {
  it('finds no change between a bundle and itself (GET /workspaces/{slug} and PATCH /workspaces/{id} stay apart)', () => {
    for (const name of ['openapi.json', 'auth-openapi.json'] as const) {
      expect(diffAfter(() => {}, name).changes).toEqual([]);
    }
    // Pruning leaves out every path of identical documents, so the pairing is checked unpruned, on the
    // paths that share a template (only these two: the tool used to pair them with each other).
    const twins = structuredClone(released['openapi.json']);
    twins.paths = { '/workspaces/{slug}': twins.paths['/workspaces/{slug}'], '/workspaces/{id}': twins.paths['/workspaces/{id}'] };
    expect(Object.keys(twins.paths['/workspaces/{slug}'])).toContain('get');
    expect(Object.keys(twins.paths['/workspaces/{id}'])).toEqual(expect.arrayContaining(['patch', 'delete']));
    expect(compareContract('openapi.json', twins, structuredClone(twins), { prune: false }).changes).toEqual([]);
  });

  it('reports the same changes with pruning as without: nothing breaking hides in a left-out path or component', () => {
    // Every change the cases below make, at once, so one whole-document comparison checks them all.
    const everything = (doc: Json) => {
      const workspace = schemas(doc).Workspace;
      delete workspace.properties.createdAt;
      workspace.required = workspace.required.filter((field: string) => field !== 'createdAt');
      workspace.properties.name.type = ['string', 'null'];
      workspace.properties.color = { type: 'string' };
      delete doc.paths['/jobs/{id}/retry'];
      delete doc.paths['/workspaces/{id}'].patch;
      schemas(doc).WorkspacesCreateInput.properties.region = { type: 'string' };
      schemas(doc).WorkspacesCreateInput.required.push('region');
      doc.paths['/workspaces'].get.parameters.push({ name: 'region', in: 'query', required: true, schema: { type: 'string' } });
      schemas(doc).JobStatus.enum = schemas(doc).JobStatus.enum.filter((status: string) => status !== 'canceled');
      schemas(doc).JobKind.enum.push('audio.transcribe');
      doc.paths['/jobs'].post.summary = 'Start a job';
    };
    const after = structuredClone(released['openapi.json']);
    everything(after);
    const pruned = compareContract('openapi.json', released['openapi.json'], after);
    expect(pruned).toEqual(compareContract('openapi.json', released['openapi.json'], after, { prune: false }));
    expect(breaking(pruned).length).toBeGreaterThan(10);
    // And on the real bundles the service serves now, as CI compares them.
    const auth = readJson('generated/auth-openapi.json');
    expect(compareContract('auth-openapi.json', released['auth-openapi.json'], auth)).toEqual(compareContract('auth-openapi.json', released['auth-openapi.json'], auth, { prune: false }));
  });

  it('hands the tool only the path items a change reaches (where the time goes), keeping every security scheme', () => {
    const after = structuredClone(released['openapi.json']);
    delete schemas(after).Workspace.properties.createdAt;
    const [prunedBefore, prunedAfter] = pruneUnchanged(released['openapi.json'], after) as [Json, Json];
    const workspacePaths = Object.keys(released['openapi.json'].paths).filter((path) => JSON.stringify(released['openapi.json'].paths[path]).includes('#/components/schemas/Workspace"'));
    expect(workspacePaths.length).toBeGreaterThan(0);
    for (const pruned of [prunedBefore, prunedAfter]) {
      expect(Object.keys(pruned.paths).length).toBeLessThan(Object.keys(released['openapi.json'].paths).length);
      expect(pruned.components.securitySchemes).toEqual(released['openapi.json'].components.securitySchemes);
      expect(pruned.info).toEqual(released['openapi.json'].info);
    }
    expect(Object.keys(prunedBefore.paths)).toEqual(expect.arrayContaining(workspacePaths));
    expect(prunedBefore.paths['/jobs/{id}/retry']).toBeUndefined();

    // A schema named only by a discriminator's mapping still keeps the path that reaches it.
    const small = (cat: Json): Json => ({
      openapi: '3.1.0',
      info: { title: 't', version: '1.0.0' },
      paths: {
        '/pets': { get: { responses: { '200': { description: 'ok', content: { 'application/json': { schema: { $ref: '#/components/schemas/Pet' } } } } } } },
        '/other': { get: { responses: { '204': { description: 'none' } } } },
      },
      components: { schemas: { Pet: { type: 'object', discriminator: { propertyName: 'kind', mapping: { cat: '#/components/schemas/Cat' } } }, Cat: cat } },
    });
    const [catBefore, catAfter] = pruneUnchanged(small({ type: 'object' }), small({ type: 'string' })) as [Json, Json];
    expect(Object.keys(catBefore.paths)).toEqual(['/pets']);
    expect(Object.keys(catAfter.components.schemas).sort()).toEqual(['Cat', 'Pet']);
    // A reference it cannot follow (outside `components`) leaves both documents whole.
    const odd = small({ type: 'object' });
    odd.paths['/alias'] = { $ref: '#/paths/~1pets' };
    const [whole] = pruneUnchanged(odd, structuredClone(odd)) as [Json, Json];
    expect(whole).toBe(odd);
  });

  it('leaves the documents it compares untouched (the tool writes into its inputs; compare.ts hands it copies)', () => {
    const before = readJson('openapi/released/openapi.json');
    const after = structuredClone(before);
    after.components.schemas.Workspace.properties.name.type = ['string', 'null'];
    const untouched = structuredClone(after);
    compareContract('openapi.json', before, after);
    expect(before).toEqual(readJson('openapi/released/openapi.json'));
    expect(after).toEqual(untouched);
  });

  it('fails on a removed response field, naming every operation that answers it', () => {
    const diff = diffAfter((doc) => {
      const workspace = schemas(doc).Workspace;
      delete workspace.properties.createdAt;
      workspace.required = workspace.required.filter((field: string) => field !== 'createdAt');
    });
    const found = breaking(diff).filter((change) => change.location.endsWith('/properties/createdAt'));
    expect(found.map((change) => change.operationId).sort()).toEqual(['workspaces.create', 'workspaces.list', 'workspaces.update']);
    const verdict = judge([diff]);
    expect(verdict.ok).toBe(false);
    expect(verdict.report).toContain('POST /workspaces (workspaces.create) at /responses/200/content/application~1json/schema/properties/createdAt');
  });

  it('fails on a removed operation, also on the path that shares its template with another', () => {
    const retry = diffAfter((doc) => delete doc.paths['/jobs/{id}/retry']);
    expect(breaking(retry)).toMatchObject([{ operation: 'POST /jobs/{id}/retry', operationId: 'jobs.retry', description: '[Removed] operation POST /jobs/{id}/retry' }]);
    expect(judge([retry]).ok).toBe(false);

    const update = diffAfter((doc) => delete doc.paths['/workspaces/{id}'].patch);
    expect(update.changes).toMatchObject([{ kind: 'breaking', operation: 'PATCH /workspaces/{id}', operationId: 'workspaces.update' }]);
  });

  it('fails on a new required input: a body field, a query parameter', () => {
    const body = diffAfter((doc) => {
      const input = schemas(doc).WorkspacesCreateInput;
      input.properties.color = { type: 'string' };
      input.required.push('color');
    });
    expect(breaking(body).map((change) => `${change.operationId} ${change.location}`)).toContain('workspaces.create /requestBody/content/application~1json/schema/properties/color');
    expect(judge([body]).ok).toBe(false);

    const query = diffAfter((doc) => doc.paths['/workspaces'].get.parameters.push({ name: 'region', in: 'query', required: true, schema: { type: 'string' } }));
    expect(breaking(query)).toMatchObject([{ operationId: 'workspaces.list', description: '[Added] required query parameter `region`' }]);
  });

  it('fails on a removed enum value that clients send (a job status they filter by)', () => {
    const diff = diffAfter((doc) => {
      schemas(doc).JobStatus.enum = schemas(doc).JobStatus.enum.filter((status: string) => status !== 'canceled');
    });
    const filter = breaking(diff).filter((change) => change.operationId === 'jobs.list' && change.location.startsWith('/parameters/'));
    expect(filter).toHaveLength(1);
    expect(filter[0]!.description).toContain('"canceled"');
    expect(judge([diff]).ok).toBe(false);
  });

  it('passes on a kind added to an open enum that clients receive (job kinds), but not on one added to a closed enum', () => {
    // The released snapshot may predate the marker: mark JobKind open on both sides, as it is from now on.
    const open = (doc: Json) => (schemas(doc).JobKind['x-extensible-enum'] = true);
    const before = structuredClone(released['openapi.json']);
    open(before);
    const after = structuredClone(before);
    schemas(after).JobKind.enum.push('audio.transcribe');
    const added = compareContract('openapi.json', before, after);
    const jobAnswers = added.changes.filter((change) => change.operationId === 'jobs.get');
    expect(jobAnswers.length).toBeGreaterThan(0);
    expect(jobAnswers.every((change) => change.kind === 'non-breaking')).toBe(true);
    expect(breaking(added)).toEqual([]);
    expect(judge([added]).ok).toBe(true);

    // The same addition to a closed enum answered to clients (a job status) breaks them.
    const status = structuredClone(before);
    schemas(status).JobStatus.enum.push('paused');
    const closed = compareContract('openapi.json', before, status);
    expect(breaking(closed).map((change) => change.operationId)).toContain('jobs.get');
    expect(judge([closed]).ok).toBe(false);

    // Opening an enum and adding a value in one change is breaking: the released contract never said it could grow.
    const unmarked = structuredClone(released['openapi.json']);
    delete schemas(unmarked).JobKind['x-extensible-enum'];
    const openedAndGrown = structuredClone(unmarked);
    open(openedAndGrown);
    schemas(openedAndGrown).JobKind.enum.push('audio.transcribe');
    expect(breaking(compareContract('openapi.json', unmarked, openedAndGrown)).map((change) => change.operationId)).toContain('jobs.get');

    // Removing a value stays breaking where clients send it, open or not (the jobs.list status filter).
    const openStatus = structuredClone(before);
    schemas(openStatus).JobStatus['x-extensible-enum'] = true;
    const fewer = structuredClone(openStatus);
    schemas(fewer).JobStatus.enum = schemas(fewer).JobStatus.enum.filter((value: string) => value !== 'canceled');
    const filter = breaking(compareContract('openapi.json', openStatus, fewer)).filter((change) => change.operationId === 'jobs.list' && change.location.startsWith('/parameters/'));
    expect(filter).toHaveLength(1);
  });

  it('fails on a changed success status and on a response field that became nullable (3.1 type lists)', () => {
    const status = diffAfter((doc) => {
      const responses = doc.paths['/workspaces'].post.responses;
      responses['201'] = responses['200'];
      delete responses['200'];
    });
    expect(breaking(status)).toMatchObject([{ operationId: 'workspaces.create', location: '/responses/200', description: '[Removed] Response 200' }]);

    const nullable = diffAfter((doc) => {
      schemas(doc).Workspace.properties.name.type = ['string', 'null'];
    });
    expect(
      breaking(nullable)
        .map((change) => change.operationId)
        .sort(),
    ).toEqual(['workspaces.create', 'workspaces.list', 'workspaces.update']);

    // The same widening of an input is safe: every request valid before stays valid.
    const input = diffAfter((doc) => {
      schemas(doc).WorkspacesCreateInput.properties.name.type = ['string', 'null'];
    });
    expect(input.changes.length).toBeGreaterThan(0);
    expect(breaking(input)).toEqual([]);
  });

  it('passes on an added optional response field and an added optional header', () => {
    const diff = diffAfter((doc) => {
      schemas(doc).Workspace.properties.color = { type: 'string', description: 'A display color.' };
      doc.paths['/workspaces'].post.parameters.push({ name: 'Idempotency-Key', in: 'header', required: false, schema: { type: 'string' } });
    });
    expect(diff.changes.length).toBeGreaterThan(0);
    expect(diff.changes.every((change) => change.kind === 'non-breaking')).toBe(true);
    expect(diff.changes.map((change) => change.description)).toContain('[Added] optional header parameter `Idempotency-Key`');
    expect(judge([diff]).ok).toBe(true);
  });

  it('lets a breaking change through only with a major version step', () => {
    const removeField = (version: string) => (doc: Json) => {
      delete schemas(doc).Workspace.properties.slug;
      doc.info.version = version;
    };
    // The released snapshot is 0.2.0: a minor or patch step does not allow a breaking change.
    expect(judge([diffAfter(removeField('0.3.0'))]).ok).toBe(false);
    expect(judge([diffAfter(removeField('0.2.1'))]).ok).toBe(false);
    const major = judge([diffAfter(removeField('1.0.0'))]);
    expect(major.ok).toBe(true);
    expect(major.report).toContain(`allowed by the major step ${released['openapi.json'].info.version} → 1.0.0`);
  });

  it('writes the changelog from the same diff: grouped by kind, each change under its operation', () => {
    const diff = diffAfter((doc) => {
      delete doc.paths['/jobs/{id}/retry'];
      schemas(doc).Workspace.properties.color = { type: 'string' };
      doc.paths['/jobs'].post.summary = 'Start a job';
    });
    const text = writeUnreleased(undefined, [diff]);
    const section = text.slice(text.indexOf('## Unreleased'), text.indexOf('## Releases'));
    const order = ['#### Breaking', '- `POST /jobs/{id}/retry` (jobs.retry)', '#### Non-breaking', '- `GET /workspaces` (workspaces.list)', '#### Annotations'];
    const positions = order.map((line) => section.indexOf(line));
    expect(positions.every((position) => position >= 0)).toBe(true);
    expect([...positions].sort((a, b) => a - b)).toEqual(positions);
    expect(section).toContain('  - [Removed] operation POST /jobs/{id}/retry\n');
    // Rewriting from the same diff changes nothing; a release moves the changes under the releases.
    expect(writeUnreleased(text, [diff])).toBe(text);
    const releasedText = recordRelease(text, [diff], '1.0.0', '2026-11-25');
    expect(releasedText.slice(releasedText.indexOf('## Releases'))).toContain('### 1.0.0 (released 2026-11-25)');
  });
});

describe('the contract-diff command', () => {
  const run = promisify(execFile);
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'contract-diff-'));
    for (const folder of ['released', 'current']) {
      await mkdir(join(dir, folder));
      for (const name of ['openapi.json', 'auth-openapi.json'] as const) {
        await writeFile(join(dir, folder, name), JSON.stringify(released[name]));
      }
    }
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const command = (...extra: string[]) =>
    run(process.execPath, ['scripts/contract-diff.ts', '--released', join(dir, 'released'), '--current', join(dir, 'current'), '--changelog', join(dir, 'changelog.md'), ...extra], { cwd: root });

  it('exits 1 listing a removed field, and writes the changelog of an additive change', async () => {
    const broken = structuredClone(released['openapi.json']);
    delete broken.components.schemas.Workspace.properties.createdAt;
    await writeFile(join(dir, 'current', 'openapi.json'), JSON.stringify(broken));
    const failure = await command().then(
      () => undefined,
      (error: { code: number; stdout: string; stderr: string }) => error,
    );
    expect(failure?.code).toBe(1);
    expect(failure?.stdout).toContain('BREAKING');
    expect(failure?.stdout).toMatch(/GET \/workspaces \(workspaces\.list\) at \S+\/properties\/createdAt: \[Removed\]/);

    const added = structuredClone(released['openapi.json']);
    added.components.schemas.Workspace.properties.color = { type: 'string' };
    await writeFile(join(dir, 'current', 'openapi.json'), JSON.stringify(added));
    await command();
    const changelog = await readFile(join(dir, 'changelog.md'), 'utf8');
    expect(changelog).toContain('#### Non-breaking');
    expect(changelog).toContain('color');
    // Now committed and fresh, the CI form passes too.
    await command('--check');
  }, 60_000); // three runs of the command, each a node start and two comparisons

  it("releases: the changes become the version's entry, the bundles the new snapshot", async () => {
    for (const name of ['openapi.json', 'auth-openapi.json'] as const) {
      const next = structuredClone(released[name]);
      next.info.version = '0.3.0';
      if (name === 'openapi.json') next.components.schemas.Workspace.properties.color = { type: 'string' };
      await writeFile(join(dir, 'current', name), JSON.stringify(next));
    }
    await command('--release');
    const snapshot = JSON.parse(await readFile(join(dir, 'released', 'openapi.json'), 'utf8'));
    expect(snapshot.info.version).toBe('0.3.0');
    expect(snapshot.components.schemas.Workspace.properties.color).toEqual({ type: 'string' });
    const changelog = await readFile(join(dir, 'changelog.md'), 'utf8');
    const releases = changelog.slice(changelog.indexOf('## Releases'));
    expect(releases).toMatch(/### 0\.3\.0 \(released \d{4}-\d{2}-\d{2}\)/);
    expect(releases).toContain('/properties/color');
    expect(changelog.slice(0, changelog.indexOf('## Releases'))).toContain('0.3.0 → 0.3.0 (no changes)');
    await command('--check');
  }, 60_000);
});

describe('the current contract', () => {
  it('has no breaking change against the released snapshot without a major version step (what CI checks)', () => {
    const diffs = (['openapi.json', 'auth-openapi.json'] as const).map((name) => compareContract(name, released[name], readJson(`generated/${name}`)));
    const verdict = judge(diffs);
    expect(verdict.ok, verdict.report).toBe(true);
  });
});
