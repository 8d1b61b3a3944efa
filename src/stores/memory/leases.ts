import type { Lease, LeaseStore } from '../../deployment-model.ts';

/** Leases in process memory; no method awaits before it has done its work, so each is atomic. */
export class MemoryLeaseStore implements LeaseStore {
  readonly #newest = new Map<string, { generation: number; expiresAt: Date; released: boolean }>();

  async acquire(name: string, expiresAt: Date): Promise<Lease | null> {
    const newest = this.#newest.get(name);
    if (newest && !newest.released && newest.expiresAt > new Date()) return null;
    const generation = (newest?.generation ?? 0) + 1;
    this.#newest.set(name, { generation, expiresAt: new Date(expiresAt), released: false });
    return { name, generation };
  }

  async release(lease: Lease): Promise<void> {
    const newest = this.#newest.get(lease.name);
    if (newest?.generation === lease.generation) newest.released = true;
  }
}
