/**
 * What the service records about its own deployment, apart from both domains' data: which
 * seed records were seeded, whether processes that cache accounts and clients are running,
 * and the leases its processes take in turn. Kept beside the accounts and clients (MongoDB, or
 * memory), where every process and the command line look; the stores implement these
 * interfaces (src/stores/).
 */

/**
 * Which seed records have been seeded: one mark per record, never taken back, so that a seed
 * record an operator removed is not created again, by a restart or by another process.
 */
export interface SeedLedger {
  /** Marks the record seeded and returns true; false when it was marked already (atomically: of concurrent calls one gets true). */
  claim(record: string): Promise<boolean>;
  has(record: string): Promise<boolean>;
}

/**
 * Where the processes that keep accounts and clients in memory, behind the invalidation
 * channel (stores/cache/), say that they run: a process about to change those records without
 * that channel reads it first, as its change would not reach them.
 */
export interface CachingNodeRegistry {
  /** Records that a process keeping such caches runs at `at`. */
  announce(at: Date): Promise<void>;
  /** When such a process last said so, or null when none ever did. */
  lastAnnouncement(): Promise<Date | null>;
}

/** A lease held: its name, and the generation of it that is the holder's. */
export interface Lease {
  name: string;
  generation: number;
}

/**
 * Leases that let one process at a time, on any node, make a change that a rule counts (the
 * last active superuser, the last client that signs administrators in): held from before the
 * count until after the write, no two changes can both count on the other's target remaining.
 * Each taking is a new generation of the lease, inserted under a unique key: the one operation
 * MongoDB and FerretDB 1.x both do atomically (FerretDB has no transactions, applies a filtered
 * delete as a read and then a delete by id, and may lose one of two concurrent updates of a
 * document).
 */
export interface LeaseStore {
  /**
   * Takes the lease `name` until `expiresAt` when it is free (never taken, given back, or run
   * out, which is how a holder that died frees it), else null. Of concurrent takers at most
   * one gets it.
   */
  acquire(name: string, expiresAt: Date): Promise<Lease | null>;
  /** Gives the lease back; a generation taken over since stays with its new holder. */
  release(lease: Lease): Promise<void>;
}
