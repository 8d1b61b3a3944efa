import { type Collection, type Filter, MongoServerError } from 'mongodb';
import { DuplicateIdentity } from '../../errors.ts';
import { identityKey } from '../account-rules.ts';
import type {
  Account,
  AccountChanges,
  AccountQuery,
  AccountStatus,
  AccountStore,
  AdminRole,
} from '../types.ts';

/** How an account is stored: the UUID as `_id`, plus the folded identity the unique index is on. */
export type AccountDoc = Omit<Account, 'id'> & { _id: string; identityKey: string };

/**
 * True for a unique-index violation. MongoDB (and FerretDB on inserts) answers code 11000;
 * FerretDB 1.x on SQLite answers an update that breaks a unique index with code 1 and the
 * SQLite message instead, so that shape counts too.
 */
export function isDuplicateKey(error: unknown): boolean {
  if (!(error instanceof MongoServerError)) return false;
  return error.code === 11000 || (error.code === 1 && error.message.includes('UNIQUE constraint failed'));
}

const CHANGEABLE = [
  'identity',
  'passwordHash',
  'firstName',
  'lastName',
  'status',
  'roles',
  'updatedAt',
] as const satisfies readonly (keyof AccountChanges)[];

/**
 * Uniqueness rests on the unique `identityKey` index (created at open), never on a
 * read-then-write, and every method is a single-document operation: FerretDB 1.x has no
 * transactions and no collations, so nothing here needs either.
 */
export class MongoAccountStore implements AccountStore {
  readonly #collection: Collection<AccountDoc>;
  readonly #foldCase: boolean;

  constructor(collection: Collection<AccountDoc>, options: { foldIdentityCase: boolean }) {
    this.#collection = collection;
    this.#foldCase = options.foldIdentityCase;
  }

  async findById(id: string): Promise<Account | null> {
    return toAccount(await this.#collection.findOne({ _id: id }));
  }

  async findByIdentity(identity: string): Promise<Account | null> {
    return toAccount(await this.#collection.findOne({ identityKey: identityKey(identity, this.#foldCase) }));
  }

  async create(account: Account): Promise<void> {
    try {
      await this.#collection.insertOne(this.#toDoc(account));
    } catch (error) {
      if (isDuplicateKey(error)) throw new DuplicateIdentity(account.identity);
      throw error;
    }
  }

  async createIfAbsent(account: Account): Promise<boolean> {
    // Insert-and-catch rather than find-then-insert: several processes seeding at once
    // then create the record exactly once, and an existing (maybe edited) one is never touched.
    try {
      await this.#collection.insertOne(this.#toDoc(account));
      return true;
    } catch (error) {
      if (isDuplicateKey(error)) return false;
      throw error;
    }
  }

  async update(id: string, changes: AccountChanges): Promise<Account | null> {
    const set: Partial<AccountDoc> = {};
    // Only known fields are copied, so a stray `_id` or `identityKey` cannot be written.
    for (const key of CHANGEABLE) {
      if (changes[key] !== undefined) Object.assign(set, { [key]: changes[key] });
    }
    if (changes.identity !== undefined) set.identityKey = identityKey(changes.identity, this.#foldCase);
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

  async count(filter: { status?: AccountStatus; role?: AdminRole }): Promise<number> {
    const query: Filter<AccountDoc> = {};
    if (filter.status !== undefined) query.status = filter.status;
    // Matching a scalar against an array field matches any element.
    if (filter.role !== undefined) query.roles = filter.role;
    return this.#collection.countDocuments(query);
  }

  #toDoc(account: Account): AccountDoc {
    return {
      _id: account.id,
      identity: account.identity,
      identityKey: identityKey(account.identity, this.#foldCase),
      passwordHash: account.passwordHash,
      firstName: account.firstName,
      lastName: account.lastName,
      status: account.status,
      roles: [...account.roles],
      createdAt: account.createdAt,
      updatedAt: account.updatedAt,
    };
  }
}

/** Maps field by field so internal fields (`_id`, `identityKey`) never leak out. */
function toAccount(doc: AccountDoc | null): Account | null {
  if (!doc) return null;
  return {
    id: doc._id,
    identity: doc.identity,
    passwordHash: doc.passwordHash,
    firstName: doc.firstName ?? null,
    lastName: doc.lastName ?? null,
    status: doc.status,
    roles: [...(doc.roles ?? [])],
    createdAt: doc.createdAt,
    updatedAt: doc.updatedAt,
  };
}
