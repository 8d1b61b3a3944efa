import { type Account, ADMIN_ROLES } from './accounts/model.ts';
import { AuthenticationRequired, Forbidden } from './errors.ts';
import type { OAuthClient } from './oauth/model.ts';

/**
 * Who is calling. A request without an `Authorization` header is a guest. It lives beside the
 * typed errors rather than in the HTTP layer because the domain decides with it too: the
 * account services take the caller as their actor, and authentication produces it.
 */
export type Caller =
  | { role: 'guest' }
  | { role: 'user'; account: Account }
  | { role: 'admin'; account: Account }
  /** A machine client authenticated by the client credentials grant. */
  | { role: 'client'; client: OAuthClient };

/**
 * The operator at the command line (`admin:create`): the break-glass path for when no
 * administrator can sign in. It holds every administrator role and has no account of its own,
 * so it may do what a superuser may, but nothing on "own" account.
 */
export const OPERATOR = Object.freeze({ role: 'operator' as const });

/** Who acts on the domain: a caller of the API, or the operator. */
export type Actor = Caller | typeof OPERATOR;

/** What a route or an operation may require. `superuser` is an admin role that includes `admin`. */
export type Role = 'guest' | 'user' | 'admin' | 'superuser' | 'client';

/** The roles an actor holds. A superuser is also an admin. */
export function rolesOf(actor: Actor): readonly Role[] {
  if (actor.role === 'operator') return ADMIN_ROLES;
  if (actor.role !== 'admin') return [actor.role];
  return actor.account.roles.includes('superuser') ? ['admin', 'superuser'] : ['admin'];
}

/** Reads only the actor's roles against a permission: 401 for a guest, 403 for anyone else. */
export function requirePermission(actor: Actor, permission: 'public' | readonly Role[]): void {
  if (permission === 'public') return;
  if (rolesOf(actor).some((role) => permission.includes(role))) return;
  if (actor.role === 'guest') throw new AuthenticationRequired();
  throw new Forbidden();
}
