import { type Actor, type Role, requirePermission, rolesOf } from '../caller.ts';
import { Forbidden } from '../errors.ts';
import type { Account, AccountKind } from './model.ts';

/**
 * Who may do what to which account. The role lists are what the route table declares as
 * each route's permission (checked before the body is read, so a caller without the role
 * hears 401 or 403 rather than a validation error); the account services check them again
 * for every caller, the operator at the command line too, and then the rules that need the
 * target account.
 */
/** What can be done with accounts; those on one's own account first, as their routes are tried. */
export const ACCOUNT_OPERATIONS = [
  'view-own',
  'update-own',
  'delete-own',
  'change-identity-own',
  'list',
  'create',
  'view',
  'update',
  'delete',
  'activate',
] as const;
export type AccountOperation = (typeof ACCOUNT_OPERATIONS)[number];

/** An empty list: nobody, the operation does not exist for that kind of account. */
export const ACCOUNT_PERMISSIONS: Readonly<
  Record<AccountKind, Readonly<Record<AccountOperation, readonly Role[]>>>
> = {
  user: {
    'view-own': ['user'],
    'update-own': ['user'],
    'delete-own': ['user'],
    'change-identity-own': ['user'],
    list: ['admin'],
    create: ['admin'],
    // A user only their own account: see assertMayView.
    view: ['admin', 'user'],
    update: ['admin'],
    delete: ['admin'],
    activate: ['admin'],
  },
  admin: {
    'view-own': ['admin'],
    'update-own': ['admin'],
    'delete-own': [],
    // An administrator's identity is a name, which a superuser changes.
    'change-identity-own': [],
    list: ['admin'],
    create: ['superuser'],
    view: ['admin'],
    // Plain admins only the names of plain admins: see assertMayChange.
    update: ['admin'],
    delete: ['superuser'],
    activate: [],
  },
};

export function assertMay(actor: Actor, kind: AccountKind, operation: AccountOperation): void {
  requirePermission(actor, ACCOUNT_PERMISSIONS[kind][operation]);
}

/** Refused before the lookup, so a user cannot probe which ids exist. */
export function assertMayView(actor: Actor, id: string): void {
  if (actor.role === 'user' && actor.account.id !== id)
    throw new Forbidden('Users may only read their own account');
}

/** What of an administrator only a superuser changes: the credentials, the status, the roles. */
const SUPERUSER_ONLY_FIELDS = ['identity', 'password', 'status', 'roles'] as const;

/**
 * The rules of a change that depend on the target: one's own password changes only with the
 * current one (through the own-account operation); an administrator's identity, password,
 * status and roles, and anything of a superuser's account, only a superuser changes.
 */
export function assertMayChange(
  actor: Actor,
  kind: AccountKind,
  target: Account,
  changes: Partial<Record<(typeof SUPERUSER_ONLY_FIELDS)[number], unknown>>,
): void {
  // Without the current password a stolen access token must not be enough to take the account.
  if (changes.password !== undefined && ownAccountOf(actor, kind)?.id === target.id)
    throw new Forbidden(
      `Change your own password with PATCH /${kind}s/my-account, which asks for the current one`,
    );
  if (kind !== 'admin' || rolesOf(actor).includes('superuser')) return;
  if (target.roles.includes('superuser'))
    throw new Forbidden("Only a superuser may change a superuser's account");
  const guarded = SUPERUSER_ONLY_FIELDS.filter((field) => changes[field] !== undefined);
  if (guarded.length > 0)
    throw new Forbidden(`Only a superuser may change an administrator's ${guarded.join(', ')}`);
}

/** The actor's own account when it is one of this kind; the operator has none. */
export function ownAccountOf(actor: Actor, kind: AccountKind): Account | undefined {
  if ((actor.role === 'admin' || actor.role === 'user') && actor.role === kind) return actor.account;
  return undefined;
}
