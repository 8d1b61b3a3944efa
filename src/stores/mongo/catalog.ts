import type { Collection } from 'mongodb';
import type { AccountKind, ClientStore, OAuthClient, Scope, ScopeStore } from '../types.ts';
import { isDuplicateKey } from './accounts.ts';

/** A client under its UUID; the unique index on `name` is what `createIfAbsent` relies on. */
export interface ClientDoc {
  _id: string;
  name: string;
  secretDigest: string;
  accountKind: AccountKind;
  createdAt: Date;
}

/** A scope has no id of its own, so its name is the `_id` and uniqueness comes for free. */
export interface ScopeDoc {
  _id: string;
  description: string;
}

export class MongoClientStore implements ClientStore {
  readonly #collection: Collection<ClientDoc>;

  constructor(collection: Collection<ClientDoc>) {
    this.#collection = collection;
  }

  async findByName(name: string): Promise<OAuthClient | null> {
    const doc = await this.#collection.findOne({ name });
    if (!doc) return null;
    return {
      id: doc._id,
      name: doc.name,
      secretDigest: doc.secretDigest,
      accountKind: doc.accountKind,
      createdAt: doc.createdAt,
    };
  }

  async createIfAbsent(client: OAuthClient): Promise<boolean> {
    // Insert-and-catch so concurrent seeders create it once and never overwrite it.
    try {
      await this.#collection.insertOne({
        _id: client.id,
        name: client.name,
        secretDigest: client.secretDigest,
        accountKind: client.accountKind,
        createdAt: client.createdAt,
      });
      return true;
    } catch (error) {
      if (isDuplicateKey(error)) return false;
      throw error;
    }
  }

  async updateSecret(name: string, secretDigest: string): Promise<boolean> {
    const result = await this.#collection.updateOne({ name }, { $set: { secretDigest } });
    return result.matchedCount === 1;
  }
}

export class MongoScopeStore implements ScopeStore {
  readonly #collection: Collection<ScopeDoc>;

  constructor(collection: Collection<ScopeDoc>) {
    this.#collection = collection;
  }

  async findByName(name: string): Promise<Scope | null> {
    const doc = await this.#collection.findOne({ _id: name });
    return doc ? { name: doc._id, description: doc.description } : null;
  }

  async createIfAbsent(scope: Scope): Promise<boolean> {
    try {
      await this.#collection.insertOne({ _id: scope.name, description: scope.description });
      return true;
    } catch (error) {
      if (isDuplicateKey(error)) return false;
      throw error;
    }
  }
}
