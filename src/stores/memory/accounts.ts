import type {
  Account,
  AccountChanges,
  AccountQuery,
  AccountStatus,
  AccountStore,
  AdminRole,
} from '../../accounts/model.ts';
import { compareAccounts, identityKey } from '../../accounts/model.ts';
import { DuplicateIdentity } from '../../errors.ts';
import { copyRecord } from '../record-copy.ts';

/** Accounts in a Map: the embedded default, and the reference the contract tests hold others to. */
export class MemoryAccountStore implements AccountStore {
  readonly #byId = new Map<string, Account>();
  readonly #idByKey = new Map<string, string>();

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
  }

  async createIfAbsent(account: Account): Promise<boolean> {
    if (this.#idByKey.has(identityKey(account.identity))) return false;
    await this.create(account);
    return true;
  }

  async update(id: string, changes: AccountChanges): Promise<Account | null> {
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
    return copy(next);
  }

  async delete(id: string): Promise<boolean> {
    const current = this.#byId.get(id);
    if (!current) return false;
    this.#byId.delete(id);
    this.#idByKey.delete(identityKey(current.identity));
    return true;
  }

  async list(query: AccountQuery): Promise<{ items: Account[]; total: number }> {
    const matching = [...this.#byId.values()]
      .filter((account) => query.status === undefined || account.status === query.status)
      .sort((a, b) => compareAccounts(a, b, query.sort, query.order));
    const start = (query.page - 1) * query.limit;
    return {
      items: matching.slice(start, start + query.limit).map((a) => copyRecord(a)),
      total: matching.length,
    };
  }

  async count(filter: { status?: AccountStatus; role?: AdminRole; except?: string }): Promise<number> {
    let n = 0;
    for (const account of this.#byId.values()) {
      if (account.id === filter.except) continue;
      if (filter.status !== undefined && account.status !== filter.status) continue;
      if (filter.role !== undefined && !account.roles.includes(filter.role)) continue;
      n++;
    }
    return n;
  }
}

function copy(account: Account | undefined): Account | null {
  return account ? copyRecord(account) : null;
}
