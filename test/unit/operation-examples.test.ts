/**
 * The mock tells the same story as the server: every operation of both contracts answers its 400
 * with an example of its own (what Prism answers first: a media-level `example`), and that example
 * is, field for field, the body the server sends for a recorded bad input of that operation (read
 * by the REST transport's restInput, then refused by the generated validator), naming a field of
 * that operation. The operations that take no input share the one BadRequest response, whose
 * example is the refusal of a request body sent to an operation that takes none.
 */
import { describe, expect, it } from 'vitest';
import v1Document from '../../generated/openapi.json' with { type: 'json' };
import authDocument from '../../generated/auth-openapi.json' with { type: 'json' };
import { procedures, type ProcedureDefinition } from '../../generated/procedures.ts';
import { authRoutes } from '../../generated/auth-routes.ts';
import { deref } from '../support/openapi-document.ts';
import { validateInput } from '../../src/contract/validators.ts';
import { ApiError } from '../../src/contract/errors.ts';
import { restInput } from '../../src/http/rest-transport.ts';

type Json = Record<string, any>;

const ORG = 'org_pycdybk377oxtzq6svizx3or';
const WS = 'ws_i5xx2bzn3kir2gshyl7sn5pk';
const DOC = 'doc_zjli6ufh3reosfhypn5nwk2d';
const USR = 'usr_o7nzqdg4w5lltzqli3n4fvu2';
const TEAM = 'team_o6ue33rb6pvp5bn2pzcyibbt';
const MEM = 'mem_a2iiytzrb7clph54urln75pd';

/**
 * One bad input per operation, as the procedure's one input object: each key goes where the
 * contract puts that field (path, query), anything else in the JSON body. An operation that takes
 * no input is sent a body.
 */
