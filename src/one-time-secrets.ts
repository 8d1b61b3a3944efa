import { createHash, randomBytes } from 'node:crypto';
import { isCanonicalBase64url } from './base64url.ts';

/**
 * Secrets handed out to be presented once: the hashes of activation and reset links, the
 * one-time value of a sign-in form, authorization codes. 256 random bits, base64url (43
 * characters); only their SHA-256 digest is stored, so the store alone cannot produce one
 * that works.
 */
export function newOneTimeSecret(): { secret: string; digest: string } {
  const secret = randomBytes(SECRET_BYTES).toString('base64url');
  return { secret, digest: digestOneTimeSecret(secret) };
}

export function digestOneTimeSecret(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

/**
 * Whether a presented value can be such a secret at all, spelt as it was handed out; anything
 * else is refused without a lookup.
 */
export function isOneTimeSecretShaped(value: string): boolean {
  return isCanonicalBase64url(value, SECRET_BYTES);
}

const SECRET_BYTES = 32;
