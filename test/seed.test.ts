import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, describe, test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { newAccountRecord } from '../src/accounts/account-record.ts';
import type { Account } from '../src/accounts/model.ts';
import { createPasswordHasher, type PasswordHasher } from '../src/accounts/password-hasher.ts';
import { LEGACY_CLIENT_GRANTS } from '../src/oauth/model.ts';
import { removedSeedRecords, restoreSeedRecords, seed, unseededSeedRecords } from '../src/seed.ts';
import type { Stores } from '../src/stores/stores.ts';
import { uniqueName, withDatabase } from './support/backends.ts';
import { openTestStores } from './support/stores.ts';

const mongoUrl = process.env.MONGODB_URL;

/** What the seed of earlier versions left: the same records, and no ledger of them. */
async function seedAsEarlierVersionsDid(stores: Stores): Promise<void> {
  const now = new Date();
  await stores.scopes.createIfAbsent({ name: 'api', description: 'The API' });
  for (const [name, accountKind] of [
    ['admin', 'admin'],
    ['frontend', 'user'],
  ] as const) {
    await stores.clients.createIfAbsent({
      id: randomUUID(),
      name,
      type: 'confidential',
      secretDigest: 'a'.repeat(64),
      previousSecretDigest: null,
      previousSecretExpiresAt: null,
      accountKind,
      redirectUris: [],
      grants: [...LEGACY_CLIENT_GRANTS],
      createdAt: now,
      updatedAt: now,
    });
  }
  const account = (identity: string, roles: Account['roles']) =>
    newAccountRecord({ identity, passwordHash: 'x', status: 'active', roles }, now);
  await stores.admins.createIfAbsent(account('admin', ['superuser']));
  await stores.users.createIfAbsent(account('user@example.com', []));
}

