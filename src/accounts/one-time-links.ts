import { createHash, randomBytes } from 'node:crypto';

/**
 * The hashes in activation and reset links: 256 random bits, base64url (43 characters).
 * Only their SHA-256 digest is stored, so the store alone cannot produce a working link.
 */
export function newLinkHash(): { hash: string; digest: string } {
  const hash = randomBytes(32).toString('base64url');
  return { hash, digest: digestLinkHash(hash) };
}

export function digestLinkHash(hash: string): string {
  return createHash('sha256').update(hash, 'utf8').digest('hex');
}

/** Whether a path segment can be a link hash at all; anything else is refused without a lookup. */
export function isLinkHashShaped(value: string): boolean {
  return /^[A-Za-z0-9_-]{43}$/.test(value);
}
