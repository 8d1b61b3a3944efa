import type { OneTimeToken, OneTimeTokenPurpose, OneTimeTokenStore } from '../../accounts/model.ts';

/**
 * One-time tokens in process memory. No method awaits before it has done its work, so on
 * Node's single thread each one is atomic, which is what `consume` promises.
 */
export class MemoryOneTimeTokenStore implements OneTimeTokenStore {
  readonly #byDigest = new Map<string, OneTimeToken>();
  readonly #now: () => number;

  constructor(now: () => number = () => Date.now()) {
    this.#now = now;
  }

  async save(token: OneTimeToken): Promise<void> {
    this.#sweep();
    this.#byDigest.set(token.digest, { ...token, expiresAt: new Date(token.expiresAt) });
  }

  async consume(purpose: OneTimeTokenPurpose, digest: string): Promise<OneTimeToken | null> {
    const token = this.#usable(purpose, digest);
    if (token) this.#byDigest.delete(digest);
    return token;
  }

  async find(purpose: OneTimeTokenPurpose, digest: string): Promise<OneTimeToken | null> {
    return this.#usable(purpose, digest);
  }

  async deleteForAccount(accountId: string, purpose?: OneTimeTokenPurpose): Promise<void> {
    for (const [digest, token] of this.#byDigest) {
      if (token.accountId === accountId && (purpose === undefined || token.purpose === purpose))
        this.#byDigest.delete(digest);
    }
  }

  #usable(purpose: OneTimeTokenPurpose, digest: string): OneTimeToken | null {
    const token = this.#byDigest.get(digest);
    if (!token || token.purpose !== purpose || token.expiresAt.getTime() <= this.#now()) return null;
    return { ...token, expiresAt: new Date(token.expiresAt) };
  }

  /** Drops expired tokens so the map does not grow with links nobody follows. */
  #sweep(): void {
    const now = this.#now();
    for (const [digest, token] of this.#byDigest) {
      if (token.expiresAt.getTime() <= now) this.#byDigest.delete(digest);
    }
  }
}
