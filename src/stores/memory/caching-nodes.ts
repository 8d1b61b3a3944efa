import type { CachingNodeRegistry } from '../../deployment-model.ts';

/** In one process's memory, which no other process reads: there for the contract's sake. */
export class MemoryCachingNodeRegistry implements CachingNodeRegistry {
  #last: Date | null = null;

  async announce(at: Date): Promise<void> {
    if (this.#last === null || at > this.#last) this.#last = new Date(at);
  }

  async lastAnnouncement(): Promise<Date | null> {
    return this.#last && new Date(this.#last);
  }
}
