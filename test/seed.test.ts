import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { createPasswordHasher } from '../src/accounts/password-hasher.ts';
import { seed } from '../src/seed.ts';
import type { Stores } from '../src/stores/stores.ts';
import { uniqueName, withDatabase } from './support/backends.ts';
import { openTestStores } from './support/stores.ts';

const mongoUrl = process.env.MONGODB_URL;

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

  test('several processes seeding one MongoDB at once create each record exactly once', {
    skip: mongoUrl ? false : 'MONGODB_URL not set: concurrent seeding against MongoDB not run',
  }, async () => {
    const url = withDatabase(mongoUrl ?? '', uniqueName('seed'));
    // Separate connections stand for separate workers or containers.
    const connections: Stores[] = await Promise.all(
      Array.from({ length: 4 }, () => openTestStores({ mongodbUrl: url })),
    );
    try {
      const created = await Promise.all(connections.map((stores) => seed(stores, hasher)));
      const all = created.flat().sort();
      assert.deepEqual(all, [
        'admin admin',
        'client admin',
        'client frontend',
        'scope api',
        'user user@example.com',
      ]);
      const [stores] = connections;
      assert.ok(stores);
      assert.equal(await stores.admins.count({}), 1);
      assert.equal(await stores.users.count({}), 1);
    } finally {
      await Promise.all(connections.map((stores) => stores.close()));
    }
  });
});
