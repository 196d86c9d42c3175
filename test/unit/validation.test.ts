import { describe, expect, it } from 'vitest';
import { inputValidator, toIssues } from '../../src/contract/validators.ts';
import { issuesOf } from '../support/input-issues.ts';

const ORG = 'org_pycdybk377oxtzq6svizx3or';
const WS = 'ws_i5xx2bzn3kir2gshyl7sn5pk';

describe('generated input validators', () => {
  const base = { organizationId: ORG, name: 'Research', slug: 'research' };
  const cases: { given: Record<string, unknown>; want: unknown[] }[] = [
    { given: base, want: [] },
    { given: { ...base, name: '' }, want: [expect.objectContaining({ path: ['name'] })] },
    { given: { ...base, name: 'x'.repeat(81) }, want: [expect.objectContaining({ path: ['name'], params: { limit: 80 } })] },
    { given: { ...base, name: 'tab\there' }, want: [{ path: ['name'], message: 'must not contain control characters', params: { reason: 'control_characters' } }] },
    { given: { ...base, name: 'line\u2028separator' }, want: [expect.objectContaining({ params: { reason: 'control_characters' } })] },
    { given: { ...base, name: 'C1 \u0085 next line' }, want: [expect.objectContaining({ params: { reason: 'control_characters' } })] },
    { given: { ...base, name: 'NUL \u0000 inside' }, want: [expect.objectContaining({ path: ['name'], params: { reason: 'control_characters' } })] },
    { given: { ...base, name: 'lone \ud800 surrogate' }, want: [expect.objectContaining({ path: ['name'], params: { reason: 'control_characters' } })] },
    { given: { ...base, name: 'emoji \u{1f600} is fine' }, want: [] },
    { given: { ...base, slug: 'research\n' }, want: [expect.objectContaining({ path: ['slug'] }), expect.objectContaining({ path: ['slug'], params: { reason: 'control_characters' } })] },
    { given: { ...base, organizationId: 'org_1' }, want: [expect.objectContaining({ path: ['organizationId'], params: { pattern: '^org_[a-z2-7]{24}$' } })] },
    { given: { ...base, organizationId: ORG.toUpperCase() }, want: [expect.objectContaining({ path: ['organizationId'] })] },
    { given: { ...base, organizationId: WS }, want: [expect.objectContaining({ path: ['organizationId'] })] },
    { given: { ...base, teamId: 'team_o6ue33rb6pvp5bn2pzcyibbt' }, want: [] },
    { given: { ...base, teamId: 'team_nope' }, want: expect.arrayContaining([expect.objectContaining({ path: ['teamId'], params: { pattern: '^team_[a-z2-7]{24}$' } })]) },
    { given: { ...base, slug: 'a' }, want: [expect.objectContaining({ path: ['slug'] })] },
    { given: { ...base, slug: 'Upper' }, want: [expect.objectContaining({ path: ['slug'] })] },
    { given: { ...base, slug: 'ends-' }, want: [expect.objectContaining({ path: ['slug'] })] },
    { given: { ...base, teamId: null }, want: [] },
    { given: { name: 'x', slug: 'ok' }, want: [{ path: ['organizationId'], message: "must have required property 'organizationId'" }] },
    { given: { ...base, extra: 1 }, want: [{ path: ['extra'], message: 'is not a known field' }] },
  ];
  for (const { given, want } of cases) {
    it(`workspaces.create ${JSON.stringify(given).slice(0, 70)}`, () => {
      expect(issuesOf('workspaces.create', given)).toEqual(want);
    });
  }

  it('the contact message allows tab, LF and CR only', () => {
    const ok = { email: 'ada@example.com', message: 'Line one\r\nline\ttwo' };
    expect(issuesOf('contact.send', ok)).toEqual([]);
    expect(issuesOf('contact.send', { ...ok, message: 'Escape \u001b[31m red' })).toEqual([expect.objectContaining({ path: ['message'], params: { reason: 'control_characters' } })]);
    expect(issuesOf('contact.send', { ...ok, email: 'nope' })).toEqual([expect.objectContaining({ path: ['email'], params: { format: 'email' } })]);
  });

  it('fills in defaults', () => {
    const input: Record<string, unknown> = { workspaceId: WS, organizationId: ORG };
    expect(inputValidator('documents.list')(input)).toBe(true);
    expect(input.limit).toBe(50);
  });

  it('maps array positions to numbers in issue paths', () => {
    expect(toIssues([{ instancePath: '/input/texts/3', keyword: 'maxLength', params: { limit: 8000 }, message: 'too long' }])).toEqual([
      { path: ['input', 'texts', 3], message: 'too long', params: { limit: 8000 } },
    ]);
  });
});
