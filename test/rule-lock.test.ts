/**
 * The rule lock (src/rule-lock.ts): a change guarded by a rule's lease writes only while the
 * lease still leaves it the time a write may take; otherwise it is refused with 503 and
 * writes nothing. Time is a clock the test moves, so nothing here depends on how fast it runs.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Lease, LeaseStore } from '../src/deployment-model.ts';
import { ServiceUnavailable } from '../src/errors.ts';
import { createRuleLock, RULE_LOCK_TIMING, type RuleLockTiming, ruleLockTiming } from '../src/rule-lock.ts';
import { MemoryLeaseStore } from '../src/stores/memory/index.ts';
import { longestMongoOperationMs } from '../src/stores/mongo/connect.ts';

const TIMING: RuleLockTiming = { leaseMs: 30_000, writeMs: 14_000, clockSkewMs: 5_000, waitMs: 5_000 };

/** A lease store that records what was taken until when, around the memory one. */
function recordingLeases() {
  const inner = new MemoryLeaseStore();
  const taken: { name: string; expiresAt: number }[] = [];
  const released: Lease[] = [];
  const leases: LeaseStore = {
    async acquire(name, expiresAt) {
      taken.push({ name, expiresAt: expiresAt.getTime() });
      return inner.acquire(name, expiresAt);
    },
    async release(lease) {
      released.push(lease);
      return inner.release(lease);
    },
  };
  return { leases, taken, released };
}

describe('the rule lock', () => {
  test('a change gets a deadline derived from the lease: the lease end, less the longest write and the clock skew', async () => {
    const clock = 1_000_000;
    const { leases, taken } = recordingLeases();
    const lock = createRuleLock(leases, TIMING, () => clock);
    const deadline = await lock.inTurn(
      'rule',
      async () => 'checked',
      async (checked, guard) => {
        assert.equal(checked, 'checked');
        return guard.writeBy;
      },
    );
    assert.deepEqual(taken, [{ name: 'rule:rule', expiresAt: clock + TIMING.leaseMs }]);
    assert.equal(deadline, clock + TIMING.leaseMs - TIMING.writeMs - TIMING.clockSkewMs);
  });

  test('a check that ends after the deadline is refused with 503 before the change runs; the lease is given back', async () => {
    let clock = 1_000_000;
    const { leases, released } = recordingLeases();
    const lock = createRuleLock(leases, TIMING, () => clock);
    let changed = false;
    await assert.rejects(
      lock.inTurn(
        'rule',
        async () => {
          clock += TIMING.leaseMs - TIMING.writeMs - TIMING.clockSkewMs + 1;
        },
        async () => {
          changed = true;
        },
      ),
      ServiceUnavailable,
    );
    assert.equal(changed, false);
    assert.equal(released.length, 1);
  });

  test('a change that reaches a write after the deadline is refused with 503 and writes nothing', async () => {
    let clock = 1_000_000;
    const { leases, released } = recordingLeases();
    const lock = createRuleLock(leases, TIMING, () => clock);
    const writes: string[] = [];
    await assert.rejects(
      lock.inTurn(
        'rule',
        async () => undefined,
        async (_checked, guard) => {
          guard.beforeWrite();
          writes.push('first');
          // The first write took long: the lease no longer leaves time for another.
          clock += TIMING.leaseMs - TIMING.writeMs - TIMING.clockSkewMs + 1;
          guard.beforeWrite();
          writes.push('second');
        },
      ),
      ServiceUnavailable,
    );
    assert.deepEqual(writes, ['first']);
    assert.equal(released.length, 1);
  });

  test('timings whose write and skew leave no time within the lease are refused at creation', () => {
    const { leases } = recordingLeases();
    assert.throws(() => createRuleLock(leases, { ...TIMING, writeMs: 25_000 }), /lease/);
    assert.throws(() => createRuleLock(leases, { ...TIMING, leaseMs: 19_000 }), /lease/);
  });

  test("the longest write follows MongoDB's timeouts in MONGODB_URL, and the lease grows with it", () => {
    assert.equal(longestMongoOperationMs('mongodb://db/tokens'), RULE_LOCK_TIMING.writeMs);
    assert.deepEqual(ruleLockTiming(longestMongoOperationMs('mongodb://db/tokens')), RULE_LOCK_TIMING);
    assert.deepEqual(ruleLockTiming(undefined), RULE_LOCK_TIMING);
    const slow = longestMongoOperationMs(
      'mongodb://db/tokens?SocketTimeoutMS=120000&serverSelectionTimeoutMS=5000',
    );
    // Each attempt: finding a server, a connection from the pool, the reply; a retryable write is tried twice.
    assert.equal(slow, 2 * (5_000 + 2_000 + 120_000));
    const timing = ruleLockTiming(slow);
    assert.equal(timing.writeMs, slow);
    assert.ok(timing.leaseMs > slow + timing.clockSkewMs, String(timing.leaseMs));
    const { leases } = recordingLeases();
    assert.ok(createRuleLock(leases, timing));
    // A timeout turned off bounds no write: no deadline can cover it, the defaults stay.
    assert.equal(longestMongoOperationMs('mongodb://db/tokens?socketTimeoutMS=0'), Number.POSITIVE_INFINITY);
    assert.deepEqual(ruleLockTiming(Number.POSITIVE_INFINITY), RULE_LOCK_TIMING);
  });

  test('the longest write covers waiting for a pooled connection, and each attempt of a retried write', () => {
    const attempt = 2_000 + 2_000 + 10_000;
    assert.equal(longestMongoOperationMs('mongodb://db/tokens'), 2 * attempt);
    assert.equal(longestMongoOperationMs('mongodb://db/tokens?retryWrites=false'), attempt);
    assert.equal(
      longestMongoOperationMs('mongodb://db/tokens?retryWrites=false&waitQueueTimeoutMS=7000'),
      2_000 + 7_000 + 10_000,
    );
    // An unbounded wait for a connection bounds no write, however short the other timeouts.
    assert.equal(
      longestMongoOperationMs('mongodb://db/tokens?waitQueueTimeoutMS=0'),
      Number.POSITIVE_INFINITY,
    );
    // A connection opened for a waiting write is opened within its wait, not after it.
    assert.equal(
      longestMongoOperationMs('mongodb://db/tokens?retryWrites=false&connectTimeoutMS=0'),
      attempt,
    );
    // Retries of an overloaded server, each after a pause of up to 10 s.
    assert.equal(
      longestMongoOperationMs('mongodb://db/tokens?maxAdaptiveRetries=2'),
      3 * attempt + 2 * 10_000,
    );
    // A client-side operation timeout bounds everything, retries included.
    assert.equal(longestMongoOperationMs('mongodb://db/tokens?timeoutMS=9000'), 9_000);
    assert.equal(longestMongoOperationMs('mongodb://db/tokens?timeoutMS=0'), Number.POSITIVE_INFINITY);
    const timing = ruleLockTiming(longestMongoOperationMs('mongodb://db/tokens'));
    assert.equal(timing.writeMs, 2 * attempt);
    const { leases } = recordingLeases();
    assert.ok(createRuleLock(leases, timing));
  });
});
