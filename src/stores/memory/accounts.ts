import type { AvatarGeneration } from '../../accounts/avatar-store.ts';
import type {
  Account,
  AccountChanges,
  AccountQuery,
  AccountStatus,
  AccountStore,
  AdminRole,
  FoldedText,
  SortKey,
} from '../../accounts/model.ts';
import {
  compareListed,
  foldedText,
  identityKey,
  matchesSearch,
  searchFold,
  sortKey,
} from '../../accounts/model.ts';
import { DuplicateIdentity } from '../../errors.ts';
import { copyRecord } from '../record-copy.ts';

/** Accounts in a Map: the embedded default, and the reference the contract tests hold others to. */
export class MemoryAccountStore implements AccountStore {
  readonly #byId = new Map<string, Account>();
  readonly #idByKey = new Map<string, string>();
  /** Each account's folded text, kept with it so that a search or a sort folds nothing stored. */
  readonly #foldedById = new Map<string, FoldedText>();
  /** The generation of the avatar change each account's `hasAvatar` reflects, once there was one. */
  readonly #avatarGenerationById = new Map<string, AvatarGeneration>();

  async findById(id: string): Promise<Account | null> {
    return copy(this.#byId.get(id));
  }

  async findByIdentity(identity: string): Promise<Account | null> {
    const id = this.#idByKey.get(identityKey(identity));
    return id === undefined ? null : copy(this.#byId.get(id));
  }

  async create(account: Account): Promise<void> {
    const key = identityKey(account.identity);
    if (this.#idByKey.has(key)) throw new DuplicateIdentity(account.identity);
    this.#idByKey.set(key, account.id);
    this.#byId.set(account.id, copyRecord(account));
    this.#foldedById.set(account.id, foldedText(account));
  }

  async createIfAbsent(account: Account): Promise<boolean> {
    if (this.#idByKey.has(identityKey(account.identity))) return false;
    await this.create(account);
    return true;
  }

  async update(id: string, changes: AccountChanges): Promise<Account | null> {
    return this.#update(id, changes);
  }

  /** Synchronous, so that writeAvatarFlag checks and writes in one step, nothing run between. */
  #update(id: string, changes: AccountChanges): Account | null {
    const current = this.#byId.get(id);
    if (!current) return null;
    const oldKey = identityKey(current.identity);
    const next: Account = { ...current, ...copyRecord(changes) };
    const newKey = identityKey(next.identity);
    if (newKey !== oldKey) {
      if (this.#idByKey.has(newKey)) throw new DuplicateIdentity(next.identity);
      this.#idByKey.delete(oldKey);
      this.#idByKey.set(newKey, id);
    }
    this.#byId.set(id, next);
    this.#foldedById.set(id, foldedText(next));
    return copy(next);
  }

  async writeAvatarFlag(
    id: string,
    generation: AvatarGeneration,
    changes: Pick<AccountChanges, 'hasAvatar' | 'updatedAt'>,
  ): Promise<Account | null> {
    const reflected = this.#avatarGenerationById.get(id);
    if (!this.#byId.has(id) || (reflected !== undefined && reflected >= generation)) return this.findById(id);
    this.#avatarGenerationById.set(id, generation);
    return this.#update(id, changes);
  }

  async delete(id: string): Promise<boolean> {
    const current = this.#byId.get(id);
    if (!current) return false;
    this.#byId.delete(id);
    this.#avatarGenerationById.delete(id);
    this.#foldedById.delete(id);
    this.#idByKey.delete(identityKey(current.identity));
    return true;
  }

  async list(query: AccountQuery): Promise<{ items: Account[]; total: number }> {
    const search = query.search === undefined ? '' : searchFold(query.search);
    const matching: { account: Account; id: string; key: SortKey }[] = [];
    for (const account of this.#byId.values()) {
      if (!matchesFilter(account, query)) continue;
      const folded = this.#foldedById.get(account.id) ?? foldedText(account);
      if (search !== '' && !matchesSearch(folded, search)) continue;
      matching.push({ account, id: account.id, key: sortKey(account, query.sort, folded) });
    }
    const start = (query.page - 1) * query.limit;
    const ordered = firstInOrder(matching, start + query.limit, (a, b) => compareListed(a, b, query.order));
    return {
      items: ordered.slice(start).map(({ account }) => copyRecord(account)),
      total: matching.length,
    };
  }

  async count(filter: { status?: AccountStatus; role?: AdminRole; except?: string }): Promise<number> {
    let n = 0;
    for (const account of this.#byId.values()) {
      if (account.id !== filter.except && matchesFilter(account, filter)) n++;
    }
    return n;
  }
}

/** Up to this many first items are picked in one pass; more are sorted. */
const PICKED_AT_MOST = 200;

/**
 * The first `count` items in order. A page near the start of a long listing (most pages a
 * console shows) needs only those: one pass keeps them, sorted, in O(n log count) instead of
 * sorting all n.
 */
function firstInOrder<T>(items: T[], count: number, compare: (a: T, b: T) => number): T[] {
  if (count >= items.length || count > PICKED_AT_MOST) return items.sort(compare).slice(0, count);
  const first: T[] = [];
  for (const item of items) {
    const last = first[count - 1];
    if (last !== undefined && compare(item, last) >= 0) continue;
    let low = 0;
    let high = first.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (compare(first[middle] as T, item) <= 0) low = middle + 1;
      else high = middle;
    }
    first.splice(low, 0, item);
    if (first.length > count) first.pop();
  }
  return first;
}

function matchesFilter(account: Account, filter: { status?: AccountStatus; role?: AdminRole }): boolean {
  return (
    (filter.status === undefined || account.status === filter.status) &&
    (filter.role === undefined || account.roles.includes(filter.role))
  );
}

function copy(account: Account | undefined): Account | null {
  return account ? copyRecord(account) : null;
}
