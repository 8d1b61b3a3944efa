import { randomUUID } from 'node:crypto';
import {
  ONE_TIME_TOKEN_PURPOSES,
  type OneTimeToken,
  type OneTimeTokenPurpose,
  type OneTimeTokenStore,
} from '../../accounts/model.ts';

/**
 * One-time tokens in process memory. No method awaits before it has done its work, so on
 * Node's single thread each one is atomic, which is what `consume` promises.
 */
export class MemoryOneTimeTokenStore implements OneTimeTokenStore {
  readonly #byDigest = new Map<string, OneTimeToken>();
  /** The current generation of each account's links of a purpose, once they were first killed. */
  readonly #generations = new Map<string, string>();
  readonly #now: () => number;

  constructor(now: () => number = () => Date.now()) {
    this.#now = now;
  }

  async save(token: OneTimeToken): Promise<void> {
    const { generation: _ignored, ...fresh } = token;
    const generation = this.#generations.get(generationKey(token.accountId, token.purpose));
    this.#store(generation === undefined ? fresh : { ...fresh, generation });
  }

  async putBack(token: OneTimeToken): Promise<void> {
    this.#store(token);
  }

  async consume(purpose: OneTimeTokenPurpose, digest: string): Promise<OneTimeToken | null> {
    const token = this.#usable(purpose, digest);
    if (token) this.#byDigest.delete(digest);
    return token;
  }

  async find(purpose: OneTimeTokenPurpose, digest: string): Promise<OneTimeToken | null> {
    return this.#usable(purpose, digest);
  }

  async deleteForAccount(accountId: string, purpose?: OneTimeTokenPurpose): Promise<string> {
    const generation = randomUUID();
    for (const each of purpose === undefined ? ONE_TIME_TOKEN_PURPOSES : [purpose])
      this.#generations.set(generationKey(accountId, each), generation);
    for (const [digest, token] of this.#byDigest) {
      if (token.accountId === accountId && (purpose === undefined || token.purpose === purpose))
        this.#byDigest.delete(digest);
    }
    return generation;
  }

  #store(token: OneTimeToken): void {
    this.#sweep();
    this.#byDigest.set(token.digest, { ...token, expiresAt: new Date(token.expiresAt) });
  }

  #usable(purpose: OneTimeTokenPurpose, digest: string): OneTimeToken | null {
    const token = this.#byDigest.get(digest);
    if (!token || token.purpose !== purpose || token.expiresAt.getTime() <= this.#now()) return null;
    if (token.generation !== this.#generations.get(generationKey(token.accountId, purpose))) return null;
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

const generationKey = (accountId: string, purpose: OneTimeTokenPurpose) => `${purpose}\n${accountId}`;
