import type { Collection } from 'mongodb';
import type { AccountKind, ClientStore, OAuthClient, Scope, ScopeStore } from '../types.ts';
import { insertUnique } from './unique.ts';

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
    return insertUnique(this.#collection, {
      _id: client.id,
      name: client.name,
      secretDigest: client.secretDigest,
      accountKind: client.accountKind,
      createdAt: client.createdAt,
    });
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
    return insertUnique(this.#collection, { _id: scope.name, description: scope.description });
  }
}
