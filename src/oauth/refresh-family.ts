import type {
  RefreshFamilyRecord,
  RefreshRetryRecord,
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
    return presented.mac === current.mac ? { state: 'current', family } : { state: 'unknown' };
  if (presented.generation > current.generation) return { state: 'unknown' };
  if (
    presented.generation === current.generation - 1 &&
    retry?.replacedMac === presented.mac &&
    isOpen(retry, now)
  )
    return { state: 'retry', family, sealedSuccessor: retry.sealedSuccessor };
  return { state: 'reused', family };
}

/**
 * Whether the retry window is open: it runs until `until`, except that while an answer waits
 * for the replicas it has not started, so that no outage of theirs, however long, turns the
 * client's retries into reuse; but no waiting answer keeps it open past the limit an earlier
 * answer set.
 */
function isOpen(retry: RefreshRetryRecord, now: number): boolean {
  const waiting = retry.pending !== undefined && !(retry.limit !== undefined && retry.limit <= now);
  return waiting || retry.until > now;
}

/** A rotation asked of a family: the presented token, its successor, the family's new expiry. */
export interface RotationRequest {
  family: RefreshTokenFamily;
  presented: RefreshTokenGeneration;
  successor: RefreshTokenGeneration;
  /** What to keep for a retry of the presented token; none, and a retry finds nothing. */
  retry?: RefreshTokenRetry;
  /**
   * Behind replicas, this answer's mark (a fresh MAC): the answer counts only once they
   * confirm it, and its window starts then (`settleAnswer`). Only with `retry`.
   */
  pending?: string;
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
  { family, presented, successor, retry, pending }: RotationRequest,
  now: number,
): RotationDecision {
  if (!record) return { verdict: { state: 'unknown' }, next: null };
  const found = presentedState(record, presented, now);
  if (found.state === 'unknown' || found.state === 'revoked') return { verdict: found, next: null };
  if (found.state === 'reused') return { verdict: found, next: revokedRecord(record) };
  const marked = retry && pending;
  if (found.state === 'retry') {
    const kept = record.retry;
    if (!kept || !retry) return { verdict: found, next: null };
    // Waiting for the replicas, the window starts (again) once they confirm this answer.
    if (marked) return { verdict: found, next: { ...record, retry: { ...kept, pending } } };
    const limit = kept.limit ?? retry.limit;
    const until = Math.min(retry.until, limit);
    return {
      verdict: found,
      next: until > kept.until ? { ...record, retry: { ...kept, until, limit } } : null,
    };
  }
  const kept: RefreshRetryRecord | undefined = retry && {
    replacedMac: presented.mac,
    sealedSuccessor: retry.sealedSuccessor,
    until: retry.until,
    ...(marked ? { pending } : { limit: retry.limit }),
  };
  return {
    verdict: { state: 'rotated' },
    next: {
      family: { ...record.family, expiresAt: family.expiresAt },
      current: { ...successor },
      revoked: false,
      ...(kept && { retry: kept }),
    },
  };
}

/** How an answer that waited for the replicas ended, for the rotation that replaced `replacedMac`. */
export interface AnswerOutcome {
  /** The answer's mark (`RotationRequest.pending`). */
  mark: string;
  replacedMac: string;
  /** The end of the window, were it to start now. */
  until: number;
  /** The latest end of the window, were this the rotation's first answer; absent: it failed. */
  limit?: number;
}

/**
 * What the end of an answer's wait makes of the record, or null for no change. Confirmed, or
 * failed once an earlier answer has set the limit, the answer's mark goes and the window runs
 * until `until` (never shortened, never past the limit): a failed retry starts it again, so
 * that a client refused through an outage still finds it open. So does a retry refused
 * before its mark was made, while the window runs and no other answer waits. A failed
 * answer with no limit set leaves the mark: no client holds the successor yet, and its retry
 * must find it however long the replicas stay away. Another answer's mark is left alone, but
 * an answer confirmed while a retry of the same rotation waits sets the limit if none is
 * set, so that the retry's failure, or its client giving up, cannot keep the replaced token
 * a retry for good.
 */
export function settleAnswer(
  record: RefreshFamilyRecord | null,
  outcome: AnswerOutcome,
  now: number,
): RefreshFamilyRecord | null {
  const kept = record?.retry;
  if (!record || !kept || kept.replacedMac !== outcome.replacedMac) return null;
  const refusedUnmarked = kept.pending === undefined && outcome.limit === undefined && isOpen(kept, now);
  if (kept.pending !== outcome.mark && !refusedUnmarked) {
    const setsLimit = kept.pending !== undefined && kept.limit === undefined && outcome.limit !== undefined;
    return setsLimit ? { ...record, retry: { ...kept, limit: outcome.limit } } : null;
  }
  const limit = kept.limit ?? outcome.limit;
  if (limit === undefined) return null;
  const { pending: _answered, ...rest } = kept;
  const until = Math.max(Math.min(outcome.until, limit), kept.until);
  if (refusedUnmarked && until === kept.until) return null;
  return { ...record, retry: { ...rest, until, limit } };
}

/**
 * Whether `after` is `before`'s rotation with its retry record changed by another answer
 * since: a new mark, when this answer meant to mark it (`marking`), or else a window moved
 * on. The write this answer meant would have changed no more than that one did, so it may
 * count as made, just before the other: its window then runs with the other's. Concurrent
 * retries so settle in one round of writes, not one round each.
 */
export function overtaken(
  before: RefreshFamilyRecord,
  after: RefreshFamilyRecord | null,
  marking: boolean,
): boolean {
  const [was, is] = [before.retry, after?.retry];
  if (!after || after.revoked || !was || !is) return false;
  const sameRotation =
    after.current.generation === before.current.generation &&
    after.current.mac === before.current.mac &&
    is.replacedMac === was.replacedMac &&
    is.sealedSuccessor === was.sealedSuccessor;
  const changed = marking ? is.pending !== undefined && is.pending !== was.pending : is.until > was.until;
  return sameRotation && changed;
}

/** The family revoked for the rest of its life: none of its tokens refreshes again. */
export function revokedRecord(record: RefreshFamilyRecord): RefreshFamilyRecord {
  return { family: record.family, current: record.current, revoked: true };
}

/** A new family's record: its first token (generation 0) current. */
export function firstRecord(family: RefreshTokenFamily, first: RefreshTokenGeneration): RefreshFamilyRecord {
  return { family: { ...family }, current: { ...first }, revoked: false };
}
