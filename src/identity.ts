import type { Account, OAuthClient } from './stores/types.ts';

/**
 * Who is calling. A request without an `Authorization` header is a guest. It lives beside the
 * typed errors rather than in the HTTP layer because the domain decides with it too: the
 * account services take the caller as their actor, and authentication produces it.
 */
export type Identity =
  | { role: 'guest' }
  | { role: 'user'; account: Account }
  | { role: 'admin'; account: Account }
  /** A machine client authenticated by the client credentials grant. */
  | { role: 'client'; client: OAuthClient };

/** What a route may require. `superuser` is an admin role that includes `admin`. */
export type Role = 'guest' | 'user' | 'admin' | 'superuser' | 'client';

/** The roles an identity holds. A superuser is also an admin. */
export function rolesOf(identity: Identity): readonly Role[] {
  if (identity.role !== 'admin') return [identity.role];
  return identity.account.roles.includes('superuser') ? ['admin', 'superuser'] : ['admin'];
}
