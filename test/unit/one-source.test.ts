/**
 * One source for every list (the contract): the copies that cannot be generated or typed from it
 * are checked against it here. Generated: the README's procedure list (codegen/readme-procedures.ts),
 * the CLI's job kinds (the client package's src/enums.ts). Typed from generated/types.ts, so tsc
 * checks them: the limit kinds and plan names (src/contract/errors.ts, src/credits/plans.ts,
 * src/credits/usage.ts). Checked here: what those modules hold at run time, the docs that name
 * the job kinds, hand-written counts of procedures, the database's CHECK on jobs.kind, and the AI
 * service's media types.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jobKindValues } from '../../clients/typescript/src/enums.ts';
import { jobKindValues as serverJobKinds } from '../../generated/enums.ts';
import { procedures } from '../../generated/procedures.ts';
import { EXTRACT_CONTENT_TYPES } from '../../src/ai-service/protocol.ts';
import { PLAN_LIMITS } from '../../src/credits/plans.ts';
import { overLimits } from '../../src/credits/usage.ts';
import type { Database } from '../../src/db/connection.ts';
import { createTestDatabase } from '../support/database.ts';
import { readPublishedDocument } from '../support/openapi-document.ts';

const doc = readPublishedDocument('openapi.json');
const schemas = doc.components.schemas;
const text = (path: string): string => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');
const sorted = (values: Iterable<string>): string[] => [...values].sort();

describe('the procedures', () => {
  it("the README's generated list names each procedure once, with their count", () => {
    const readme = text('README.md');
    const block = /<!-- generated: procedures -->([\s\S]*?)<!-- \/generated: procedures -->/.exec(readme)?.[1];
    expect(block, 'README.md lost its <!-- generated: procedures --> block (make codegen fills it)').toBeDefined();
    const names = [...block!.matchAll(/`([\w.]+)\.([\w/]+)`/g)].flatMap(([, prefix, verbs]) => verbs!.split('/').map((verb) => `${prefix}.${verb}`));
    expect(sorted(names)).toEqual(sorted(Object.keys(procedures)));
    expect(block).toContain(`all ${Object.keys(procedures).length} procedures:`);
  });

  it('no document states a hand-written count of procedures or operations (docs/operations.md has the generated one)', () => {
    for (const path of ['README.md', 'docs/architecture.md', 'docs/adding-an-operation.md', 'docs/decisions.md']) {
      const outside = text(path).replace(/<!-- generated: procedures -->[\s\S]*?<!-- \/generated: procedures -->/, '');
      expect(outside.match(/\b\d+ (?:procedures|operations)\b/g), path).toBeNull();
    }
  });
});

describe('the job kinds', () => {
  const kinds: string[] = schemas.JobKind.enum;

  it("the CLI offers the contract's (generated into the client package, as into generated/)", () => {
    expect([...jobKindValues]).toEqual(kinds);
    expect([...serverJobKinds]).toEqual(kinds);
  });

  it('docs/cli.md names each in its `jobs run` row', () => {
    const row = text('docs/cli.md')
      .split('\n')
      .find((line) => line.startsWith('| `jobs run <kind>'));
    expect(row).toBeDefined();
    for (const kind of kinds) expect(row, kind).toContain(`\`${kind}\``);
  });

  describe("the database's CHECK on jobs.kind (a new kind needs a new migration, sql/ is frozen)", () => {
    let db: Database;
    beforeAll(async () => {
      db = await createTestDatabase();
    });
    afterAll(async () => {
      await db?.close();
    });

    it("allows exactly the contract's kinds", async () => {
      const rows = await db.sql<{ definition: string }[]>`
        select pg_get_constraintdef(oid) as definition from pg_constraint
        where conrelid = 'jobs'::regclass and contype = 'c' and pg_get_constraintdef(oid) like '%kind%'`;
      expect(rows).toHaveLength(1);
      const allowed = [...rows[0]!.definition.matchAll(/'([^']+)'/g)].map(([, kind]) => kind!);
      expect(sorted(allowed)).toEqual(sorted(kinds));
    });
  });
});

describe("the documents' media types", () => {
  // The AI service keeps its own list (it is a protocol of its own, and deployable apart), so a
  // type added to the contract without the service learning to read it fails here.
  it("the AI service's /v1/extract reads exactly the contract's DocumentContentType", () => {
    expect(sorted(EXTRACT_CONTENT_TYPES)).toEqual(sorted(schemas.DocumentContentType.enum));
  });
});

describe('the limit kinds and plans', () => {
  // `organizations` is the deployment's cap on a user's free organizations, which no plan sets (plans.ts LimitKind).
  const limitKinds: string[] = schemas.LimitReachedError.properties.data.properties.kind.enum.filter((kind: string) => kind !== 'organizations');

  it("every plan limits exactly LIMIT_REACHED's kinds (but the deployment's `organizations`), and the plans are the contract's", () => {
    expect(sorted(Object.keys(PLAN_LIMITS))).toEqual(sorted(schemas.Plan.enum.filter((plan: unknown) => plan !== null)));
    for (const limits of Object.values(PLAN_LIMITS)) expect(sorted(Object.keys(limits))).toEqual(sorted(limitKinds));
  });

  it("overLimits reports every kind of the contract's OverLimit (and those are limit kinds)", () => {
    const zero = { workspaces: 0, members: 0, aiCredits: 0, storageBytes: 0 };
    const over = overLimits({ plan: 'free', limits: zero }, { workspaces: 1, members: 1, pendingInvitations: 0, aiCredits: 1 });
    expect(sorted(over.map((entry) => entry.kind))).toEqual(sorted(schemas.OverLimit.properties.kind.enum));
    for (const kind of schemas.OverLimit.properties.kind.enum) expect(limitKinds).toContain(kind);
  });
});

describe('WorkspaceWithStorage (workspaces.get) is Workspace plus `storage`', () => {
  // Not `allOf: [Workspace]`: Workspace is closed (`additionalProperties: false`), which rejects
  // `storage` inside an allOf, and reopening it through `unevaluatedProperties` changes what the
  // released contract says about every workspace answer. So the copy stays, and this keeps it one.
  it('declares the same fields, rules and example, and only adds `storage`', () => {
    const { storage, ...fields } = schemas.WorkspaceWithStorage.properties;
    expect(storage).toBeDefined();
    expect(fields).toEqual(schemas.Workspace.properties);
    expect(schemas.WorkspaceWithStorage.required).toEqual([...schemas.Workspace.required, 'storage']);
    expect(schemas.WorkspaceWithStorage.additionalProperties).toBe(schemas.Workspace.additionalProperties);
    const { storage: _usage, ...example } = schemas.WorkspaceWithStorage.examples[0];
    expect(example).toEqual(schemas.Workspace.examples[0]);
  });
});
