import type { SeedLedger } from '../../deployment-model.ts';

/** Marks in process memory; no method awaits before it has done its work, so `claim` is atomic. */
export class MemorySeedLedger implements SeedLedger {
  readonly #claimed = new Set<string>();

  async claim(record: string): Promise<boolean> {
    if (this.#claimed.has(record)) return false;
    this.#claimed.add(record);
    return true;
  }

  async has(record: string): Promise<boolean> {
    return this.#claimed.has(record);
  }
}
