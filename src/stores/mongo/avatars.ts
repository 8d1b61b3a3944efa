import { Binary, type Collection } from 'mongodb';
import type {
  Avatar,
  AvatarChange,
  AvatarGeneration,
  AvatarMediaType,
  AvatarRemoval,
  AvatarStore,
} from '../../accounts/avatar-store.ts';
import { insertUnique } from './unique.ts';

/**
 * One document per change to an account's avatar, `_id` `<account id>#<generation>`: an
 * upload holds the image as BSON binary data, a removal nothing (a tombstone). A single
 * document holds up to 16 MB, which AVATAR_SIZE_LIMIT stays below, so GridFS (chunks and a
 * files document, written and removed as several operations) would only add writes that a
 * failure could leave half done. It is kept apart from the account so that reading an
 * account never carries an image.
 *
 * What an account has is its document of the latest generation. Documents are only inserted
 * and deleted, never updated: FerretDB 1.x finds the documents an update's filter matches
 * and writes them afterwards, not isolated from other writers, so a conditional update ("only
 * if older") could write an older change over a later one. An insert of a new `_id` and a
 * delete are exact there too. A change that finds a later one stored is history and deletes
 * itself; the latest deletes the ones before it. Documents stored before generations existed
 * have the account id as `_id` and no generation, which sorts before every generation.
 */
export interface AvatarDoc {
  _id: string;
  /** Absent from the one document an account had before generations existed. */
  account?: string;
  generation?: AvatarGeneration;
  /** The image; both absent from a removal's document. */
  mediaType?: AvatarMediaType;
  bytes?: Binary;
}

export const AVATARS_COLLECTION = 'avatars';

export class MongoAvatarStore implements AvatarStore {
  readonly #collection: Collection<AvatarDoc>;

  constructor(collection: Collection<AvatarDoc>) {
    this.#collection = collection;
  }

  /** The index an account's latest change is found by; idempotent, so every process runs it at open. */
  static async ensureIndexes(collection: Collection<AvatarDoc>): Promise<void> {
    await collection.createIndex({ account: 1, generation: -1 }, { name: 'account_generation' });
  }

  async find(accountId: string): Promise<Avatar | null> {
    const doc = await this.#latest(accountId);
    return doc?.mediaType && doc.bytes ? { mediaType: doc.mediaType, bytes: doc.bytes.value() } : null;
  }

  async latestChange(accountId: string): Promise<AvatarChange | null> {
    const doc = await this.#latest(accountId, { mediaType: 1, generation: 1 });
    return doc && { generation: doc.generation ?? '', present: doc.mediaType !== undefined };
  }

  async put(accountId: string, avatar: Avatar, generation: AvatarGeneration): Promise<boolean> {
    const doc = {
      _id: `${accountId}#${generation}`,
      account: accountId,
      generation,
      mediaType: avatar.mediaType,
      bytes: new Binary(avatar.bytes),
    };
    return (await insertUnique(this.#collection, doc)) && this.#settle(accountId, generation);
  }

  async delete(accountId: string, generation: AvatarGeneration): Promise<AvatarRemoval> {
    const before = await this.latestChange(accountId);
    const tombstone = { _id: `${accountId}#${generation}`, account: accountId, generation };
    if (!(await insertUnique(this.#collection, tombstone))) return 'superseded';
    if (!(await this.#settle(accountId, generation))) return 'superseded';
    return before?.present && before.generation < generation ? 'removed' : 'absent';
  }

  /** After inserting the change of `generation`: whether it is the latest (else it is deleted). */
  async #settle(accountId: string, generation: AvatarGeneration): Promise<boolean> {
    const later = await this.#collection.findOne(
      { account: accountId, generation: { $gt: generation } },
      { projection: { _id: 1 } },
    );
    if (later) {
      await this.#collection.deleteOne({ _id: `${accountId}#${generation}` });
      return false;
    }
    await this.#collection.deleteMany({
      $or: [{ _id: accountId }, { account: accountId, generation: { $lt: generation } }],
    });
    return true;
  }

  #latest(accountId: string, projection?: Record<string, 1>): Promise<AvatarDoc | null> {
    return this.#collection
      .find({ $or: [{ account: accountId }, { _id: accountId }] }, projection ? { projection } : {})
      .sort({ generation: -1 })
      .limit(1)
      .next();
  }
}