const badInputs: Record<string, Record<string, unknown>> = {
  // openapi.yaml
  'admin.flags.delete': { key: 'AI-Search' },
  'admin.flags.list': { verbose: true },
  'admin.flags.setOverride': { key: 'ai-search', organizationId: ORG },
  'admin.flags.upsert': { key: 'ai-search', enabled: 'true' },
  'admin.organizations.cancelSubscription': { organizationId: 'acme' },
  'admin.organizations.delete': { organizationId: ORG },
  'admin.organizations.list': { limit: 500 },
  'admin.system.status': { verbose: true },
  'billing.status': { organizationId: 'acme' },
  'contact.send': { email: 'ada@example.com', message: 'short' },
  'documents.complete': { id: 'doc_1' },
  'documents.createUpload': { organizationId: ORG, workspaceId: WS, name: 'q3-report.zip', contentType: 'application/zip', size: 48213 },
  'documents.delete': { id: 'doc_1' },
  'documents.downloadUrl': { id: 'doc_1' },
  'documents.get': { id: 'doc_1' },
  'documents.list': { workspaceId: WS, organizationId: ORG, limit: 500 },
  'documents.search': { workspaceId: WS, query: '' },
  'documents.text': { id: 'doc_1' },
  'jobs.cancel': { id: 'job_1' },
  'jobs.create': { organizationId: ORG, kind: 'text.embed', documentId: DOC, input: { texts: ['a'] } },
  'jobs.get': { id: 'job_1' },
  'jobs.list': { organizationId: ORG, status: 'done' },
  'jobs.retry': { id: 'job_1' },
  'jobs.stream': { organizationId: ORG, workspaceId: 'ws_1' },
  'organizations.auditLog': { organizationId: ORG, limit: 0 },
  'organizations.usage': { organizationId: 'acme' },
  'system.authConfig': { verbose: true },
  'system.flags': { organizationId: 'org_1' },
  'system.health': { verbose: true },
  'user.me': { verbose: true },
  'workspaces.create': { organizationId: ORG, name: 'Research', slug: 'Research Team' },
  'workspaces.delete': { id: 'research' },
  'workspaces.get': { slug: WS, organizationId: ORG },
  'workspaces.list': {},
  'workspaces.update': { id: WS, name: '' },
  // auth.yaml
  'auth.admin.banUser': { userId: USR, banExpiresIn: 30 },
  'auth.admin.impersonateUser': { userId: 'ada@example.com' },
  'auth.admin.listUsers': { searchField: 'role' },
  'auth.admin.removeUser': {},
  'auth.admin.revokeUserSessions': { userId: 'usr_1' },
  'auth.admin.setRole': { userId: USR, role: 'owner' },
  'auth.admin.stopImpersonating': { verbose: true },
  'auth.admin.unbanUser': { userId: 'usr_1' },
  'auth.callback': { provider: 'gitlab', code: 'x7Yp2q', state: 'kq3v9s' },
  'auth.changePassword': { currentPassword: 'correct horse battery', newPassword: 'short' },
  'auth.getSession': { verbose: true },
  'auth.listSessions': { verbose: true },
  'auth.organization.acceptInvitation': { invitationId: 'inv_1' },
  'auth.organization.addTeamMember': { teamId: TEAM, userId: 'grace@example.com' },
  'auth.organization.cancelInvitation': { invitationId: 'inv_1' },
  'auth.organization.create': { name: 'Acme Corporation', slug: 'Acme Corp' },
  'auth.organization.createTeam': { organizationId: ORG, name: 'Research\nDevelopment' },
  'auth.organization.delete': { organizationId: ORG },
  'auth.organization.getFullOrganization': { organizationId: 'acme' },
  'auth.organization.inviteMember': { organizationId: ORG, email: 'grace@example.com', role: 'viewer' },
  'auth.organization.leave': {},
  'auth.organization.list': { verbose: true },
  'auth.organization.listMembers': { organizationId: ORG, limit: 500 },
  'auth.organization.listTeams': { organizationId: 'acme' },
  'auth.organization.rejectInvitation': { invitationId: 'inv_1' },
  'auth.organization.removeMember': { organizationId: ORG, memberIdOrEmail: 'grace' },
  'auth.organization.removeTeam': { organizationId: ORG, teamId: 'team_1' },
  'auth.organization.removeTeamMember': { teamId: TEAM },
  'auth.organization.update': { organizationId: ORG, data: { name: 'Acme Corporation', plan: 'enterprise' } },
  'auth.organization.updateMemberRole': { organizationId: ORG, memberId: MEM, role: 'viewer' },
  'auth.organization.updateTeam': { teamId: TEAM, data: {} },
  'auth.requestPasswordReset': { email: 'ada.example.com' },
  'auth.resetPassword': { token: 'k7Qf2rXa9Lm3', newPassword: 'short' },
  'auth.revokeOtherSessions': { verbose: true },
  'auth.revokeSession': { id: 'ks2x7q4mhv3n5rtw2cpa6yfb.Zm9vYmFy' },
  'auth.revokeSessions': { verbose: true },
  'auth.sendVerificationEmail': { email: 'ada.example.com' },
  'auth.signInEmail': { email: 'ada@example.com' },
  'auth.signInSocial': { provider: 'gitlab' },
  'auth.signOut': { verbose: true },
  'auth.signUpEmail': { name: 'Ada Lovelace', email: 'ada@example.com', password: 'hunter2' },
  'auth.stripe.webhook': { id: 'evt_1', type: 'invoice.paid', created: '2026-11-22', data: { object: {} } },
  'auth.subscription.billingPortal': { organizationId: 'acme' },
  'auth.subscription.cancel': { organizationId: 'acme' },
  'auth.subscription.restore': { organizationId: 'acme' },
  'auth.subscription.upgrade': { organizationId: ORG, plan: 'free', successUrl: 'https://app.example.com/billing', cancelUrl: 'https://app.example.com/billing' },
  'auth.verifyEmail': {},
};

const contracts = [
  ['openapi.yaml', v1Document as Json, procedures as Record<string, ProcedureDefinition>],
  ['auth.yaml', authDocument as Json, authRoutes as Record<string, ProcedureDefinition>],
] as const;

