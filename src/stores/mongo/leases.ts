import type { Collection } from 'mongodb';
import type { Lease, LeaseStore } from '../../deployment-model.ts';
import { insertUnique } from './unique.ts';

/**
 * One document per generation of a lease, `_id` `<name>#<generation>`: taking the lease is
 * inserting the generation after the newest, which the `_id` index lets exactly one taker do.
 * Nothing is ever updated by two writers (only the holder marks its generation released), and
 * nothing is deleted that a taker could still insert: generations older than the previous
 * one are history.
 */
export interface LeaseDoc {
  _id: string;
  name: string;
  generation: number;
  expiresAt: Date;
  releasedAt?: Date;
}

export const LEASES_COLLECTION = 'leases';

export class MongoLeaseStore implements LeaseStore {
  readonly #collection: Collection<LeaseDoc>;

  constructor(collection: Collection<LeaseDoc>) {
    this.#collection = collection;
  }

  /** The index the newest generation is found by; idempotent, so every process runs it at open. */
  static async ensureIndexes(collection: Collection<LeaseDoc>): Promise<void> {
    await collection.createIndex({ name: 1, generation: -1 }, { name: 'name_generation' });
  }

  async acquire(name: string, expiresAt: Date): Promise<Lease | null> {
    const newest = await this.#newest(name);
    if (newest && newest.releasedAt === undefined && newest.expiresAt > new Date()) return null;
    const generation = (newest?.generation ?? 0) + 1;
    if (
      !(await insertUnique(this.#collection, { _id: `${name}#${generation}`, name, generation, expiresAt }))
    )
      return null;
    // A taker that read the newest generation long ago may have inserted one cleared away as
    // history since: a newer one exists, and this one is not the lease.
    if ((await this.#newest(name))?.generation !== generation) {
      await this.release({ name, generation });
      return null;
    }
    await this.#collection.deleteMany({ name, generation: { $lt: generation - 1 } });
    return { name, generation };
  }

  async release(lease: Lease): Promise<void> {
    await this.#collection.updateOne(
      { _id: `${lease.name}#${lease.generation}` },
      { $set: { releasedAt: new Date() } },
    );
  }

  #newest(name: string): Promise<LeaseDoc | null> {
    return this.#collection.find({ name }).sort({ generation: -1 }).limit(1).next();
  }
}
