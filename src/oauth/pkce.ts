import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * Proof Key for Code Exchange (RFC 7636), S256 only: `plain` would hand the verifier to
 * whoever reads the authorization request, and RFC 9700 §2.1.1 rules it out where S256 works.
 */

/** §4.2: BASE64URL(SHA256(verifier)), 32 bytes, so 43 characters without padding. */
export const CODE_CHALLENGE = /^[A-Za-z0-9_-]{43}$/;

/** §4.1: 43 to 128 unreserved characters. */
export const CODE_VERIFIER_PATTERN = '^[A-Za-z0-9._~-]{43,128}$';

/** §4.6: whether the verifier hashes to the challenge, compared in constant time. */
export function verifiesChallenge(verifier: string, challenge: string): boolean {
  const computed = Buffer.from(createHash('sha256').update(verifier, 'ascii').digest('base64url'));
  const expected = Buffer.from(challenge);
  return expected.length === computed.length && timingSafeEqual(expected, computed);
}
