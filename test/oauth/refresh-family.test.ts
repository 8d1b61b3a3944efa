/**
 * The refresh family's rules, case by case, on records alone: what a presented token is, and
 * what a rotation makes of the record.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { RefreshFamilyRecord, RefreshRetryRecord, RefreshTokenFamily } from '../../src/oauth/model.ts';
import {
  decideRotation,
  firstRecord,
  overtaken,
  presentedState,
  revokedRecord,
  settleAnswer,
} from '../../src/oauth/refresh-family.ts';

const NOW = Date.UTC(2030, 0, 1);
const family: RefreshTokenFamily = {
  familyId: 'f1',
  clientId: 'web',
  accountKind: 'user',
  subject: 's1',
  scope: 'profile',
  credentialStamp: 'stamp',
  expiresAt: NOW + 60_000,
};
const first = { generation: 0, mac: 'mac-0' };
const second = { generation: 1, mac: 'mac-1' };
const third = { generation: 2, mac: 'mac-2' };
const retry = { sealedSuccessor: 'sealed-1', until: NOW + 10_000, limit: NOW + 300_000 };

/** The record after the first token was rotated into the second, kept for retries. */
function rotatedOnce(): RefreshFamilyRecord {
  const { next } = decideRotation(
    firstRecord(family, first),
    { family, presented: first, successor: second, retry },
    NOW,
  );
  assert.ok(next);
  return next;
}

describe('presentedState', () => {
  test('no record, or one past its expiry: unknown', () => {
    assert.deepEqual(presentedState(null, first, NOW), { state: 'unknown' });
    assert.deepEqual(presentedState(firstRecord(family, first), first, family.expiresAt), {
      state: 'unknown',
    });
  });

  test('a revoked family: revoked, whatever the token', () => {
    const revoked = revokedRecord(firstRecord(family, first));
    assert.deepEqual(presentedState(revoked, first, NOW), { state: 'revoked' });
    assert.deepEqual(presentedState(revoked, second, NOW), { state: 'revoked' });
  });

  test('the current generation: current with its MAC, unknown with another', () => {
    assert.deepEqual(presentedState(firstRecord(family, first), first, NOW), {
      state: 'current',
      family,
    });
    assert.deepEqual(presentedState(firstRecord(family, first), { generation: 0, mac: 'forged' }, NOW), {
      state: 'unknown',
    });
  });

  test('a generation not issued yet: unknown', () => {
    assert.deepEqual(presentedState(firstRecord(family, first), second, NOW), { state: 'unknown' });
  });

  test('the replaced token within its window: retry with the sealed successor', () => {
    assert.deepEqual(presentedState(rotatedOnce(), first, NOW + 9_999), {
      state: 'retry',
      family,
      sealedSuccessor: 'sealed-1',
    });
  });

  test('the replaced token at the end of its window, or with another MAC: reused', () => {
    assert.deepEqual(presentedState(rotatedOnce(), first, retry.until), { state: 'reused', family });
    assert.deepEqual(presentedState(rotatedOnce(), { generation: 0, mac: 'other' }, NOW), {
      state: 'reused',
      family,
    });
  });

  test('an older generation than the replaced one: reused', () => {
    const { next } = decideRotation(
      rotatedOnce(),
      { family, presented: second, successor: third, retry },
      NOW,
    );
    assert.ok(next);
    assert.deepEqual(presentedState(next, first, NOW), { state: 'reused', family });
  });
});

describe('decideRotation', () => {
  test('the current token rotates: its successor is current, the family expiry moves, the retry is kept', () => {
    const later = { ...family, expiresAt: NOW + 120_000 };
    const { verdict, next } = decideRotation(
      firstRecord(family, first),
      { family: later, presented: first, successor: second, retry },
      NOW,
    );
    assert.deepEqual(verdict, { state: 'rotated' });
    assert.deepEqual(next, {
      family: later,
      current: second,
      revoked: false,
      retry: { ...retry, replacedMac: 'mac-0' },
    });
  });

  test('rotated without a retry record: the replaced token is reused at once', () => {
    const { next } = decideRotation(
      firstRecord(family, first),
      { family, presented: first, successor: second },
      NOW,
    );
    assert.ok(next);
    assert.equal(next.retry, undefined);
    assert.equal(presentedState(next, first, NOW).state, 'reused');
  });

  test('a retry moves the window on to the asked end, never past the limit, and never back', () => {
    const record = rotatedOnce();
    const asked = (until: number) =>
      decideRotation(record, { family, presented: first, successor: third, retry: { ...retry, until } }, NOW);
    const moved = asked(NOW + 20_000);
    assert.equal(moved.verdict.state, 'retry');
    assert.equal(moved.next?.retry?.until, NOW + 20_000);
    assert.equal(moved.next?.current, record.current);
    assert.equal(asked(NOW + 900_000).next?.retry?.until, retry.limit);
    assert.deepEqual(asked(NOW + 5_000), { verdict: presentedState(record, first, NOW), next: null });
  });

  test('a reuse revokes the family with that verdict, and drops the retry record', () => {
    const { verdict, next } = decideRotation(
      rotatedOnce(),
      { family, presented: first, successor: third, retry },
      retry.until,
    );
    assert.deepEqual(verdict, { state: 'reused', family });
    assert.deepEqual(next, { family, current: second, revoked: true });
  });

  test('unknown, revoked and expired families change nothing', () => {
    const request = { family, presented: first, successor: second, retry };
    assert.deepEqual(decideRotation(null, request, NOW), { verdict: { state: 'unknown' }, next: null });
    assert.deepEqual(decideRotation(revokedRecord(firstRecord(family, first)), request, NOW), {
      verdict: { state: 'revoked' },
      next: null,
    });
    assert.deepEqual(decideRotation(firstRecord(family, first), request, family.expiresAt), {
      verdict: { state: 'unknown' },
      next: null,
    });
    assert.deepEqual(decideRotation(firstRecord(family, first), { ...request, presented: third }, NOW), {
      verdict: { state: 'unknown' },
      next: null,
    });
  });
});

