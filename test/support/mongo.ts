/**
 * The MongoDB side of the store contract suites: a database of their own on MONGODB_URL
 * (MongoDB or FerretDB), with the indexes the service ensures at start and the stores over
 * it, dropped afterwards, so concurrent runs never see each other's data.
 */
import { type Db, MongoClient } from 'mongodb';
import { ensureIndexes, type MongoCatalogStores, mongoCatalogStores } from '../../src/stores/mongo/index.ts';
import { uniqueName, withDatabase } from './backends.ts';

/** Why the MongoDB half of a contract suite does not run, or false when it does. */
export const mongoSkipped: string | false = process.env.MONGODB_URL
  ? false
  : 'MONGODB_URL not set: the MongoDB contract is not run';

export interface MongoTestDatabase {
  /** MONGODB_URL pointing at this database. */
  url: string;
  db: Db;
  stores: MongoCatalogStores;
  /** The same database through another connection, as a second process of the service sees it. */
  connectAgain(): Promise<MongoCatalogStores & { close(): Promise<void> }>;
  /** Removes every document of the named collections, keeping their indexes. */
  empty(...collections: string[]): Promise<void>;
  /** Drops the database and closes the connection. */
  drop(): Promise<void>;
}

/**
 * Opens a new database named after `prefix`. `indexes: false` leaves it bare, for a test that
 * stores documents as an earlier version did before it runs `ensureIndexes` itself.
 */
export async function openMongoTestDatabase(
  prefix: string,
  options: { indexes?: boolean } = {},
): Promise<MongoTestDatabase> {
  const base = process.env.MONGODB_URL;
  if (!base) throw new Error(mongoSkipped || 'MONGODB_URL not set');
  const url = withDatabase(base, uniqueName(prefix));
  const connect = async () => {
    const client = new MongoClient(url, { serverSelectionTimeoutMS: 5000 });
    await client.connect();
    return client;
  };
  const client = await connect();
  if (options.indexes !== false) await ensureIndexes(client.db(), () => undefined);
  return {
    url,
    db: client.db(),
    stores: mongoCatalogStores(client.db()),
    async connectAgain() {
      const other = await connect();
      return { ...mongoCatalogStores(other.db()), close: () => other.close() };
    },
    async empty(...collections) {
      for (const name of collections) await client.db().collection(name).deleteMany({});
    },
    async drop() {
      await client.db().dropDatabase();
      await client.close();
    },
  };
}

/** Runs `use` on a new database and drops it afterwards, whatever `use` does. */
export async function withMongoTestDatabase<T>(
  prefix: string,
  use: (database: MongoTestDatabase) => Promise<T>,
  options: { indexes?: boolean } = {},
): Promise<T> {
  const database = await openMongoTestDatabase(prefix, options);
  try {
    return await use(database);
  } finally {
    await database.drop();
  }
}

/** One kind of store over several connections to one database, as several processes share it. */
export interface SharedStore<T> {
  /** The store through each connection, the first one's first. */
  connections: T[];
  /** Closes the connections and drops the database. */
  close(): Promise<void>;
}

/** A new database named after `prefix`, its `pick`ed store through `count` connections. */
export async function sharedMongoStore<T>(
  prefix: string,
  pick: (stores: MongoCatalogStores) => T,
  count = 3,
): Promise<SharedStore<T>> {
  const database = await openMongoTestDatabase(prefix);
  const others = await Promise.all(Array.from({ length: count - 1 }, () => database.connectAgain()));
  return {
    connections: [pick(database.stores), ...others.map(pick)],
    async close() {
      await Promise.all(others.map((other) => other.close()));
      await database.drop();
    },
  };
}
