import type {
  AccountKind,
  ConsumeResult,
  RefreshTokenGeneration,
  RefreshTokenGrant,
  RefreshTokenRotation,
  RefreshTokenState,
  RefreshTokenStore,
} from '../types.ts';

/** One family: its grant, its current token and what holds it; nothing per rotated token. */
interface Family {
  grant: RefreshTokenGrant;
  current: RefreshTokenGeneration;
  state: 'unused' | 'consumed' | 'revoked';
  /** The refresh holding the family while `consumed`. */
  attempt?: string;
  leaseUntil?: number;
}

/** Entries held by MemoryRefreshTokenStore; each stays until a sweep after it expires. */
export interface Footprint {
  families: number;
  /** Family ids listed under their accounts, for revokeSubject. */
  accountIndex: number;
}

/**
 * Refresh tokens in process memory. Every method body runs without awaiting, so on Node's
 * single thread each one is atomic, which is what `consume` promises.
 */
export class MemoryRefreshTokenStore implements RefreshTokenStore {
  readonly #families = new Map<string, Family>();
  /** "kind:subject" -> familyId -> the family's expiry (ms), for revokeSubject. */
  readonly #familiesBySubject = new Map<string, Map<string, number>>();
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  async create(grant: RefreshTokenGrant, first: RefreshTokenGeneration): Promise<boolean> {
    this.#sweep();
    if (this.#live(grant.familyId)) return false;
    this.#families.set(grant.familyId, { grant: { ...grant }, current: { ...first }, state: 'unused' });
    this.#index(grant);
    return true;
  }

  async inspect(familyId: string, presented: RefreshTokenGeneration): Promise<RefreshTokenState> {
    const family = this.#live(familyId);
    if (!family) return { state: 'unknown' };
    if (family.state === 'revoked') return { state: 'revoked' };
    if (presented.generation < family.current.generation)
      return { state: 'reused', grant: { ...family.grant } };
    if (presented.generation > family.current.generation || presented.mac !== family.current.mac)
      return { state: 'unknown' };
    if (family.state === 'consumed' && (family.leaseUntil ?? 0) > this.#now()) return { state: 'in-flight' };
    return { state: 'current', grant: { ...family.grant } };
  }

  async consume(
    familyId: string,
    presented: RefreshTokenGeneration,
    hold: { attempt: string; leaseUntil: number },
  ): Promise<ConsumeResult> {
    const family = this.#live(familyId);
    if (!family) return { outcome: 'unknown' };
    if (family.state === 'revoked') return { outcome: 'revoked' };
    if (presented.generation < family.current.generation) {
      this.#revoke(family);
      return { outcome: 'reused', grant: { ...family.grant } };
    }
    if (presented.generation > family.current.generation || presented.mac !== family.current.mac)
      return { outcome: 'unknown' };
    if (family.state === 'consumed' && (family.leaseUntil ?? 0) > this.#now())
      return { outcome: 'in-flight' };
    family.state = 'consumed';
    family.attempt = hold.attempt;
    family.leaseUntil = hold.leaseUntil;
    return { outcome: 'consumed', grant: { ...family.grant } };
  }

  async rotate(
    grant: RefreshTokenGrant,
    attempt: string,
    successor: RefreshTokenGeneration,
  ): Promise<boolean> {
    const family = this.#families.get(grant.familyId);
    if (family?.state !== 'consumed' || family.attempt !== attempt) return false;
    family.current = { ...successor };
    family.grant.expiresAt = grant.expiresAt;
    family.state = 'unused';
    family.attempt = undefined;
    family.leaseUntil = undefined;
    this.#index(family.grant);
    return true;
  }

  async release(familyId: string, attempt: string, rotation?: RefreshTokenRotation): Promise<void> {
    const family = this.#families.get(familyId);
    if (family?.state === 'consumed' && family.attempt === attempt) {
      family.state = 'unused';
      family.attempt = undefined;
      family.leaseUntil = undefined;
    } else if (family?.state === 'unused' && rotation && family.current.mac === rotation.successorMac) {
      family.current = { generation: family.current.generation - 1, mac: rotation.previousMac };
    }
  }

  async revokeFamily(familyId: string): Promise<void> {
    const family = this.#live(familyId);
    if (family) this.#revoke(family);
  }

  async revokeSubject(accountKind: AccountKind, subject: string): Promise<void> {
    const key = subjectKey(accountKind, subject);
    for (const familyId of this.#familiesBySubject.get(key)?.keys() ?? []) await this.revokeFamily(familyId);
    this.#familiesBySubject.delete(key);
  }

  /**
   * How many entries of each kind the store holds: what an embedded server keeps in memory.
   * Expired ones are dropped every 1024 new families, so this follows the live sessions, not every
   * token ever issued.
   */
  footprint(): Footprint {
    let accountIndex = 0;
    for (const families of this.#familiesBySubject.values()) accountIndex += families.size;
    return { families: this.#families.size, accountIndex };
  }

  /** The family, unless it has expired; the caller's clock decides, as in the Redis store. */
  #live(familyId: string): Family | undefined {
    const family = this.#families.get(familyId);
    return family && family.grant.expiresAt > this.#now() ? family : undefined;
  }

  #revoke(family: Family): void {
    family.state = 'revoked';
    family.attempt = undefined;
    this.#familiesBySubject
      .get(subjectKey(family.grant.accountKind, family.grant.subject))
      ?.delete(family.grant.familyId);
  }

  /** Lists the family under its account until its expiry, dropping what has expired there. */
  #index(grant: RefreshTokenGrant): void {
    const key = subjectKey(grant.accountKind, grant.subject);
    const families = this.#familiesBySubject.get(key) ?? new Map<string, number>();
    const now = this.#now();
    for (const [familyId, expiresAt] of families) if (expiresAt <= now) families.delete(familyId);
    families.set(grant.familyId, grant.expiresAt);
    this.#familiesBySubject.set(key, families);
  }

  /** Drops expired entries so a long-running embedded server does not grow without bound. */
  #sweep(): void {
    if (this.#families.size % 1024 !== 0) return;
    const now = this.#now();
    for (const [familyId, family] of this.#families)
      if (family.grant.expiresAt <= now) this.#families.delete(familyId);
    for (const [key, families] of this.#familiesBySubject) {
      for (const [familyId, expiresAt] of families) if (expiresAt <= now) families.delete(familyId);
      if (families.size === 0) this.#familiesBySubject.delete(key);
    }
  }
}

function subjectKey(kind: AccountKind, subject: string): string {
  return `${kind}:${subject}`;
}
