import { AuthenticationRequired, Forbidden } from '../errors.ts';
import { type Identity, type Role, rolesOf } from '../identity.ts';

/** Reads only the identity's role against the route's permission (SPEC, Authentication 7). */
export function authorize(identity: Identity, permission: 'public' | readonly Role[]): void {
  if (permission === 'public') return;
  if (rolesOf(identity).some((role) => permission.includes(role))) return;
  if (identity.role === 'guest') throw new AuthenticationRequired();
  throw new Forbidden();
}
