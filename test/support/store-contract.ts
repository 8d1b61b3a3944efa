/**
 * The scaffold of the store contract suites: a contract written once runs against the memory
 * stores always, and against MongoDB (or FerretDB) when MONGODB_URL is set, in a database of
 * its own. Each backend gets its own describe; its stores are open before the first test,
 * start empty for every test, and are closed after the last.
 */
import { after, before, beforeEach, describe } from 'node:test';
import type { Db } from 'mongodb';
import { type MongoTestDatabase, mongoSkipped, openMongoTestDatabase } from './mongo.ts';

/** The stores a contract's tests use, and on MongoDB the same data through another connection. */
export type ContractHarness<S extends object> = S & {
  /** A second, independent connection to the same data, as another process of the service sees it. */
  otherConnection?: () => Promise<S & { close(): Promise<void> }>;
};

export interface ContractBackends<S extends object> {
  /** New, empty memory stores. */
  memory(): S;
  mongo: {
    /** The prefix of the test database's name. */
    database: string;
    /** What the tests write: emptied before each test, indexes kept. */
    collections: readonly string[];
    /** The stores over a database, on each connection. */
    stores(db: Db): S;
  };
}

/**
 * `contract` declares its tests with the harness they share; `separateConnections` says the
 * backend is shared by processes, so races across connections are tested too.
 */
export function describeStoreContract<S extends object>(
  title: string,
  backends: ContractBackends<S>,
  contract: (h: ContractHarness<S>, backend: { separateConnections: boolean }) => void,
): void {
  describe(`${title}: memory`, () => {
    const h = {} as ContractHarness<S>;
    beforeEach(() => {
      Object.assign(h, backends.memory());
    });
    contract(h, { separateConnections: false });
  });

  describe(`${title}: MongoDB`, { skip: mongoSkipped }, () => {
    const h = {} as ContractHarness<S>;
    let database: MongoTestDatabase | undefined;
    before(async () => {
      const opened = await openMongoTestDatabase(backends.mongo.database);
      database = opened;
      Object.assign(h, backends.mongo.stores(opened.db), {
        async otherConnection() {
          const other = await opened.connectAgain();
          return { ...backends.mongo.stores(other.db), close: other.close };
        },
      });
    });
    beforeEach(async () => {
      await database?.empty(...backends.mongo.collections);
    });
    after(async () => {
      await database?.drop();
    });
    contract(h, { separateConnections: true });
  });
}

/**
 * Runs `use` with the harness's stores followed, where the backend is shared by processes, by
 * `others` more connections to the same data (memory has its one), and closes those after.
 */
export async function onConnections<S extends object>(
  h: ContractHarness<S>,
  others: number,
  use: (connections: S[]) => Promise<void>,
): Promise<void> {
  const { otherConnection } = h;
  const opened = otherConnection
    ? await Promise.all(Array.from({ length: others }, () => otherConnection()))
    : [];
  try {
    await use([h, ...opened]);
  } finally {
    await Promise.all(opened.map((other) => other.close()));
  }
}