const operations = contracts.flatMap(([file, doc, table]) => Object.values(table).map((procedure) => [procedure.name, file, doc, procedure] as const));

/** The input fields of an operation (path, query and body; not headers). */
const inputFields = (procedure: ProcedureDefinition) => procedure.fields.filter((field) => field.in !== 'header').map((field) => field.name);

/** The body the server answers for the input: restInput reads it as a request, the validator refuses it. */
function serverAnswer(procedure: ProcedureDefinition, input: Record<string, unknown>): Json {
  const params: Record<string, string> = {};
  const query: Record<string, string> = {};
  const body: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(structuredClone(input))) {
    const field = procedure.fields.find((f) => f.name === name && (f.in === 'path' || f.in === 'query'));
    if (field?.in === 'path') params[name] = String(value);
    else if (field?.in === 'query') query[name] = String(value);
    else body[name] = value;
  }
  const req = { params, query, body: Object.keys(body).length > 0 ? body : undefined };
  try {
    const { input: read, refused } = restInput(procedure, req as never);
    validateInput(procedure.name, read, refused);
  } catch (error) {
    expect(error).toBeInstanceOf(ApiError);
    return (error as ApiError).toBody(procedure.errors);
  }
  throw new Error(`${procedure.name}: the bad input is accepted`);
}

/** The operation's 400 as declared (the source may $ref a shared response) and as resolved. */
function badRequestOf(doc: Json, procedure: ProcedureDefinition): { declared: Json; response: Json; media: Json } {
  const declared = doc.paths[procedure.path][procedure.method.toLowerCase()].responses['400'];
  const response = deref(doc, declared);
  return { declared, response, media: response.content['application/json'] };
}

describe('every operation answers its 400 with its own example, the one the server sends', () => {
  it('the table has one bad input for each operation of both contracts', () => {
    expect(Object.keys(badInputs).sort()).toEqual(operations.map(([name]) => name).sort());
  });

  it.each(operations)('%s (%s)', (name, _file, doc, procedure) => {
    expect(procedure.errors, name).toContain('BAD_REQUEST');
    const { declared, response, media } = badRequestOf(doc, procedure);
    // The one example Prism answers with: a media-level `example`, no named ones.
    expect(media.examples, name).toBeUndefined();
    expect(media.example, name).toBeDefined();
    // Exactly what the server answers for the recorded bad input.
    const answer = serverAnswer(procedure, badInputs[name]!);
    expect(media.example, name).toEqual(answer);
    expect(answer).toMatchObject({ defined: true, code: 'BAD_REQUEST', status: 400, message: 'Input validation failed.' });

    const fields = inputFields(procedure);
    if (fields.length === 0) {
      // Nothing to name: the shared response, whose example is a body sent to an operation that takes none.
      expect(declared, name).toEqual({ $ref: '#/components/responses/BadRequest' });
      expect(media.example.data.issues).toEqual([{ path: [], message: 'this operation takes no request body' }]);
      return;
    }
    // Its own response: the shared schema and headers by reference, its own example.
    expect(declared.$ref, `${name}: its own 400, not the shared one`).toBeUndefined();
    const shared = deref(doc, { $ref: '#/components/responses/BadRequest' });
    expect(response.headers, name).toEqual(shared.headers);
    for (const header of Object.values<Json>(response.headers)) expect(Object.keys(header), name).toEqual(['$ref']);
    if (media.schema.oneOf) expect(media.schema.oneOf, name).toContainEqual({ $ref: '#/components/schemas/BadRequestError' });
    else expect(media.schema, name).toEqual({ $ref: '#/components/schemas/BadRequestError' });
    // Each issue names a field of this operation.
    expect(media.example.data.issues.length, name).toBeGreaterThan(0);
    for (const issue of media.example.data.issues) expect(fields, `${name}: ${JSON.stringify(issue.path)}`).toContain(issue.path[0]);
  });

  it('the shared 400 is referenced only by the operations that take no input', () => {
    for (const [name, , doc, procedure] of operations) {
      const { declared } = badRequestOf(doc, procedure);
      if (declared.$ref === '#/components/responses/BadRequest') expect(inputFields(procedure), name).toEqual([]);
    }
  });
});

