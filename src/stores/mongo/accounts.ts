import type { Collection, Filter } from 'mongodb';
import type {
  Account,
  AccountChanges,
  AccountQuery,
  AccountStatus,
  AccountStore,
  AdminRole,
} from '../../accounts/model.ts';
import { identityKey } from '../../accounts/model.ts';
import { DuplicateIdentity } from '../../errors.ts';
import { insertUnique, isDuplicateKey } from './unique.ts';

/** How an account is stored: the UUID as `_id`, plus the folded identity the unique index is on. */
export type AccountDoc = Omit<Account, 'id' | 'sessionKey' | 'hasAvatar'> & {
  _id: string;
  identityKey: string;
  /** Absent from documents stored before it existed, which means empty. */
  sessionKey?: string;
  /** Absent from documents stored before avatars existed, which means none. */
  hasAvatar?: boolean;
};

const CHANGEABLE = [
  'identity',
  'passwordHash',
  'firstName',
  'lastName',
  'status',
  'roles',
  'sessionKey',
  'hasAvatar',
  'updatedAt',
] as const satisfies readonly (keyof AccountChanges)[];

/**
 * Uniqueness rests on the unique `identityKey` index (created at open), never on a
 * read-then-write, and every method is a single-document operation: FerretDB 1.x has no
 * transactions and no collations, so nothing here needs either.
 */
export class MongoAccountStore implements AccountStore {
  readonly #collection: Collection<AccountDoc>;

  constructor(collection: Collection<AccountDoc>) {
    this.#collection = collection;
  }

  async findById(id: string): Promise<Account | null> {
    return toAccount(await this.#collection.findOne({ _id: id }));
  }

  async findByIdentity(identity: string): Promise<Account | null> {
    const key = identityKey(identity);
    if (key === identity) return toAccount(await this.#collection.findOne({ identityKey: key }));
    // An admin that kept its unfolded key (see foldIdentityKeys) is found by its exact identity.
    const docs = await this.#collection.find({ identityKey: { $in: [key, identity] } }).toArray();
    return toAccount(
      docs.find((doc) => doc.identity === identity) ?? docs.find((doc) => doc.identityKey === key),
    );
  }

  async create(account: Account): Promise<void> {
    if (!(await this.createIfAbsent(account))) throw new DuplicateIdentity(account.identity);
  }

  async createIfAbsent(account: Account): Promise<boolean> {
    return insertUnique(this.#collection, this.#toDoc(account));
  }

  async update(id: string, changes: AccountChanges): Promise<Account | null> {
    const set: Partial<AccountDoc> = {};
    // Only known fields are copied, so a stray `_id` or `identityKey` cannot be written.
    for (const key of CHANGEABLE) {
      if (changes[key] !== undefined) Object.assign(set, { [key]: changes[key] });
    }
    if (changes.identity !== undefined) set.identityKey = identityKey(changes.identity);
    // `$set: {}` is an error on MongoDB, and there is nothing to write anyway.
    if (Object.keys(set).length === 0) return this.findById(id);
    try {
      return toAccount(
        await this.#collection.findOneAndUpdate({ _id: id }, { $set: set }, { returnDocument: 'after' }),
      );
    } catch (error) {
      if (isDuplicateKey(error)) throw new DuplicateIdentity(changes.identity ?? '');
      throw error;
    }
  }

  async delete(id: string): Promise<boolean> {
    const result = await this.#collection.deleteOne({ _id: id });
    return result.deletedCount === 1;
  }

  async list(query: AccountQuery): Promise<{ items: Account[]; total: number }> {
    const filter: Filter<AccountDoc> = query.status === undefined ? {} : { status: query.status };
    const total = await this.#collection.countDocuments(filter);
    // A limit of 0 means "no limit" to MongoDB; to the contract it means an empty page.
    if (query.limit <= 0) return { items: [], total };
    const direction = query.order === 'asc' ? 1 : -1;
    // Plain binary ordering, no collation: FerretDB does not support collations, and the
    // memory store compares strings the same way. `_id` breaks ties so pages are stable.
    const docs = await this.#collection
      .find(filter)
      .sort({ [query.sort]: direction, _id: direction })
      .skip((query.page - 1) * query.limit)
      .limit(query.limit)
      .toArray();
    return { items: docs.map((doc) => toAccount(doc) as Account), total };
  }

  async count(filter: { status?: AccountStatus; role?: AdminRole; except?: string }): Promise<number> {
    const query: Filter<AccountDoc> = {};
    if (filter.except !== undefined) query._id = { $ne: filter.except };
    if (filter.status !== undefined) query.status = filter.status;
    // Matching a scalar against an array field matches any element.
    if (filter.role !== undefined) query.roles = filter.role;
    return this.#collection.countDocuments(query);
  }

  #toDoc(account: Account): AccountDoc {
    return {
      _id: account.id,
      identity: account.identity,
      identityKey: identityKey(account.identity),
      passwordHash: account.passwordHash,
      firstName: account.firstName,
      lastName: account.lastName,
      status: account.status,
      roles: [...account.roles],
      sessionKey: account.sessionKey,
      hasAvatar: account.hasAvatar,
      createdAt: account.createdAt,
      updatedAt: account.updatedAt,
    };
  }
}

/** Maps field by field so internal fields (`_id`, `identityKey`) never leak out. */
function toAccount(doc: AccountDoc | null | undefined): Account | null {
  if (!doc) return null;
  return {
    id: doc._id,
    identity: doc.identity,
    passwordHash: doc.passwordHash,
    firstName: doc.firstName ?? null,
    lastName: doc.lastName ?? null,
    status: doc.status,
    roles: [...(doc.roles ?? [])],
    sessionKey: doc.sessionKey ?? '',
    hasAvatar: doc.hasAvatar ?? false,
    createdAt: doc.createdAt,
    updatedAt: doc.updatedAt,
  };
}

/**
 * Admin identities were once unique with regard to case, so stored admins may have an
 * unfolded `identityKey`. Folds each at open, oldest account first; the unique index
 * arbitrates, so concurrent starts agree and never fail. Two admins that differ only by case
 * cannot share the folded key: one holds it, the other keeps its old key, is still found by
 * its exact identity, and is logged at every start until an operator renames one of them.
 * Reads the whole collection: administrators are few.
 */
export async function foldIdentityKeys(
  collection: Collection<AccountDoc>,
  log: (message: string) => void,
): Promise<void> {
  const docs = await collection
    .find({}, { projection: { identity: 1, identityKey: 1 } })
    .sort({ createdAt: 1, _id: 1 })
    .toArray();
  for (const { _id, identity, identityKey: stored } of docs) {
    const key = identityKey(identity);
    if (stored === key) continue;
    try {
      await collection.updateOne({ _id, identityKey: stored }, { $set: { identityKey: key } });
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
      log(
        `Account ${_id} ("${identity}") differs only by case from another one in ${collection.collectionName}; ` +
          'both are kept and sign in with their exact identity: rename one of them',
      );
    }
  }
}