/** The record with its retry record changed. */
function changedRetry(
  record: RefreshFamilyRecord,
  changes: Partial<RefreshRetryRecord>,
): RefreshFamilyRecord {
  assert.ok(record.retry);
  return { ...record, retry: { ...record.retry, ...changes } };
}

describe('answers that wait for the replicas', () => {
  /** The first token rotated by an answer marked `answer`, its window not started. */
  function waiting(answer = 'mark-a'): RefreshFamilyRecord {
    const { next } = decideRotation(
      firstRecord(family, first),
      { family, presented: first, successor: second, retry, pending: answer },
      NOW,
    );
    assert.ok(next);
    return next;
  }
  const confirmed = (mark: string, at: number) => ({
    mark,
    replacedMac: 'mac-0',
    until: at + 10_000,
    limit: at + 300_000,
  });
  const failed = (mark: string, at: number) => ({ mark, replacedMac: 'mac-0', until: at + 10_000 });

  test('a rotation waiting for the replicas keeps its replaced token a retry however long, with no limit yet', () => {
    const record = waiting();
    assert.equal(record.retry?.limit, undefined);
    assert.equal(presentedState(record, first, family.expiresAt - 1).state, 'retry');
  });

  test('once confirmed, the window runs from the confirmation, the limit set by it', () => {
    const at = NOW + 20_000;
    const record = settleAnswer(waiting(), confirmed('mark-a', at), at);
    assert.ok(record);
    assert.deepEqual(record.retry, {
      replacedMac: 'mac-0',
      sealedSuccessor: 'sealed-1',
      until: at + 10_000,
      limit: at + 300_000,
    });
    assert.equal(presentedState(record, first, at + 9_999).state, 'retry');
    assert.equal(presentedState(record, first, at + 10_000).state, 'reused');
  });

  test('a failed answer before any went out leaves the mark: the rotation stays a retry', () => {
    assert.equal(settleAnswer(waiting(), failed('mark-a', NOW), NOW), null);
  });

  test('a retry refused after an answer went out starts the window again, up to the limit', () => {
    const answered = settleAnswer(waiting(), confirmed('mark-a', NOW), NOW);
    assert.ok(answered);
    const { next } = decideRotation(
      answered,
      { family, presented: first, successor: third, retry, pending: 'mark-b' },
      NOW + 9_000,
    );
    assert.equal(next?.retry?.pending, 'mark-b');
    const later = NOW + 200_000;
    assert.equal(settleAnswer(next, failed('mark-b', later), later)?.retry?.until, later + 10_000);
    assert.equal(
      settleAnswer(next, failed('mark-b', NOW + 400_000), NOW + 400_000)?.retry?.until,
      NOW + 300_000,
    );
  });

  test("another answer's mark is left alone, but a confirmed answer sets the limit if none is set", () => {
    const record = waiting('mark-b');
    assert.equal(settleAnswer(record, failed('mark-a', NOW), NOW), null);
    assert.deepEqual(settleAnswer(record, confirmed('mark-a', NOW), NOW)?.retry, {
      ...record.retry,
      limit: NOW + 300_000,
    });
    assert.equal(settleAnswer(record, { ...confirmed('mark-a', NOW), replacedMac: 'other' }, NOW), null);
  });

  test('a retry refused before its mark was made starts a running window again, but opens no closed one', () => {
    const answered = settleAnswer(waiting(), confirmed('mark-a', NOW), NOW);
    assert.ok(answered);
    assert.equal(
      settleAnswer(answered, failed('mark-b', NOW + 9_000), NOW + 9_000)?.retry?.until,
      NOW + 19_000,
    );
    assert.equal(settleAnswer(answered, failed('mark-b', NOW + 10_000), NOW + 10_000), null);
    // Not while another answer waits: its own end decides.
    const waitingAgain = changedRetry(answered, { pending: 'mark-c' });
    assert.equal(settleAnswer(waitingAgain, failed('mark-b', NOW + 9_000), NOW + 9_000), null);
  });

  test('without replicas, a retry of a rotation still waiting sets the limit as it moves the window', () => {
    const later = { ...retry, until: retry.until + 1_000 };
    const { next } = decideRotation(
      waiting(),
      { family, presented: first, successor: third, retry: later },
      NOW + 1_000,
    );
    assert.deepEqual(next?.retry?.limit, retry.limit);
  });

  test('a concurrent answer that marked the same rotation, or moved its window, makes this one moot; a new rotation does not', () => {
    const base = waiting('mark-a');
    const remarked = changedRetry(base, { pending: 'mark-b' });
    assert.equal(overtaken(base, remarked, true), true);
    assert.equal(overtaken(base, base, true), false);
    const moved = changedRetry(base, { until: retry.until + 1 });
    assert.equal(overtaken(base, moved, false), true);
    assert.equal(overtaken(base, moved, true), false);
    assert.equal(overtaken(base, base, false), false);
    const { next } = decideRotation(base, { family, presented: second, successor: third, retry }, NOW);
    assert.equal(overtaken(base, next, true), false);
    assert.equal(overtaken(base, next, false), false);
    assert.equal(overtaken(base, revokedRecord(base), true), false);
  });
});