describe('the 2xx answers the mock gives tell the story of the example inputs', () => {
  const ID = /\b(?:org|ws|doc|usr|team|inv|mem|job)_[a-z2-7]{24}\b/g;
  /** What Prism answers: the media-level example, else the first named one, else the schema's first example. */
  const mockAnswer = (doc: Json, media: Json): unknown => {
    if (media.example !== undefined) return media.example;
    const named = Object.values<Json>(media.examples ?? {})[0];
    if (named) return deref(doc, named).value;
    return deref(doc, media.schema)?.examples?.[0];
  };
  /** The example input of an operation: its parameters' examples and its body's first example. */
  const exampleInput = (doc: Json, procedure: ProcedureDefinition): Json => {
    const operation = doc.paths[procedure.path][procedure.method.toLowerCase()];
    const input: Json = {};
    for (const ref of operation.parameters ?? []) {
      const parameter = deref(doc, ref);
      if (parameter.in !== 'header' && parameter.example !== undefined) input[parameter.name] = parameter.example;
    }
    const body = operation.requestBody && deref(doc, operation.requestBody).content?.['application/json'];
    Object.assign(input, body?.example ?? deref(doc, body?.schema ?? {})?.examples?.[0] ?? {});
    return input;
  };
  const answers = operations.flatMap(([name, _file, doc, procedure]) => {
    const responses = doc.paths[procedure.path][procedure.method.toLowerCase()].responses as Json;
    return Object.entries(responses)
      .filter(([status]) => status.startsWith('2'))
      .map(([status, response]) => [name, doc, procedure, status, mockAnswer(doc, deref(doc, response).content?.['application/json'] ?? {})] as const)
      .filter(([, , , , answer]) => answer !== undefined);
  });

  it("names only the ids of the contract's examples, and one organization, workspace, document and team", () => {
    const story = JSON.stringify([(v1Document as Json).components.schemas, (authDocument as Json).components.schemas]);
    const named = new Set(answers.flatMap(([, , , , answer]) => JSON.stringify(answer).match(ID) ?? []));
    for (const id of named) expect(story, id).toContain(id);
    const single = (prefix: string) => [...named].filter((id) => id.startsWith(prefix));
    expect(single('org_')).toEqual([ORG]);
    expect(single('ws_')).toEqual([WS]);
    expect(single('doc_')).toEqual([DOC]);
    expect(single('team_')).toEqual([TEAM]);
  });

  it('an answer about one row is about the row its example input names', () => {
    // jobs.retry answers the new job it queues, whose `retryOf` is the one its input names.
    // auth.admin.impersonateUser answers the shared SessionWithUser example (Ada's own session): its
    // answer needs a platform admin in `impersonatedBy`, and the examples have none yet.
    const newRow = ['jobs.retry', 'auth.admin.impersonateUser'];
    const wrong: string[] = [];
    for (const [name, doc, procedure, status, answer] of answers) {
      if (newRow.includes(name)) continue;
      const row = answer as Json | null;
      const id = typeof row?.id === 'string' ? row.id : typeof row?.user?.id === 'string' ? row.user.id : undefined;
      if (!id || !ID.test(id)) continue;
      ID.lastIndex = 0;
      const prefix = id.slice(0, id.indexOf('_') + 1);
      const input = exampleInput(doc, procedure);
      // The row the input names by `id`, whatever its kind, else the input's ids of the answer's kind.
      const named = typeof input.id === 'string' ? [input.id] : Object.values(input).filter((value): value is string => typeof value === 'string' && value.startsWith(prefix));
      for (const value of named) if (value !== id) wrong.push(`${name} ${status}: answers ${id}, its input names ${value}`);
    }
    expect(wrong).toEqual([]);
  });
});
