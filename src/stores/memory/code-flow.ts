import type { AuthorizationCodeGrant, CodeFlowStore } from '../../oauth/model.ts';

interface StoredCode {
  grant: AuthorizationCodeGrant;
  /** The attempt that consumed it; none while unused. */
  usedBy?: string;
  reused: boolean;
}

/**
 * The authorization code flow's records in process memory. No method awaits before it has
 * done its work, so on Node's single thread each one is atomic.
 */
export class MemoryCodeFlowStore implements CodeFlowStore {
  /** Used sign-in form values: id -> expiry (ms). */
  readonly #used = new Map<string, number>();
  readonly #codes = new Map<string, StoredCode>();
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  async useOnce(id: string, expiresAt: number): Promise<boolean> {
    this.#sweep();
    const until = this.#used.get(id);
    if (until !== undefined && until > this.#now()) return false;
    this.#used.set(id, expiresAt);
    return true;
  }

  async saveCode(digest: string, grant: AuthorizationCodeGrant): Promise<void> {
    this.#sweep();
    this.#codes.set(digest, { grant: { ...grant }, reused: false });
  }

  async findCode(digest: string): Promise<AuthorizationCodeGrant | null> {
    const code = this.#live(digest);
    return code ? { ...code.grant } : null;
  }

  async consumeCode(digest: string, attempt: string): Promise<'consumed' | 'reused' | 'unknown'> {
    const code = this.#live(digest);
    if (!code) return 'unknown';
    if (code.usedBy !== undefined) {
      code.reused = true;
      return 'reused';
    }
    code.usedBy = attempt;
    return 'consumed';
  }

  async releaseCode(digest: string, attempt: string): Promise<void> {
    const code = this.#live(digest);
    if (code && !code.reused && code.usedBy === attempt) code.usedBy = undefined;
  }

  async wasReused(digest: string): Promise<boolean> {
    return this.#live(digest)?.reused ?? false;
  }

  #live(digest: string): StoredCode | undefined {
    const code = this.#codes.get(digest);
    return code && code.grant.expiresAt > this.#now() ? code : undefined;
  }

  /**
   * Forgets expired records. Every record of a kind lives equally long, so a Map (which
   * keeps insertion order) holds them in order of expiry: the sweep stops at the first live
   * one and costs only what it removes.
   */
  #sweep(): void {
    const now = this.#now();
    for (const [id, until] of this.#used) {
      if (until > now) break;
      this.#used.delete(id);
    }
    for (const [digest, code] of this.#codes) {
      if (code.grant.expiresAt > now) break;
      this.#codes.delete(digest);
    }
  }
}
