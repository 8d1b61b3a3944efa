import type { Lease, LeaseStore } from './deployment-model.ts';
import { ServiceUnavailable } from './errors.ts';

/**
 * Rules that count records ("the last active superuser", "the last client that signs
 * administrators in") are a check and then a write: two changes made at once on two nodes
 * would each count the other's target as remaining, and both pass. A rule's changes therefore
 * run one at a time, everywhere, under the rule's lease: taken before the check, given back
 * after the write. The store has no transactions to do this (FerretDB 1.x has none).
 *
 * A lease runs out after `leaseMs`, so a process that dies holding one blocks the rule for at
 * most that long. For a holder never to write after its lease ran out and another took it,
 * the change has a deadline derived from the lease: a write may begin only while the lease
 * still leaves it `writeMs` (the longest one store operation can take before the store's
 * own timeouts fail it) and `clockSkewMs` (how far the nodes' clocks may disagree). The check
 * must end by then, and a change that writes more than once asks before each write
 * (`beforeWrite`); past the deadline the change is refused with 503 and writes nothing more.
 *
 * This is time-based, not fenced: the store does not compare a lease's generation with
 * each write, so a write that outlives `writeMs` (a process paused between asking and
 * writing, store timeouts raised above it, clocks further apart than `clockSkewMs`) can
 * still land after another holder took the lease (docs/security.md).
 */
export interface RuleLockTiming {
  leaseMs: number;
  /** The longest one guarded write may take. */
  writeMs: number;
  /** How far apart the clocks of the nodes (and of the store) may be. */
  clockSkewMs: number;
  /** How long a change waits for a lease another holds before it is refused with 503. */
  waitMs: number;
}

/**
 * `writeMs`: MongoDB's defaults (stores/mongo/connect.ts) fail an attempt at a write after at
 * most 2 s finding a server, 2 s getting a connection from the pool and 10 s waiting for its
 * reply, and a retryable write is attempted twice. The lease leaves the check its window after that.
 */
export const RULE_LOCK_TIMING: RuleLockTiming = {
  leaseMs: 44_000,
  writeMs: 28_000,
  clockSkewMs: 5_000,
  waitMs: 5_000,
};

/** The time a check may take before the deadline, whatever the longest write. */
const CHECK_WINDOW_MS = 11_000;

/**
 * The timing for writes that can take up to `writeMs` (the store's own timeouts): the lease
 * grows to leave the check its window after the write and the skew. Without a bound (a
 * timeout turned off) no deadline can cover the write, and the defaults are kept.
 */
export function ruleLockTiming(writeMs: number | undefined): RuleLockTiming {
  if (writeMs === undefined || !Number.isFinite(writeMs)) return RULE_LOCK_TIMING;
  const { clockSkewMs } = RULE_LOCK_TIMING;
  return {
    ...RULE_LOCK_TIMING,
    writeMs,
    leaseMs: Math.max(RULE_LOCK_TIMING.leaseMs, writeMs + clockSkewMs + CHECK_WINDOW_MS),
  };
}

/** What a guarded change is given: its deadline, and the check to make before each write. */
export interface GuardedWrite {
  /** The time (ms since the epoch) after which no write of the change may begin. */
  readonly writeBy: number;
  /** Throws 503 when the deadline has passed; call it right before each write. */
  beforeWrite(): void;
}

export type RuleLock = ReturnType<typeof createRuleLock>;

export function createRuleLock(
  leases: LeaseStore,
  timing: RuleLockTiming = RULE_LOCK_TIMING,
  now: () => number = Date.now,
) {
  const writeWindowMs = timing.leaseMs - timing.writeMs - timing.clockSkewMs;
  if (writeWindowMs <= 0)
    throw new Error('A rule lock needs a lease longer than the longest write and the clock skew together');

  async function take(rule: string): Promise<{ lease: Lease; guard: GuardedWrite }> {
    const deadline = now() + timing.waitMs;
    for (;;) {
      const takenAt = now();
      const lease = await leases.acquire(`rule:${rule}`, new Date(takenAt + timing.leaseMs));
      if (lease) {
        const writeBy = takenAt + writeWindowMs;
        const guard: GuardedWrite = {
          writeBy,
          beforeWrite() {
            if (now() > writeBy) throw busy();
          },
        };
        return { lease, guard };
      }
      if (now() >= deadline) throw busy();
      // Changes under a rule take milliseconds; a random pause keeps waiters from moving in step.
      await new Promise((resolve) => setTimeout(resolve, 5 + Math.random() * 20));
    }
  }

  return {
    /**
     * Runs `check` and then `change` with what the check decided, while no other process runs
     * a change of `rule`. A refusal from `check` writes nothing; so does a check that ends
     * past the deadline. A change of more than one write calls `guard.beforeWrite()` before
     * each (the first is asked for here). The lease is given back whatever happens.
     */
    async inTurn<C, T>(
      rule: string,
      check: () => Promise<C>,
      change: (checked: C, guard: GuardedWrite) => Promise<T>,
    ): Promise<T> {
      const { lease, guard } = await take(rule);
      try {
        const checked = await check();
        guard.beforeWrite();
        return await change(checked, guard);
      } finally {
        // One that cannot be given back runs out by itself.
        await leases.release(lease).catch(() => undefined);
      }
    },
  };
}

function busy(): ServiceUnavailable {
  return new ServiceUnavailable('Another change of the same kind is under way; try again shortly');
}
