import { hash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { ClientChanges, OAuthClient } from './model.ts';

/**
 * A confidential client's secrets: made here (256 random bits), kept as SHA-256 digests, and
 * rotated with an overlap: after a rotation the secret before it is still accepted for a
 * while, so that every running copy of the client can move to the new one without an outage
 * (docs/security.md, "Client authentication", says why the default and the maximum are what
 * they are).
 */

/** How long the secret before a rotation stays accepted when the rotation does not say. */
export const DEFAULT_SECRET_OVERLAP_SECONDS = 24 * 60 * 60;

/** The longest overlap a rotation may ask for. */
export const MAX_SECRET_OVERLAP_SECONDS = 7 * 24 * 60 * 60;

export function digestClientSecret(secret: string): string {
  return hash('sha256', secret, 'hex');
}

/** 256 random bits: a machine secret, stored as its SHA-256 digest. */
export function newClientSecret(): string {
  return randomBytes(32).toString('base64url');
}

/** Until when the secret before the last rotation is accepted; null when it is not (any more). */
export function previousSecretExpiry(client: OAuthClient, now: Date): Date | null {
  const expiresAt = client.previousSecretExpiresAt;
  if (client.previousSecretDigest === null || expiresAt === null) return null;
  return expiresAt.getTime() > now.getTime() ? expiresAt : null;
}

/** Compared against when there is nothing to compare with, so that every path does the same work. */
const ABSENT_DIGEST = Buffer.from(digestClientSecret('no secret to compare with'), 'hex');

function sameDigest(expected: Buffer, presented: Buffer): boolean {
  return expected.length === presented.length && timingSafeEqual(expected, presented);
}

/**
 * Whether `secret` is the client's secret, or its previous one while that is accepted. Both
 * comparisons always run, in constant time, and their results are combined without a branch,
 * so the time taken tells neither whether a previous secret exists nor which of the two
 * matched. A client that is absent or has no secret (a public one) matches nothing.
 */
export function acceptsSecret(client: OAuthClient | null, secret: string, now: Date): boolean {
  // The digest's bytes at once (one-shot `hash`), rather than hex and decoded again: every
  // token request with a client secret passes here.
  const presented = hash('sha256', secret, 'buffer');
  const current = client?.secretDigest ?? null;
  const previous = client && previousSecretExpiry(client, now) ? client.previousSecretDigest : null;
  const matchesCurrent = sameDigest(
    current === null ? ABSENT_DIGEST : Buffer.from(current, 'hex'),
    presented,
  );
  const matchesPrevious = sameDigest(
    previous === null ? ABSENT_DIGEST : Buffer.from(previous, 'hex'),
    presented,
  );
  // `|` and `&`, not `||` and `&&`: no comparison is skipped and no result short-circuits.
  return Boolean(
    (Number(matchesCurrent) & Number(current !== null)) |
      (Number(matchesPrevious) & Number(previous !== null)),
  );
}

/**
 * A new secret for the client, the current one becoming the previous one until `overlapSeconds`
 * from now (0: not at all). A previous secret still accepted from an earlier rotation stops at
 * once: a client has at most two secrets, and the oldest is the one its copies have left.
 */
export function rotateSecret(
  client: OAuthClient,
  overlapSeconds: number,
  now: Date,
): { secret: string; changes: ClientChanges } {
  const secret = newClientSecret();
  const overlaps = overlapSeconds > 0 && client.secretDigest !== null;
  return {
    secret,
    changes: {
      secretDigest: digestClientSecret(secret),
      previousSecretDigest: overlaps ? client.secretDigest : null,
      previousSecretExpiresAt: overlaps ? new Date(now.getTime() + overlapSeconds * 1000) : null,
    },
  };
}

/** Ends the overlap now: only the current secret is accepted from then on. */
export const RETIRE_PREVIOUS_SECRET: ClientChanges = {
  previousSecretDigest: null,
  previousSecretExpiresAt: null,
};

/**
 * Any write of a client clears a previous secret whose overlap is over, so that no expired
 * digest lingers in the store; nothing while one is live or there is none.
 */
export function clearExpiredSecret(client: OAuthClient, now: Date): ClientChanges {
  const expired = client.previousSecretDigest !== null && previousSecretExpiry(client, now) === null;
  return expired ? RETIRE_PREVIOUS_SECRET : {};
}
