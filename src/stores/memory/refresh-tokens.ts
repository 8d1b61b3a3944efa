import type { AccountKind } from '../../accounts/model.ts';
import type { RefreshFamilyRecord, RefreshFamilyRecords, VersionedFamilyRecord } from '../../oauth/model.ts';
import { VersionedRefreshTokenStore } from '../../oauth/versioned-refresh-tokens.ts';

/** Entries held by MemoryRefreshTokenStore; each stays until a sweep after it expires. */
export interface Footprint {
  families: number;
  /** Family ids listed under their accounts, for revokeSubject. */
  accountIndex: number;
}

/**
 * Refresh-token families in process memory: read and compare-and-set, and no rule of their
 * own. Each method runs without awaiting, so on Node's single thread each one is atomic.
 */
class MemoryFamilyRecords implements RefreshFamilyRecords {
  readonly acknowledged = false;
  readonly families = new Map<string, { record: RefreshFamilyRecord; version: number }>();
  /** "kind:subject" -> familyId -> the family's expiry (ms), for revokeSubject. */
  readonly bySubject = new Map<string, Map<string, number>>();
  readonly #now: () => number;

  constructor(now: () => number) {
    this.#now = now;
  }

  async read(familyId: string) {
    const stored = this.families.get(familyId);
    return stored ? { record: copy(stored.record), version: stored.version } : null;
  }

  async write(
    record: RefreshFamilyRecord,
    base: VersionedFamilyRecord | null,
  ): Promise<VersionedFamilyRecord | undefined> {
    const { familyId, accountKind, subject, expiresAt } = record.family;
    const version = base?.version ?? 0;
    if ((this.families.get(familyId)?.version ?? 0) !== version) return undefined;
    if (version === 0) this.#sweep();
    this.families.set(familyId, { record: copy(record), version: version + 1 });
    const key = subjectKey(accountKind, subject);
    const listed = this.bySubject.get(key) ?? new Map<string, number>();
    if (record.revoked) listed.delete(familyId);
    else listed.set(familyId, expiresAt);
    // Only a new family prunes the account's expired entries: a rotation does not walk all
    // the account's sessions each time.
    if (version === 0) for (const [id, expiry] of listed) if (expiry <= this.#now()) listed.delete(id);
    if (listed.size > 0) this.bySubject.set(key, listed);
    else this.bySubject.delete(key);
    return { record, version: version + 1 };
  }

  amend(
    record: RefreshFamilyRecord,
    base: VersionedFamilyRecord | null,
  ): Promise<VersionedFamilyRecord | undefined> {
    return this.write(record, base);
  }

  async unlist(accountKind: AccountKind, subject: string, familyIds: readonly string[]): Promise<void> {
    const key = subjectKey(accountKind, subject);
    const listed = this.bySubject.get(key);
    for (const familyId of familyIds) listed?.delete(familyId);
    if (listed?.size === 0) this.bySubject.delete(key);
  }

  async familiesOf(accountKind: AccountKind, subject: string): Promise<string[]> {
    return [...(this.bySubject.get(subjectKey(accountKind, subject))?.keys() ?? [])];
  }

  /**
   * Every 1024 families, drops expired entries (and retry records past their window) so a
   * long-running embedded server does not grow without bound.
   */
  #sweep(): void {
    if (this.families.size % 1024 !== 0) return;
    const now = this.#now();
    for (const [familyId, { record, version }] of this.families) {
      if (record.family.expiresAt <= now) this.families.delete(familyId);
      else if (record.retry && record.retry.until <= now && record.retry.pending === undefined) {
        const { retry: _closed, ...rest } = record;
        this.families.set(familyId, { record: rest, version: version + 1 });
      }
    }
    for (const [key, families] of this.bySubject) {
      for (const [familyId, expiresAt] of families) if (expiresAt <= now) families.delete(familyId);
      if (families.size === 0) this.bySubject.delete(key);
    }
  }
}

/** Refresh tokens in process memory, by the rules of the OAuth domain. */
export class MemoryRefreshTokenStore extends VersionedRefreshTokenStore {
  readonly #records: MemoryFamilyRecords;

  constructor(now: () => number = Date.now) {
    const records = new MemoryFamilyRecords(now);
    super(records, now);
    this.#records = records;
  }

  /**
   * How many entries of each kind the store holds: what an embedded server keeps in memory.
   * Expired ones are dropped every 1024 new families, so this follows the live sessions.
   */
  footprint(): Footprint {
    let accountIndex = 0;
    for (const families of this.#records.bySubject.values()) accountIndex += families.size;
    return { families: this.#records.families.size, accountIndex };
  }
}

function subjectKey(kind: AccountKind, subject: string): string {
  return `${kind}:${subject}`;
}

/** A record no caller can change in place: each of its parts is flat. */
function copy({ family, current, revoked, retry }: RefreshFamilyRecord): RefreshFamilyRecord {
  return { family: { ...family }, current: { ...current }, revoked, ...(retry && { retry: { ...retry } }) };
}
