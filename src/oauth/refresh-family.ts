import type {
  RefreshFamilyRecord,
  RefreshTokenFamily,
  RefreshTokenGeneration,
  RefreshTokenRetry,
  RefreshTokenRotation,
  RefreshTokenState,
} from './model.ts';

/**
 * The rules of a refresh-token family, in one place and without I/O: what a presented token
 * (its MAC verified by the caller) is, given the family's record and the time, and what a
 * rotation makes of the record. The stores keep records; the client check is the grant's.
 */

/** What the presented token is now; `record` null or past its expiry is an unknown family. */
export function presentedState(
  record: RefreshFamilyRecord | null,
  presented: RefreshTokenGeneration,
  now: number,
): RefreshTokenState {
  if (!record || record.family.expiresAt <= now) return { state: 'unknown' };
  if (record.revoked) return { state: 'revoked' };
  const { current, retry } = record;
  const family = { ...record.family };
  if (presented.generation === current.generation)
    return presented.mac === current.mac ? { state: 'current', grant: family } : { state: 'unknown' };
  if (presented.generation > current.generation) return { state: 'unknown' };
  if (
    presented.generation === current.generation - 1 &&
    retry?.replacedMac === presented.mac &&
    retry.until > now
  )
    return { state: 'retry', grant: family, sealedSuccessor: retry.sealedSuccessor };
  return { state: 'reused', grant: family };
}

/** A rotation asked of a family: the presented token, its successor, the family's new expiry. */
export interface RotationRequest {
  family: RefreshTokenFamily;
  presented: RefreshTokenGeneration;
  successor: RefreshTokenGeneration;
  /** What to keep for a retry of the presented token; none, and a retry finds nothing. */
  retry?: RefreshTokenRetry;
}

/** The verdict of a rotation and, when the record changes, the record to write in its place. */
export interface RotationDecision {
  verdict: RefreshTokenRotation;
  next: RefreshFamilyRecord | null;
}

/**
 * A current token is replaced by its successor, kept for its retries; a retry moves the end
 * of its window on to the asked one, never past the limit the rotation's first answer set, so
 * replays at intervals within the window cannot keep a replaced token redeemable for good; a
 * reused token revokes the family with that verdict. Anything else changes nothing.
 */
export function decideRotation(
  record: RefreshFamilyRecord | null,
  { family, presented, successor, retry }: RotationRequest,
  now: number,
): RotationDecision {
  if (!record) return { verdict: { state: 'unknown' }, next: null };
  const found = presentedState(record, presented, now);
  if (found.state === 'unknown' || found.state === 'revoked') return { verdict: found, next: null };
  if (found.state === 'reused') return { verdict: found, next: revokedRecord(record) };
  if (found.state === 'retry') {
    const kept = record.retry;
    const until = kept && retry ? Math.min(retry.until, kept.limit) : 0;
    const next = kept && until > kept.until ? { ...record, retry: { ...kept, until } } : null;
    return { verdict: found, next };
  }
  return {
    verdict: { state: 'rotated' },
    next: {
      family: { ...record.family, expiresAt: family.expiresAt },
      current: { ...successor },
      revoked: false,
      ...(retry && { retry: { ...retry, replacedMac: presented.mac } }),
    },
  };
}

/** The family revoked for the rest of its life: none of its tokens refreshes again. */
export function revokedRecord(record: RefreshFamilyRecord): RefreshFamilyRecord {
  return { family: record.family, current: record.current, revoked: true };
}

/** A new family's record: its first token (generation 0) current. */
export function firstRecord(family: RefreshTokenFamily, first: RefreshTokenGeneration): RefreshFamilyRecord {
  return { family: { ...family }, current: { ...first }, revoked: false };
}
