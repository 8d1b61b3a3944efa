import { createHash } from 'node:crypto';
import type { Account } from '../stores/types.ts';

/**
 * A short digest of the password hash a login was verified against and of the account's
 * session key at that moment. Access tokens carry it (claim `cst`) and refresh tokens store
 * it; both are refused once the account's stamp is another one, that is after a password
 * change or anything else that ended the account's sessions (see accounts/sessions.ts).
 */
export function credentialStamp(account: Pick<Account, 'passwordHash' | 'sessionKey'>): string {
  const digest = createHash('sha256').update(account.passwordHash);
  // Without a key the stamp is the digest of the hash alone, as before keys existed, so
  // tokens issued then stay valid. (Neither a bcrypt hash nor a key has a line break.)
  if (account.sessionKey !== '') digest.update(`\n${account.sessionKey}`);
  return digest.digest('base64url').slice(0, 22);
}
