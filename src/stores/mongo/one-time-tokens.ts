import type { Collection } from 'mongodb';
import type { OneTimeToken, OneTimeTokenPurpose, OneTimeTokenStore } from '../../accounts/model.ts';

/**
 * A token under its digest as `_id`: the `_id` index is the unique index on the digest, so a
 * digest can never be stored twice. Expiry is checked in every query rather than left to a
 * TTL index, which FerretDB 1.x does not honour; expired documents are purged on `save`.
 * Single use rests on `deleteOne`'s count, which both MongoDB and FerretDB 1.x report exactly.
 */
export interface OneTimeTokenDoc {
  _id: string;
  purpose: OneTimeTokenPurpose;
  accountId: string;
  expiresAt: Date;
  newIdentity?: string;
  wrongPasswords?: number;
}

export const ONE_TIME_TOKENS_COLLECTION = 'one_time_tokens';

export class MongoOneTimeTokenStore implements OneTimeTokenStore {
  readonly #collection: Collection<OneTimeTokenDoc>;
  readonly #now: () => Date;

  constructor(collection: Collection<OneTimeTokenDoc>, options: { now?: () => Date } = {}) {
    this.#collection = collection;
    this.#now = options.now ?? (() => new Date());
  }

  /** The index `deleteForAccount` uses; idempotent, so every process runs it at open. */
  static async ensureIndexes(collection: Collection<OneTimeTokenDoc>): Promise<void> {
    await collection.createIndex({ accountId: 1 }, { name: 'accountId' });
  }

  async save(token: OneTimeToken): Promise<void> {
    await this.#collection.deleteMany({ expiresAt: { $lte: this.#now() } });
    await this.#collection.insertOne({
      _id: token.digest,
      purpose: token.purpose,
      accountId: token.accountId,
      expiresAt: token.expiresAt,
      ...(token.newIdentity === undefined ? {} : { newIdentity: token.newIdentity }),
      ...(token.wrongPasswords === undefined ? {} : { wrongPasswords: token.wrongPasswords }),
    });
  }

  async consume(purpose: OneTimeTokenPurpose, digest: string): Promise<OneTimeToken | null> {
    const doc = await this.#collection.findOne({ _id: digest, purpose, expiresAt: { $gt: this.#now() } });
    if (!doc) return null;
    // The deletion decides who wins: of concurrent deletes of one document exactly one reports
    // it deleted. Not findOneAndDelete: on FerretDB 1.x (SQLite) several concurrent calls can
    // all return the document, which would let one link be used twice.
    const { deletedCount } = await this.#collection.deleteOne({ _id: digest });
    return deletedCount === 1 ? toToken(doc) : null;
  }

  async find(purpose: OneTimeTokenPurpose, digest: string): Promise<OneTimeToken | null> {
    return toToken(await this.#collection.findOne({ _id: digest, purpose, expiresAt: { $gt: this.#now() } }));
  }

  async deleteForAccount(accountId: string, purpose?: OneTimeTokenPurpose): Promise<void> {
    await this.#collection.deleteMany(purpose === undefined ? { accountId } : { accountId, purpose });
  }
}

function toToken(doc: OneTimeTokenDoc | null): OneTimeToken | null {
  if (!doc) return null;
  const { purpose, _id: digest, accountId, expiresAt, newIdentity, wrongPasswords } = doc;
  return {
    purpose,
    digest,
    accountId,
    expiresAt,
    ...(newIdentity === undefined ? {} : { newIdentity }),
    ...(wrongPasswords === undefined ? {} : { wrongPasswords }),
  };
}
