import { createHash } from 'node:crypto';

/**
 * A short digest of the password hash a login was verified against. Access tokens carry it
 * (claim `cst`) and refresh tokens store it; both are refused once the account's hash has
 * changed. So a password change or reset ends every session issued before it, including a
 * login that was still being verified against the old password while the change happened,
 * which revoking refresh tokens alone can miss.
 */
export function credentialStamp(passwordHash: string): string {
  return createHash('sha256').update(passwordHash).digest('base64url').slice(0, 22);
}
