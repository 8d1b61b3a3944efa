import type { AccountKind } from '../../accounts/model.ts';
import type {
  RefreshTokenFamily,
  RefreshTokenGeneration,
  RefreshTokenRetry,
  RefreshTokenRotation,
  RefreshTokenState,
  RefreshTokenStore,
} from '../../oauth/model.ts';

/** One family: its grant, its current token, and its last rotation's retry record. */
interface Family {
  grant: RefreshTokenFamily;
  current: RefreshTokenGeneration;
  revoked: boolean;
  /** For the token the last rotation replaced (its MAC), until the window ends. */
  retry?: RefreshTokenRetry & { previousMac: string };
}

/** Entries held by MemoryRefreshTokenStore; each stays until a sweep after it expires. */
export interface Footprint {
  families: number;
  /** Family ids listed under their accounts, for revokeSubject. */
  accountIndex: number;
}

/**
 * Refresh tokens in process memory. Every method body runs without awaiting, so on Node's
 * single thread each one is atomic, which is what `rotate` promises.
 */
export class MemoryRefreshTokenStore implements RefreshTokenStore {
  readonly #families = new Map<string, Family>();
  /** "kind:subject" -> familyId -> the family's expiry (ms), for revokeSubject. */
  readonly #familiesBySubject = new Map<string, Map<string, number>>();
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  async create(grant: RefreshTokenFamily, first: RefreshTokenGeneration): Promise<boolean> {
    this.#sweep();
    if (this.#live(grant.familyId)) return false;
    this.#families.set(grant.familyId, { grant: { ...grant }, current: { ...first }, revoked: false });
    this.#index(grant);
    return true;
  }

  async inspect(familyId: string, presented: RefreshTokenGeneration): Promise<RefreshTokenState> {
    const family = this.#live(familyId);
    return family ? this.#find(family, presented) : { state: 'unknown' };
  }

  async rotate(
    grant: RefreshTokenFamily,
    presented: RefreshTokenGeneration,
    successor: RefreshTokenGeneration,
    retry?: RefreshTokenRetry,
  ): Promise<RefreshTokenRotation> {
    const family = this.#live(grant.familyId);
    if (!family) return { state: 'unknown' };
    const found = this.#find(family, presented);
    if (found.state === 'reused') this.#revoke(family);
    // A retry answered with the successor: the window runs from this answer, but not past
    // the limit the rotation's answer set, so replays at intervals within the window cannot
    // keep a replaced token redeemable for good.
    if (found.state === 'retry' && retry && family.retry)
      family.retry.until = Math.max(family.retry.until, Math.min(retry.until, family.retry.limit));
    if (found.state !== 'current') return found;
    family.current = { ...successor };
    family.grant.expiresAt = grant.expiresAt;
    family.retry = retry && { ...retry, previousMac: presented.mac };
    // Only this family's expiry moves; the account's expired entries go at its next sign-in
    // or sweep, not on every rotation (a walk over all the account's sessions each time).
    const listed = this.#familiesBySubject.get(subjectKey(family.grant.accountKind, family.grant.subject));
    if (listed) listed.set(family.grant.familyId, family.grant.expiresAt);
    else this.#index(family.grant);
    return { state: 'rotated' };
  }

  /** What the presented token is in this live family; the rules of the Redis store's FIND script. */
  #find(family: Family, presented: RefreshTokenGeneration): RefreshTokenState {
    if (family.revoked) return { state: 'revoked' };
    const { current, retry } = family;
    const grant = { ...family.grant };
    if (presented.generation === current.generation)
      return presented.mac === current.mac ? { state: 'current', grant } : { state: 'unknown' };
    if (presented.generation > current.generation) return { state: 'unknown' };
    if (
      presented.generation === current.generation - 1 &&
      retry?.previousMac === presented.mac &&
      retry.until > this.#now()
    )
      return { state: 'retry', grant, sealedSuccessor: retry.sealedSuccessor };
    return { state: 'reused', grant };
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
    family.revoked = true;
    family.retry = undefined;
    this.#familiesBySubject
      .get(subjectKey(family.grant.accountKind, family.grant.subject))
      ?.delete(family.grant.familyId);
  }

  /** Lists the family under its account until its expiry, dropping what has expired there. */
  #index(grant: RefreshTokenFamily): void {
    const key = subjectKey(grant.accountKind, grant.subject);
    const families = this.#familiesBySubject.get(key) ?? new Map<string, number>();
    const now = this.#now();
    for (const [familyId, expiresAt] of families) if (expiresAt <= now) families.delete(familyId);
    families.set(grant.familyId, grant.expiresAt);
    this.#familiesBySubject.set(key, families);
  }

  /**
   * Drops expired entries (and retry records past their window) so a long-running embedded
   * server does not grow without bound.
   */
  #sweep(): void {
    if (this.#families.size % 1024 !== 0) return;
    const now = this.#now();
    for (const [familyId, family] of this.#families) {
      if (family.grant.expiresAt <= now) this.#families.delete(familyId);
      else if (family.retry && family.retry.until <= now) family.retry = undefined;
    }
    for (const [key, families] of this.#familiesBySubject) {
      for (const [familyId, expiresAt] of families) if (expiresAt <= now) families.delete(familyId);
      if (families.size === 0) this.#familiesBySubject.delete(key);
    }
  }
}

function subjectKey(kind: AccountKind, subject: string): string {
  return `${kind}:${subject}`;
}