describe('seeding', () => {
  const hasher = createPasswordHasher({ cost: 4, threads: 1 });
  after(() => hasher.close());

  test('creates each seed record once and never overwrites a changed one (memory)', async () => {
    const stores = await openTestStores({});
    try {
      assert.equal((await seed(stores, hasher)).length, 5);
      const admin = await stores.admins.findByIdentity('admin');
      assert.ok(admin);
      await stores.admins.update(admin.id, { firstName: 'Changed', passwordHash: 'operator-set' });
      assert.deepEqual(await seed(stores, hasher), []);
      const after = await stores.admins.findByIdentity('admin');
      assert.equal(after?.firstName, 'Changed');
      assert.equal(after?.passwordHash, 'operator-set');
      // Renamed (or deleted, which anonymises the identity): the seed account stays gone.
      await stores.admins.update(admin.id, { identity: 'deleted-admin', status: 'deleted' });
      const user = await stores.users.findByIdentity('user@example.com');
      assert.ok(user);
      await stores.users.update(user.id, { identity: 'renamed@example.com' });
      assert.deepEqual(await seed(stores, hasher), []);
      assert.equal(await stores.admins.findByIdentity('admin'), null);
      assert.equal(await stores.users.findByIdentity('user@example.com'), null);
    } finally {
      await stores.close();
    }
  });

  test('an administrator created before the first start: no seed admin, and it is not reported as removed', async () => {
    const stores = await openTestStores({});
    try {
      await stores.admins.create(
        newAccountRecord(
          { identity: 'ops', passwordHash: 'x', status: 'active', roles: ['superuser'] },
          new Date(),
        ),
      );
      assert.deepEqual((await seed(stores, hasher)).sort(), [
        'client admin',
        'client frontend',
        'scope api',
        'user user@example.com',
      ]);
      assert.equal(await stores.admins.findByIdentity('admin'), null);
      // Never created, so never removed: the operator's own administrator took its place.
      assert.deepEqual(await removedSeedRecords(stores), []);
      assert.deepEqual(await unseededSeedRecords(stores), ['admin:admin']);
      // And still not seeded at the next start, though the ledger does not mark it seeded.
      assert.deepEqual(await seed(stores, hasher), []);
      assert.equal(await stores.admins.findByIdentity('admin'), null);
      assert.deepEqual(await removedSeedRecords(stores), []);
      // Once the operator removes a seed record that was created, that one is named as removed.
      const user = await stores.users.findByIdentity('user@example.com');
      await stores.users.update(user?.id ?? '', { identity: 'renamed@example.com' });
      assert.deepEqual(await removedSeedRecords(stores), ['user:user@example.com']);
      assert.deepEqual(await unseededSeedRecords(stores), ['admin:admin']);
      // Asked for, it is created after all, and counts as seeded from then on.
      assert.deepEqual(await restoreSeedRecords(stores, hasher, ['admin:admin']), ['admin admin']);
      assert.deepEqual(await unseededSeedRecords(stores), []);
    } finally {
      await stores.close();
    }
  });

  test('a process seeding while another does returns only once every seed record is there', async () => {
    const stores = await openTestStores({});
    let hashing = () => {};
    const firstHashes = new Promise<void>((resolve) => {
      hashing = resolve;
    });
    // The first process is slow to hash the seed admin's password; the second starts meanwhile.
    const slow: PasswordHasher = {
      ...hasher,
      async hash(password) {
        hashing();
        await delay(300);
        return hasher.hash(password);
      },
    };
    try {
      const first = seed(stores, slow);
      await firstHashes;
      await seed(stores, hasher);
      // The second process would serve from here on: sign-ins with the seed accounts work.
      assert.ok(await stores.admins.findByIdentity('admin'), 'the seed admin is there');
      assert.ok(await stores.users.findByIdentity('user@example.com'), 'the seed user is there');
      await first;
      assert.equal(await stores.admins.count({}), 1);
      assert.equal(await stores.users.count({}), 1);
    } finally {
      await stores.close();
    }
  });

  test('a seed record an operator removed is not created again (memory)', async () => {
    const stores = await openTestStores({});
    try {
      await seed(stores, hasher);
      assert.equal(await stores.clients.delete('admin'), true);
      assert.equal(await stores.clients.delete('frontend'), true);
      assert.deepEqual(await seed(stores, hasher), []);
      assert.equal(await stores.clients.findByName('admin'), null);
      assert.equal(await stores.clients.findByName('frontend'), null);
    } finally {
      await stores.close();
    }
  });

  /**
   * Runs `use` on `count` connections to a new database (standing for separate workers,
   * containers, or one process restarted), then closes them.
   */
  async function onConnections(
    url: string,
    count: number,
    use: (first: Stores, all: Stores[]) => Promise<void>,
  ): Promise<void> {
    const connections = await Promise.all(
      Array.from({ length: count }, () => openTestStores({ mongodbUrl: url })),
    );
    try {
      await use(connections[0] as Stores, connections);
    } finally {
      await Promise.all(connections.map((stores) => stores.close()));
    }
  }
  const seedAll = async (connections: Stores[]) =>
    (await Promise.all(connections.map((stores) => seed(stores, hasher)))).flat().sort();
  const newDatabase = () => withDatabase(mongoUrl ?? '', uniqueName('seed'));

  describe('against MongoDB', {
    skip: mongoUrl ? false : 'MONGODB_URL not set: seeding MongoDB not run',
  }, () => {
    test('a removed seed client stays removed across restarts and concurrent seeders', async () => {
      const url = newDatabase();
      await onConnections(url, 1, async (stores) => {
        assert.equal((await seed(stores, hasher)).length, 5);
        assert.equal(await stores.clients.delete('admin'), true);
        const admin = await stores.admins.findByIdentity('admin');
        await stores.admins.update(admin?.id ?? '', { identity: 'deleted-admin', status: 'deleted' });
      });
      await onConnections(url, 4, async (stores, all) => {
        assert.deepEqual(await seedAll(all), []);
        assert.equal(await stores.clients.findByName('admin'), null);
        assert.equal(await stores.admins.findByIdentity('admin'), null);
        assert.ok(await stores.clients.findByName('frontend'));
      });
    });

    test('upgrading a store an earlier version seeded: what an operator removed before stays removed', async () => {
      const url = newDatabase();
      await onConnections(url, 1, async (stores) => {
        await seedAsEarlierVersionsDid(stores);
        await stores.clients.delete('admin');
        await stores.clients.delete('frontend');
      });
      await onConnections(url, 4, async (stores, all) => {
        assert.deepEqual(await seedAll(all), []);
        assert.equal(await stores.clients.findByName('admin'), null);
        assert.equal(await stores.clients.findByName('frontend'), null);
        assert.deepEqual(await seed(stores, hasher), [], 'and at every start after');
      });
    });
  });

  test('several processes seeding one MongoDB at once create each record exactly once', {
    skip: mongoUrl ? false : 'MONGODB_URL not set: concurrent seeding against MongoDB not run',
  }, async () => {
    await onConnections(newDatabase(), 4, async (stores, all) => {
      assert.deepEqual(await seedAll(all), [
        'admin admin',
        'client admin',
        'client frontend',
        'scope api',
        'user user@example.com',
      ]);
      assert.equal(await stores.admins.count({}), 1);
      assert.equal(await stores.users.count({}), 1);
    });
  });
});
