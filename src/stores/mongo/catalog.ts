import type { Collection } from 'mongodb';
import type { AccountKind } from '../../accounts/model.ts';
import {
  CHANGEABLE_CLIENT_FIELDS,
  type ClientChanges,
  type ClientStore,
  type ClientType,
  type GrantType,
  LEGACY_CLIENT_GRANTS,
  type OAuthClient,
  type Scope,
  type ScopeStore,
} from '../../oauth/model.ts';
import { insertUnique } from './unique.ts';

/**
 * A client under its UUID; the unique index on `name` is what `createIfAbsent` relies on.
 * `type`, `redirectUris`, `grants`, `updatedAt` and the previous secret are absent from
 * clients stored before they existed, which read as what such a client was: confidential,
 * with every grant of that time, no redirect URI and no previous secret.
 */
export interface ClientDoc {
  _id: string;
  name: string;
  type?: ClientType;
  secretDigest: string | null;
  previousSecretDigest?: string | null;
  previousSecretExpiresAt?: Date | null;
  accountKind: AccountKind;
  redirectUris?: string[];
  grants?: GrantType[];
  createdAt: Date;
  updatedAt?: Date;
}

/** A scope has no id of its own, so its name is the `_id` and uniqueness comes for free. */
export interface ScopeDoc {
  _id: string;
  description: string;
}

function toClient(doc: ClientDoc): OAuthClient {
  return {
    id: doc._id,
    name: doc.name,
    type: doc.type ?? 'confidential',
    secretDigest: doc.secretDigest,
    previousSecretDigest: doc.previousSecretDigest ?? null,
    previousSecretExpiresAt: doc.previousSecretExpiresAt ?? null,
    accountKind: doc.accountKind,
    redirectUris: doc.redirectUris ?? [],
    grants: doc.grants ?? [...LEGACY_CLIENT_GRANTS],
    createdAt: doc.createdAt,
    updatedAt: doc.updatedAt ?? doc.createdAt,
  };
}

export class MongoClientStore implements ClientStore {
  readonly #collection: Collection<ClientDoc>;

  constructor(collection: Collection<ClientDoc>) {
    this.#collection = collection;
  }

  async findByName(name: string): Promise<OAuthClient | null> {
    const doc = await this.#collection.findOne({ name });
    return doc ? toClient(doc) : null;
  }

  async list(): Promise<OAuthClient[]> {
    // Binary order, as the memory store compares: FerretDB has no collations.
    const docs = await this.#collection.find({}).sort({ name: 1 }).toArray();
    return docs.map(toClient);
  }

  async createIfAbsent(client: OAuthClient): Promise<boolean> {
    const { id, ...fields } = client;
    return insertUnique(this.#collection, { _id: id, ...fields });
  }

  async update(name: string, changes: ClientChanges): Promise<OAuthClient | null> {
    // Only known fields are copied, so a stray `_id` or `name` cannot be written.
    const set: Partial<ClientDoc> = {};
    for (const key of CHANGEABLE_CLIENT_FIELDS)
      if (changes[key] !== undefined) Object.assign(set, { [key]: changes[key] });
    if (Object.keys(set).length === 0) return this.findByName(name);
    const doc = await this.#collection.findOneAndUpdate({ name }, { $set: set }, { returnDocument: 'after' });
    return doc ? toClient(doc) : null;
  }

  async delete(name: string): Promise<boolean> {
    const result = await this.#collection.deleteOne({ name });
    return result.deletedCount === 1;
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
