import type { Db } from 'mongodb';
import type { CatalogStores } from '../stores.ts';
import { type AccountDoc, ensureListing, foldIdentityKeys, MongoAccountStore } from './accounts.ts';
import { AVATARS_COLLECTION, type AvatarDoc, MongoAvatarStore } from './avatars.ts';
import { DEPLOYMENT_COLLECTION, type DeploymentFactDoc, MongoCachingNodeRegistry } from './caching-nodes.ts';
import { type ClientDoc, MongoClientStore, MongoScopeStore, type ScopeDoc } from './catalog.ts';
import { LEASES_COLLECTION, type LeaseDoc, MongoLeaseStore } from './leases.ts';
import {
  MongoOneTimeTokenStore,
  ONE_TIME_TOKENS_COLLECTION,
  type OneTimeTokenDoc,
} from './one-time-tokens.ts';
import { MongoSeedLedger, SEED_LEDGER_COLLECTION, type SeedMarkDoc } from './seed-ledger.ts';

export type MongoCatalogStores = CatalogStores;

/**
 * The unique indexes every write path relies on, and the migrations of stored data they
 * need. `createIndex` is idempotent, so every process runs this at open and concurrent
 * starts agree. Only plain indexes: no collation and no partial filter,
 * which FerretDB 1.x (SQLite) does not support.
 */
export async function ensureIndexes(db: Db, log: (message: string) => void): Promise<void> {
  // One after another: on a fresh database each call also creates the collection, and
  // FerretDB's SQLite backend is happier creating them serially.
  const admins = db.collection<AccountDoc>('admins');
  await admins.createIndex({ identityKey: 1 }, { unique: true, name: 'identityKey_unique' });
  // After the index exists, so that it refuses a second admin the folded key (never before:
  // two folded keys alike would make the index creation fail the start).
  await foldIdentityKeys(admins, log);
  await db.collection('users').createIndex({ identityKey: 1 }, { unique: true, name: 'identityKey_unique' });
  // The listings' indexes, and the folded text they search in documents stored before it.
  await ensureListing(admins);
  await ensureListing(db.collection<AccountDoc>('users'));
  await db.collection('clients').createIndex({ name: 1 }, { unique: true, name: 'name_unique' });
  await MongoOneTimeTokenStore.ensureIndexes(db.collection<OneTimeTokenDoc>(ONE_TIME_TOKENS_COLLECTION));
  await MongoLeaseStore.ensureIndexes(db.collection<LeaseDoc>(LEASES_COLLECTION));
  await MongoAvatarStore.ensureIndexes(db.collection<AvatarDoc>(AVATARS_COLLECTION));
}

/** Store objects over an open database; call `ensureIndexes` first. */
export function mongoCatalogStores(db: Db): MongoCatalogStores {
  return {
    admins: new MongoAccountStore(db.collection<AccountDoc>('admins')),
    users: new MongoAccountStore(db.collection<AccountDoc>('users')),
    clients: new MongoClientStore(db.collection<ClientDoc>('clients')),
    scopes: new MongoScopeStore(db.collection<ScopeDoc>('scopes')),
    oneTimeTokens: new MongoOneTimeTokenStore(db.collection<OneTimeTokenDoc>(ONE_TIME_TOKENS_COLLECTION)),
    avatars: new MongoAvatarStore(db.collection<AvatarDoc>(AVATARS_COLLECTION)),
    seedLedger: new MongoSeedLedger(db.collection<SeedMarkDoc>(SEED_LEDGER_COLLECTION)),
    cachingNodes: new MongoCachingNodeRegistry(db.collection<DeploymentFactDoc>(DEPLOYMENT_COLLECTION)),
    leases: new MongoLeaseStore(db.collection<LeaseDoc>(LEASES_COLLECTION)),
  };
}

export {
  MongoAccountStore,
  MongoCachingNodeRegistry,
  MongoClientStore,
  MongoLeaseStore,
  MongoScopeStore,
  MongoSeedLedger,
};
