import { AuthenticationRequired, Forbidden } from '../errors.ts';
import type { Identity, Role } from './route.ts';

/** The roles an identity holds. A superuser is also an admin. */
export function rolesOf(identity: Identity): readonly Role[] {
  if (identity.role !== 'admin') return [identity.role];
  return identity.account.roles.includes('superuser') ? ['admin', 'superuser'] : ['admin'];
}

/** Reads only the identity's role against the route's permission (docs/api.md, "Who may call what"). */
export function authorize(identity: Identity, permission: 'public' | readonly Role[]): void {
  if (permission === 'public') return;
  if (rolesOf(identity).some((role) => permission.includes(role))) return;
  if (identity.role === 'guest') throw new AuthenticationRequired();
  throw new Forbidden();
}
