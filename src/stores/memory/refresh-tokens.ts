import { randomUUID } from 'node:crypto';
import type { AccountKind, ConsumeResult, RefreshTokenGrant, RefreshTokenStore } from '../types.ts';

interface StoredToken {
  grant: RefreshTokenGrant;
  state: 'unused' | 'consumed' | 'rotated';
  /** The consume that holds the token while it is `consumed`. */
  attempt?: string;
}

/** Entries held by MemoryRefreshTokenStore, by kind; each stays until a sweep after it expires. */
export interface Footprint {
  tokens: number;
  /** Families, with the expiry of their longest-lived token. */
  families: number;
  /** Revocation markers. */
  revokedFamilies: number;
  /** Family ids listed under their accounts, for revokeSubject. */
  accountIndex: number;
}

/**
 * Refresh tokens in process memory. Every method body runs without awaiting, so on Node's
 * single thread each one is atomic, which is what `consume` promises.
 */
export class MemoryRefreshTokenStore implements RefreshTokenStore {
  readonly #tokens = new Map<string, StoredToken>();
  /** familyId -> expiry (ms) of the family's longest-lived token. */
  readonly #familyExpiry = new Map<string, number>();
  /** familyId -> expiry (ms) of the revocation marker. */
  readonly #revokedFamilies = new Map<string, number>();
  /** "kind:subject" -> familyIds issued to that account. */
  readonly #familiesBySubject = new Map<string, Set<string>>();
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  async save(tokenDigest: string, grant: RefreshTokenGrant, replacesDigest?: string): Promise<boolean> {
    this.#sweep();
    if (this.#isRevoked(grant.familyId)) return false;
    this.#tokens.set(tokenDigest, { grant: { ...grant }, state: 'unused' });
    const replaced = replacesDigest === undefined ? undefined : this.#tokens.get(replacesDigest);
    if (replaced?.grant.familyId === grant.familyId) replaced.state = 'rotated';
    this.#familyExpiry.set(
      grant.familyId,
      Math.max(grant.expiresAt, this.#familyExpiry.get(grant.familyId) ?? 0),
    );
    const key = subjectKey(grant.accountKind, grant.subject);
    const families = this.#familiesBySubject.get(key) ?? new Set<string>();
    families.add(grant.familyId);
    this.#familiesBySubject.set(key, families);
    return true;
  }

  async consume(familyId: string, tokenDigest: string): Promise<ConsumeResult> {
    const stored = this.#tokens.get(tokenDigest);
    if (!stored || stored.grant.familyId !== familyId || stored.grant.expiresAt <= this.#now()) {
      return { outcome: 'unknown' };
    }
    if (this.#isRevoked(familyId)) return { outcome: 'revoked' };
    if (stored.state === 'consumed') return { outcome: 'in-flight' };
    if (stored.state === 'rotated') return { outcome: 'reused', grant: { ...stored.grant } };
    stored.state = 'consumed';
    stored.attempt = randomUUID();
    return { outcome: 'consumed', grant: { ...stored.grant }, attempt: stored.attempt };
  }

  async release(familyId: string, tokenDigest: string, attempt: string): Promise<void> {
    const stored = this.#tokens.get(tokenDigest);
    if (stored?.grant.familyId !== familyId || this.#isRevoked(familyId)) return;
    if (stored.state !== 'consumed' || stored.attempt !== attempt) return;
    stored.state = 'unused';
    stored.attempt = undefined;
  }

  async revokeFamily(familyId: string): Promise<void> {
    // The marker outlives every token of the family, so none of them can be used again.
    this.#revokedFamilies.set(familyId, this.#familyExpiry.get(familyId) ?? this.#now());
  }

  async revokeSubject(accountKind: AccountKind, subject: string): Promise<void> {
    const key = subjectKey(accountKind, subject);
    for (const familyId of this.#familiesBySubject.get(key) ?? []) await this.revokeFamily(familyId);
    this.#familiesBySubject.delete(key);
  }

  /**
   * How many entries of each kind the store holds: what an embedded server keeps in memory.
   * Expired ones are dropped every 1024 saves, so this follows the live tokens, not every
   * token ever issued.
   */
  footprint(): Footprint {
    let accountIndex = 0;
    for (const families of this.#familiesBySubject.values()) accountIndex += families.size;
    return {
      tokens: this.#tokens.size,
      families: this.#familyExpiry.size,
      revokedFamilies: this.#revokedFamilies.size,
      accountIndex,
    };
  }

  #isRevoked(familyId: string): boolean {
    const until = this.#revokedFamilies.get(familyId);
    return until !== undefined && until > this.#now();
  }

  /** Drops expired entries so a long-running embedded server does not grow without bound. */
  #sweep(): void {
    if (this.#tokens.size % 1024 !== 0) return;
    const now = this.#now();
    for (const [digest, stored] of this.#tokens)
      if (stored.grant.expiresAt <= now) this.#tokens.delete(digest);
    for (const [familyId, until] of this.#familyExpiry) if (until <= now) this.#familyExpiry.delete(familyId);
    for (const [familyId, until] of this.#revokedFamilies)
      if (until <= now) this.#revokedFamilies.delete(familyId);
    for (const [key, families] of this.#familiesBySubject) {
      for (const familyId of families) if (!this.#familyExpiry.has(familyId)) families.delete(familyId);
      if (families.size === 0) this.#familiesBySubject.delete(key);
    }
  }
}

function subjectKey(kind: AccountKind, subject: string): string {
  return `${kind}:${subject}`;
}
