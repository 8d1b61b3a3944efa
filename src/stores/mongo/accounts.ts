import type { AnyBulkWriteOperation, Collection, Filter, IndexSpecification } from 'mongodb';
import type { AvatarGeneration } from '../../accounts/avatar-store.ts';
import type {
  Account,
  AccountChanges,
  AccountQuery,
  AccountSortField,
  AccountStatus,
  AccountStore,
  AdminRole,
  FoldedText,
} from '../../accounts/model.ts';
import { ACCOUNT_SORT_FIELDS, foldedText, identityKey, searchFold } from '../../accounts/model.ts';
import { DuplicateIdentity } from '../../errors.ts';
import { insertUnique, isDuplicateKey } from './unique.ts';

/**
 * How an account is stored: the UUID as `_id`, plus the folded identity the unique index is
 * on, and the folded text (`searchFold`) that listings search and sort.
 */
export type AccountDoc = Omit<Account, 'id' | 'sessionKey' | 'hasAvatar'> & {
  _id: string;
  identityKey: string;
  /** Absent from documents stored before it existed, which means empty. */
  sessionKey?: string;
  /** Absent from documents stored before avatars existed, which means none. */
  hasAvatar?: boolean;
  /** The generation of the avatar change `hasAvatar` reflects; absent until the first one. */
  avatarGeneration?: AvatarGeneration;
  /** Absent from documents stored before they existed, until a start adds them (foldSearchText). */
  foldedIdentity?: string;
  foldedFirstName?: string;
  foldedLastName?: string;
};

/** Where each field a search reads is stored folded. */
const FOLDED_FIELDS = {
  identity: 'foldedIdentity',
  firstName: 'foldedFirstName',
  lastName: 'foldedLastName',
} as const satisfies Record<keyof FoldedText, keyof AccountDoc>;
type FoldedField = (typeof FOLDED_FIELDS)[keyof FoldedText];
const FOLDED = Object.entries(FOLDED_FIELDS) as [keyof FoldedText, FoldedField][];

/** The stored field each sort orders by: the folded text of text fields, as the memory store does. */
const SORTED_ON = {
  ...FOLDED_FIELDS,
  status: 'status',
  createdAt: 'createdAt',
  updatedAt: 'updatedAt',
  id: '_id',
} as const satisfies Record<AccountSortField, keyof AccountDoc>;

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
    return insertUnique(this.#collection, toAccountDoc(account));
  }

  async update(id: string, changes: AccountChanges): Promise<Account | null> {
    const set: Partial<AccountDoc> = {};
    // Only known fields are copied, so a stray `_id` or `identityKey` cannot be written.
    for (const key of CHANGEABLE) {
      if (changes[key] !== undefined) Object.assign(set, { [key]: changes[key] });
    }
    if (changes.identity !== undefined) set.identityKey = identityKey(changes.identity);
    // Each folded field is written with its own field, in the same write: no two changes race on it.
    for (const [field, stored] of FOLDED) {
      const value = changes[field];
      if (value !== undefined) Object.assign(set, { [stored]: searchFold(value ?? '') });
    }
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

  async writeAvatarFlag(
    id: string,
    generation: AvatarGeneration,
    changes: Pick<AccountChanges, 'hasAvatar' | 'updatedAt'>,
  ): Promise<Account | null> {
    const set: Partial<AccountDoc> = { avatarGeneration: generation };
    if (changes.hasAvatar !== undefined) set.hasAvatar = changes.hasAvatar;
    if (changes.updatedAt !== undefined) set.updatedAt = changes.updatedAt;
    const written = await this.#collection.findOneAndUpdate(
      {
        _id: id,
        $or: [{ avatarGeneration: { $exists: false } }, { avatarGeneration: { $lt: generation } }],
      },
      { $set: set },
      { returnDocument: 'after' },
    );
    // Nothing written: no such account, or it reflects a later change already. (FerretDB 1.x
    // applies the filter before the write, not with it: writeAvatarFlag in avatars.ts looks
    // again after.)
    return written ? toAccount(written) : this.findById(id);
  }

  async delete(id: string): Promise<boolean> {
    const result = await this.#collection.deleteOne({ _id: id });
    return result.deletedCount === 1;
  }

  async list(query: AccountQuery): Promise<{ items: Account[]; total: number }> {
    const filter = accountFilter(query);
    // A limit of 0 means "no limit" to MongoDB; to the contract it means an empty page.
    if (query.limit <= 0) return { items: [], total: await this.#collection.countDocuments(filter) };
    const direction = query.order === 'asc' ? 1 : -1;
    // Plain binary ordering, no collation: FerretDB does not support collations, and the
    // memory store compares strings the same way. `_id` breaks ties so pages are stable.
    const [total, docs] = await Promise.all([
      this.#collection.countDocuments(filter),
      this.#collection
        .find(filter)
        .sort({ [SORTED_ON[query.sort]]: direction, _id: direction })
        .skip((query.page - 1) * query.limit)
        .limit(query.limit)
        .toArray(),
    ]);
    return { items: docs.map((doc) => toAccount(doc) as Account), total };
  }

  async count(filter: { status?: AccountStatus; role?: AdminRole; except?: string }): Promise<number> {
    return this.#collection.countDocuments(accountFilter(filter));
  }
}

