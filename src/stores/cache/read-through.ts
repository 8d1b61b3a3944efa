/**
 * A bounded read-through cache of one kind of record (LRU, with a TTL as the safety net for a
 * missed invalidation), answering only while its invalidation channel is live.
 */

import { copyRecord } from '../record-copy.ts';
import { FLUSH, type Invalidations } from './invalidation.ts';

export interface CacheBounds {
  size: number;
  ttlMs: number;
}

export class ReadThrough<T extends object> {
  /** Map order is insertion order: re-inserting on a hit keeps the least recently used first. */
  readonly #entries = new Map<string, { value: T; expiresAt: number }>();

  readonly #invalidations: Invalidations;
  readonly #topic: string;
  readonly #bounds: CacheBounds;

  constructor(invalidations: Invalidations, topic: string, bounds: CacheBounds) {
    this.#invalidations = invalidations;
    this.#topic = topic;
    this.#bounds = bounds;
    invalidations.listen((topic, key) => {
      if (topic === FLUSH) this.#entries.clear();
      else if (topic === this.#topic) this.#entries.delete(key);
    });
  }

  async get(key: string, load: () => Promise<T | null>): Promise<T | null> {
    if (!this.#invalidations.live) return load();
    const hit = this.#entries.get(key);
    this.#entries.delete(key);
    if (hit && hit.expiresAt > Date.now()) {
      this.#entries.set(key, hit);
      // Like every store, a copy: a caller that changes what it read changes no other reader's.
      return copyRecord(hit.value);
    }
    // An invalidation that arrives while the load runs may describe a change the load missed.
    const seen = this.#invalidations.sequence;
    const value = await load();
    if (value !== null && this.#invalidations.live && this.#invalidations.sequence === seen) {
      this.#entries.set(key, { value: copyRecord(value), expiresAt: Date.now() + this.#bounds.ttlMs });
      if (this.#entries.size > this.#bounds.size)
        this.#entries.delete(this.#entries.keys().next().value as string);
    }
    return value;
  }

  /** Runs a write of the record under `key`, then, once it committed, tells every node. */
  async write<R>(key: string, write: () => Promise<R>): Promise<R> {
    const result = await write();
    await this.#invalidations.changed(this.#topic, key);
    return result;
  }
}
