import { Binary, type Collection } from 'mongodb';
import type { Avatar, AvatarMediaType, AvatarStore } from '../../accounts/avatar-store.ts';
import { isDuplicateKey } from './unique.ts';

/**
 * One document per avatar, the account id as `_id`, the image as BSON binary data. A single
 * document holds up to 16 MB, which AVATAR_SIZE_LIMIT stays below, so GridFS (chunks and a
 * files document, written and removed as several operations) would only add writes that a
 * failure could leave half done: a document is replaced or deleted whole. Reading it needs
 * no other query, and it is kept apart from the account so that reading an account never
 * carries an image.
 */
export interface AvatarDoc {
  _id: string;
  mediaType: AvatarMediaType;
  bytes: Binary;
}

export const AVATARS_COLLECTION = 'avatars';

export class MongoAvatarStore implements AvatarStore {
  readonly #collection: Collection<AvatarDoc>;

  constructor(collection: Collection<AvatarDoc>) {
    this.#collection = collection;
  }

  async find(accountId: string): Promise<Avatar | null> {
    const doc = await this.#collection.findOne({ _id: accountId });
    return doc ? { mediaType: doc.mediaType, bytes: doc.bytes.value() } : null;
  }

  async has(accountId: string): Promise<boolean> {
    return (await this.#collection.findOne({ _id: accountId }, { projection: { _id: 1 } })) !== null;
  }

  async put(accountId: string, avatar: Avatar): Promise<void> {
    const doc = { mediaType: avatar.mediaType, bytes: new Binary(avatar.bytes) };
    const replace = () => this.#collection.replaceOne({ _id: accountId }, doc, { upsert: true });
    try {
      await replace();
    } catch (error) {
      // Two first uploads at once: both upserts may insert, and the loser's insert breaks the
      // `_id` index. The document exists now, so once more replaces it.
      if (!isDuplicateKey(error)) throw error;
      await replace();
    }
  }

  async delete(accountId: string): Promise<boolean> {
    return (await this.#collection.deleteOne({ _id: accountId })).deletedCount === 1;
  }
}
