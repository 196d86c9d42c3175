/**
 * Open enums (docs/contract-changes.md, "Open enums"): `x-extensible-enum: true` beside an `enum`
 * says later versions may add values, so clients accept values they do not know, and contract-diff
 * calls an added value non-breaking (test/contract/contract-diff.test.ts). The server stays
 * closed: the response validators every integration test runs still reject a value the contract
 * does not list, so the service never answers one before the contract names it.
 */
import { describe, expect, it } from 'vitest';
import { finalLine } from '../../clients/typescript/src/cli/job-watch.ts';
import { outputValidator, schemaValidator } from '../../src/contract/validators.ts';
import { readPublishedDocument, type Json } from '../support/openapi-document.ts';

const documents = { 'openapi.json': readPublishedDocument('openapi.json'), 'auth-openapi.json': readPublishedDocument('auth-openapi.json') };

/** Every schema node carrying the marker, with where it is. */
function marked(node: unknown, at: string, found: Array<{ at: string; schema: Json }> = []): Array<{ at: string; schema: Json }> {
  if (Array.isArray(node)) node.forEach((item, index) => marked(item, `${at}/${index}`, found));
  else if (node !== null && typeof node === 'object') {
    if ('x-extensible-enum' in node) found.push({ at, schema: node });
    for (const [key, value] of Object.entries(node)) marked(value, `${at}/${key}`, found);
  }
  return found;
}

const openEnums = marked(documents['openapi.json'], '#');

describe('open enums', () => {
  it('are marked `x-extensible-enum: true` beside an `enum` of strings, nowhere else', () => {
    expect(openEnums.map(({ at }) => at).sort()).toEqual([
      '#/components/schemas/JobKind',
      '#/components/schemas/LimitReachedError/properties/data/properties/kind',
      '#/components/schemas/OverLimit/properties/kind',
      '#/components/schemas/SystemStatus/properties/database/properties/backgroundMigrations/oneOf/0/items/properties/state',
    ]);
    for (const { at, schema } of [...openEnums, ...marked(documents['auth-openapi.json'], '#')]) {
      expect(schema['x-extensible-enum'], at).toBe(true);
      expect(Array.isArray(schema.enum) && schema.enum.every((value: unknown) => typeof value === 'string'), at).toBe(true);
    }
  });

  it('stay closed in what the server answers: the response validators reject a job kind the contract does not list', () => {
    const job = structuredClone(documents['openapi.json'].components.schemas.Job.examples[0]);
    const validate = outputValidator('jobs.get', 200)!;
    expect(validate(job), JSON.stringify(validate.errors)).toBe(true);
    expect(validate({ ...job, kind: 'audio.transcribe' })).toBe(false);
    const limit = schemaValidator('LimitReachedError')!;
    const reached = documents['openapi.json'].components.schemas.LimitReachedError.examples[0];
    expect(limit(reached), JSON.stringify(limit.errors)).toBe(true);
    expect(limit({ ...reached, data: { ...reached.data, kind: 'seats' } })).toBe(false);
  });

  it('are open in the CLI: a finished job of a kind it does not know is still reported', () => {
    const job = { ...documents['openapi.json'].components.schemas.Job.examples[0], kind: 'audio.transcribe', result: { minutes: 3 } };
    expect(finalLine(job, false)).toMatch(/^Job job_\w+ \(audio\.transcribe\) succeeded in 2\.0 ?s\.$/);
  });
});