/** The documents a listing or a count selects. Nothing the caller gives becomes an operator or a key. */
function accountFilter(filter: {
  search?: string;
  status?: AccountStatus;
  role?: AdminRole;
  except?: string;
}): Filter<AccountDoc> {
  const query: Filter<AccountDoc> = {};
  if (filter.except !== undefined) query._id = { $ne: filter.except };
  if (filter.status !== undefined) query.status = filter.status;
  // Matching a scalar against an array field matches any element.
  if (filter.role !== undefined) query.roles = filter.role;
  const search = filter.search === undefined ? '' : searchFold(filter.search);
  if (search !== '') {
    // The folded text as a literal, every metacharacter escaped: a literal is matched in time
    // linear in the text scanned, by PCRE (MongoDB) and RE2 (FerretDB) alike. No `i` flag:
    // both sides are folded already, the same way on every backend.
    const literal = { $regex: escapeRegExp(search) };
    query.$or = FOLDED.map(([, stored]) => ({ [stored]: literal }));
  }
  return query;
}

/**
 * Escapes the characters that are special outside a character class, the set PCRE and RE2
 * agree on (Go's regexp.QuoteMeta escapes these): a backslash before punctuation is that
 * character in both, whereas before a letter, a digit or a non-ASCII character it is not.
 */
function escapeRegExp(text: string): string {
  return text.replace(/[\\.+*?()|[\]{}^$]/g, '\\$&');
}

/** An account as stored: the document `create` inserts. */
export function toAccountDoc(account: Account): AccountDoc {
  const folded = foldedText(account);
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
    foldedIdentity: folded.identity,
    foldedFirstName: folded.firstName,
    foldedLastName: folded.lastName,
  };
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

/**
 * The indexes of the listings a console runs: one per sort, ties by `_id` (read backwards for
 * a descending sort), and the status filter under the default sort (the status index serves
 * it under a sort by status or id). Plain indexes: no collation, no partial filter.
 */
const LIST_INDEXES: { key: IndexSpecification; name: string }[] = [
  ...ACCOUNT_SORT_FIELDS.filter((field) => field !== 'id').map((field) => ({
    key: { [SORTED_ON[field]]: 1, _id: 1 },
    name: `list_by_${field}`,
  })),
  { key: { status: 1, createdAt: 1, _id: 1 }, name: 'list_by_status_createdAt' },
];

/** Readies a collection of accounts for listings: folded text where it is missing, and the indexes. */
export async function ensureListing(collection: Collection<AccountDoc>): Promise<void> {
  await foldSearchText(collection);
  for (const { key, name } of LIST_INDEXES) await collection.createIndex(key, { name });
}

/**
 * Adds the folded text to the documents stored before it existed. A folded field is set only
 * while its own field still holds the value it was folded from and it is still missing: a
 * change written meanwhile (which sets it itself) wins, and concurrent starts agree.
 */
async function foldSearchText(collection: Collection<AccountDoc>): Promise<void> {
  const missing = await collection
    .find({ $or: FOLDED.map(([, stored]) => ({ [stored]: { $exists: false } })) })
    .project<Partial<AccountDoc> & Pick<AccountDoc, '_id' | 'identity'>>({
      identity: 1,
      firstName: 1,
      lastName: 1,
      ...Object.fromEntries(FOLDED.map(([, stored]) => [stored, 1])),
    })
    .toArray();
  const updates: AnyBulkWriteOperation<AccountDoc>[] = [];
  for (const doc of missing) {
    for (const [field, stored] of FOLDED) {
      if (doc[stored] !== undefined) continue;
      const value = doc[field] ?? null;
      updates.push({
        updateOne: {
          filter: { _id: doc._id, [field]: value, [stored]: { $exists: false } },
          update: { $set: { [stored]: searchFold(value ?? '') } },
        },
      });
    }
  }
  for (let i = 0; i < updates.length; i += 1000) {
    await collection.bulkWrite(updates.slice(i, i + 1000), { ordered: false });
  }
}
