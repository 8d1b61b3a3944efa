import { randomUUID } from 'node:crypto';
import { type Collection, MongoServerError } from 'mongodb';
import {
  ONE_TIME_TOKEN_PURPOSES,
  type OneTimeToken,
  type OneTimeTokenPurpose,
  type OneTimeTokenStore,
} from '../../accounts/model.ts';

/**
 * A token under its digest as `_id`: the `_id` index is the unique index on the digest, so a
 * digest can never be stored twice. Expiry is checked in every query rather than left to a
 * TTL index, which FerretDB 1.x does not honour; expired documents are purged on `save`.
 * Single use rests on `deleteOne`'s count, which both MongoDB and FerretDB 1.x report exactly.
 */
export type OneTimeTokenDoc = Omit<OneTimeToken, 'digest'> & { _id: string };

/**
 * The current generation of an account's links of one purpose, in the same collection under
 * `_id` `generation:<purpose>:<accountId>` (no digest looks like that, and no token query
 * matches it: each names a digest and a purpose). One document per purpose, each written
 * whole: two kills racing leave one of their generations, both new, so neither revives a token.
 */
interface LinkGenerationDoc {
  _id: string;
  generation: string;
}

export const ONE_TIME_TOKENS_COLLECTION = 'one_time_tokens';

const generationId = (accountId: string, purpose: OneTimeTokenPurpose) =>
  `generation:${purpose}:${accountId}`;

export class MongoOneTimeTokenStore implements OneTimeTokenStore {
  readonly #collection: Collection<OneTimeTokenDoc>;
  readonly #generations: Collection<LinkGenerationDoc>;
  readonly #now: () => Date;

  constructor(collection: Collection<OneTimeTokenDoc>, options: { now?: () => Date } = {}) {
    this.#collection = collection;
    // The same collection, seen as holding the generation documents.
    this.#generations = collection as unknown as Collection<LinkGenerationDoc>;
    this.#now = options.now ?? (() => new Date());
  }

  /** The index `deleteForAccount` uses; idempotent, so every process runs it at open. */
  static async ensureIndexes(collection: Collection<OneTimeTokenDoc>): Promise<void> {
    await collection.createIndex({ accountId: 1 }, { name: 'accountId' });
  }

  async save(token: OneTimeToken): Promise<void> {
    const { generation: _ignored, ...fresh } = token;
    const generation = await this.#generation(token.accountId, token.purpose);
    await this.#insert(generation === undefined ? fresh : { ...fresh, generation });
  }

  async putBack(token: OneTimeToken): Promise<void> {
    await this.#insert(token);
  }

  async consume(purpose: OneTimeTokenPurpose, digest: string): Promise<OneTimeToken | null> {
    const doc = await this.#collection.findOne({ _id: digest, purpose, expiresAt: { $gt: this.#now() } });
    if (!doc) return null;
    // The deletion decides who wins: of concurrent deletes of one document exactly one reports
    // it deleted. Not findOneAndDelete: on FerretDB 1.x (SQLite) several concurrent calls can
    // all return the document, which would let one link be used twice. The delete names what
    // was read, so it cannot take a copy put back meanwhile (with another count) for this one.
    const { deletedCount } = await this.#collection.deleteOne({
      _id: digest,
      wrongPasswords: doc.wrongPasswords ?? { $exists: false },
      generation: doc.generation ?? { $exists: false },
    });
    if (deletedCount !== 1) return null;
    // Read after the delete: a kill records its generation before it deletes, so a token it
    // missed because a use held it is seen dead here.
    return (await this.#live(doc)) ? toToken(doc) : null;
  }

  async find(purpose: OneTimeTokenPurpose, digest: string): Promise<OneTimeToken | null> {
    const doc = await this.#collection.findOne({ _id: digest, purpose, expiresAt: { $gt: this.#now() } });
    return doc && (await this.#live(doc)) ? toToken(doc) : null;
  }

  async deleteForAccount(accountId: string, purpose?: OneTimeTokenPurpose): Promise<string> {
    const generation = randomUUID();
    for (const each of purpose === undefined ? ONE_TIME_TOKEN_PURPOSES : [purpose])
      await this.#setGeneration(generationId(accountId, each), generation);
    await this.#collection.deleteMany(purpose === undefined ? { accountId } : { accountId, purpose });
    return generation;
  }

  async #insert(token: OneTimeToken): Promise<void> {
    await this.#collection.deleteMany({ expiresAt: { $lte: this.#now() } });
    await this.#collection.insertOne({
      _id: token.digest,
      purpose: token.purpose,
      accountId: token.accountId,
      expiresAt: token.expiresAt,
      ...(token.newIdentity === undefined ? {} : { newIdentity: token.newIdentity }),
      ...(token.mailedTo === undefined ? {} : { mailedTo: token.mailedTo }),
      ...(token.wrongPasswords === undefined ? {} : { wrongPasswords: token.wrongPasswords }),
      ...(token.generation === undefined ? {} : { generation: token.generation }),
    });
  }

  async #generation(accountId: string, purpose: OneTimeTokenPurpose): Promise<string | undefined> {
    return (await this.#generations.findOne({ _id: generationId(accountId, purpose) }))?.generation;
  }

  async #live(doc: OneTimeTokenDoc): Promise<boolean> {
    return doc.generation === (await this.#generation(doc.accountId, doc.purpose));
  }

  async #setGeneration(_id: string, generation: string): Promise<void> {
    try {
      await this.#generations.updateOne({ _id }, { $set: { generation } }, { upsert: true });
    } catch (error) {
      // Two first kills racing to insert the document: the other's insert won, this one updates.
      if (!(error instanceof MongoServerError && error.code === 11000)) throw error;
      await this.#generations.updateOne({ _id }, { $set: { generation } });
    }
  }
}

function toToken(doc: OneTimeTokenDoc | null): OneTimeToken | null {
  if (!doc) return null;
  const {
    purpose,
    _id: digest,
    accountId,
    expiresAt,
    newIdentity,
    mailedTo,
    wrongPasswords,
    generation,
  } = doc;
  return {
    purpose,
    digest,
    accountId,
    expiresAt,
    ...(newIdentity === undefined ? {} : { newIdentity }),
    ...(mailedTo === undefined ? {} : { mailedTo }),
    ...(wrongPasswords === undefined ? {} : { wrongPasswords }),
    ...(generation === undefined ? {} : { generation }),
  };
}
