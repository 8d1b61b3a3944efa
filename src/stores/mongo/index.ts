import type { Db } from 'mongodb';
import type { Stores } from '../types.ts';
import { type AccountDoc, isDuplicateKey, MongoAccountStore } from './accounts.ts';
import { type ClientDoc, MongoClientStore, MongoScopeStore, type ScopeDoc } from './catalog.ts';
import {
  MongoOneTimeTokenStore,
  ONE_TIME_TOKENS_COLLECTION,
  type OneTimeTokenDoc,
} from './one-time-tokens.ts';

export type MongoCatalogStores = Pick<Stores, 'admins' | 'users' | 'clients' | 'scopes' | 'oneTimeTokens'>;

/**
 * The unique indexes every write path relies on. `createIndex` is idempotent, so every process
 * runs this at open and concurrent starts agree. Only plain single-field unique indexes: no
 * collation and no partial filter, which FerretDB 1.x (SQLite) does not support.
 */
export async function ensureIndexes(db: Db): Promise<void> {
  // One after another: on a fresh database each call also creates the collection, and
  // FerretDB's SQLite backend is happier creating them serially.
  await db.collection('admins').createIndex({ identityKey: 1 }, { unique: true, name: 'identityKey_unique' });
  await db.collection('users').createIndex({ identityKey: 1 }, { unique: true, name: 'identityKey_unique' });
  await db.collection('clients').createIndex({ name: 1 }, { unique: true, name: 'name_unique' });
  await MongoOneTimeTokenStore.ensureIndexes(db.collection<OneTimeTokenDoc>(ONE_TIME_TOKENS_COLLECTION));
}

/** Store objects over an open database; call `ensureIndexes` first. */
export function mongoCatalogStores(db: Db): MongoCatalogStores {
  return {
    // Admin identities are user names compared exactly; user identities are e-mail addresses.
    admins: new MongoAccountStore(db.collection<AccountDoc>('admins'), { foldIdentityCase: false }),
    users: new MongoAccountStore(db.collection<AccountDoc>('users'), { foldIdentityCase: true }),
    clients: new MongoClientStore(db.collection<ClientDoc>('clients')),
    scopes: new MongoScopeStore(db.collection<ScopeDoc>('scopes')),
    oneTimeTokens: new MongoOneTimeTokenStore(db.collection<OneTimeTokenDoc>(ONE_TIME_TOKENS_COLLECTION)),
  };
}

export { isDuplicateKey, MongoAccountStore, MongoClientStore, MongoScopeStore };
