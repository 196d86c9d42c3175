/**
 * The role -> permission matrix (../shared/design/identity.md, "Roles → permissions"), as data: the binding layer and the
 * authorization tests both read this table.
 */
export const roles = ['owner', 'admin', 'member'] as const;
export type OrganizationRole = (typeof roles)[number];

const all = ['owner', 'admin', 'member'] as const;
const managers = ['owner', 'admin'] as const;
const owner = ['owner'] as const;

export const permissionMatrix = {
  'workspace:read': all,
  'workspace:create': all,
  'workspace:update': all,
  'workspace:delete': managers,
  'document:read': all,
  'document:create': all,
  'document:delete': all,
  'job:read': all,
  'job:create': all,
  'job:cancel': all,
  'auditLog:read': managers,
  'billing:read': all,
  'billing:manage': owner,
  'organization:update': managers,
  'organization:delete': owner,
  'member:create': managers,
  'member:update': managers,
  'member:delete': managers,
  'invitation:create': managers,
  'invitation:cancel': managers,
  'team:create': managers,
  'team:update': managers,
  'team:delete': managers,
} as const satisfies Record<string, readonly OrganizationRole[]>;

export type Permission = keyof typeof permissionMatrix;

export function isPermission(value: string): value is Permission {
  return Object.hasOwn(permissionMatrix, value);
}

export function roleHasPermission(role: OrganizationRole, permission: Permission): boolean {
  return (permissionMatrix[permission] as readonly OrganizationRole[]).includes(role);
}
