import type { Lease, LeaseStore } from './deployment-model.ts';
import { ServiceUnavailable } from './errors.ts';

/**
 * Rules that count records ("the last active superuser", "the last client that signs
 * administrators in") are a check and then a write: two changes made at once on two nodes
 * would each count the other's target as remaining, and both pass. A rule's changes therefore
 * run one at a time, everywhere, under the rule's lease: taken before the check, given back
 * after the write. The store has no transactions to do this (FerretDB 1.x has none).
 *
 * A lease runs out after LEASE_MS, so a process that dies holding one blocks the rule for at
 * most that long. For a holder never to write after its lease ran out and another took it, a
 * change writes only if its check finished within WRITE_BY_MS of taking the lease (else it is
 * refused with 503 and writes nothing), leaving the write itself the rest of the lease, more
 * than the MongoDB socket timeout allows any one operation.
 */
export interface RuleLockTiming {
  leaseMs: number;
  writeByMs: number;
  /** How long a change waits for a lease another holds before it is refused with 503. */
  waitMs: number;
}

const TIMING: RuleLockTiming = { leaseMs: 30_000, writeByMs: 10_000, waitMs: 5_000 };

export type RuleLock = ReturnType<typeof createRuleLock>;

export function createRuleLock(leases: LeaseStore, timing: RuleLockTiming = TIMING) {
  async function take(rule: string): Promise<{ lease: Lease; writeBy: number }> {
    const deadline = Date.now() + timing.waitMs;
    for (;;) {
      const takenAt = Date.now();
      const lease = await leases.acquire(`rule:${rule}`, new Date(takenAt + timing.leaseMs));
      if (lease) return { lease, writeBy: takenAt + timing.writeByMs };
      if (Date.now() >= deadline) throw busy();
      // Changes under a rule take milliseconds; a random pause keeps waiters from moving in step.
      await new Promise((resolve) => setTimeout(resolve, 5 + Math.random() * 20));
    }
  }

  return {
    /**
     * Runs `check` and then `change` with what the check decided, while no other process runs
     * a change of `rule`. A refusal from `check` writes nothing; the lease is given back
     * whatever happens.
     */
    async inTurn<C, T>(
      rule: string,
      check: () => Promise<C>,
      change: (checked: C) => Promise<T>,
    ): Promise<T> {
      const { lease, writeBy } = await take(rule);
      try {
        const checked = await check();
        if (Date.now() > writeBy) throw busy();
        return await change(checked);
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
