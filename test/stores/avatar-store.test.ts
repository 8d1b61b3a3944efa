import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { test } from 'node:test';
import type { Avatar, AvatarStore } from '../../src/accounts/avatar-store.ts';
import { MemoryAvatarStore } from '../../src/stores/memory/avatars.ts';
import { AVATARS_COLLECTION, type AvatarDoc, MongoAvatarStore } from '../../src/stores/mongo/avatars.ts';
import { mongoSkipped, withMongoTestDatabase } from '../support/mongo.ts';
import { describeStoreContract, onConnections } from '../support/store-contract.ts';
import { openTestStores } from '../support/stores.ts';

const avatar = (bytes: Uint8Array, mediaType: Avatar['mediaType'] = 'image/png'): Avatar => ({
  mediaType,
  bytes,
});

describeStoreContract<{ store: AvatarStore }>(
  'AvatarStore',
  {
    memory: () => ({ store: new MemoryAvatarStore() }),
    mongo: {
      database: 'avatars',
      collections: [AVATARS_COLLECTION],
      stores: (db) => ({ store: new MongoAvatarStore(db.collection<AvatarDoc>(AVATARS_COLLECTION)) }),
    },
  },
  (h) => {
    /** What the store holds for the account, its bytes as a Buffer to compare. */
    const read = async (id: string) => {
      const found = await h.store.find(id);
      return found && { mediaType: found.mediaType, bytes: Buffer.from(found.bytes) };
    };

    test('an avatar is found under its account until it is replaced or deleted', async () => {
      const [id, other] = [randomUUID(), randomUUID()];
      assert.equal(await read(id), null);
      assert.equal(await h.store.has(id), false);
      await h.store.put(id, avatar(Buffer.from('first')));
      assert.equal(await h.store.has(id), true);
      await h.store.put(other, avatar(Buffer.from('other'), 'image/webp'));
      assert.deepEqual(await read(id), avatar(Buffer.from('first')));
      await h.store.put(id, avatar(Buffer.from('second'), 'image/jpeg'));
      assert.deepEqual(await read(id), avatar(Buffer.from('second'), 'image/jpeg'));
      assert.equal(await h.store.delete(id), true);
      assert.equal(await read(id), null);
      assert.equal(await h.store.has(id), false);
      assert.equal(await h.store.delete(id), false, 'nothing left to delete');
      assert.deepEqual(await read(other), avatar(Buffer.from('other'), 'image/webp'));
    });

    test('every byte comes back as it went in, a megabyte of them too', async () => {
      const id = randomUUID();
      const bytes = Buffer.concat([
        Buffer.from(Array.from({ length: 256 }, (_, i) => i)),
        randomBytes(1 << 20),
      ]);
      await h.store.put(id, avatar(bytes));
      const found = await h.store.find(id);
      assert.ok(found);
      assert.equal(Buffer.compare(Buffer.from(found.bytes), bytes), 0);
    });

    test('what a caller holds is its own: changing it changes nothing stored', async () => {
      const id = randomUUID();
      const given = Buffer.from('image');
      await h.store.put(id, avatar(given));
      given.fill(0);
      const held = await h.store.find(id);
      assert.ok(held);
      held.bytes.fill(0);
      assert.deepEqual(await read(id), avatar(Buffer.from('image')));
    });

    test('first uploads at once, from several processes: each is taken, and one of them stays', async () => {
      const id = randomUUID();
      await onConnections(h, 3, async (connections) => {
        const puts = connections.flatMap(({ store }, n) =>
          [0, 1].map((k) => store.put(id, avatar(Buffer.from(`upload ${n}-${k}`)))),
        );
        await Promise.all(puts);
      });
      const found = await h.store.find(id);
      assert.match(Buffer.from(found?.bytes ?? []).toString(), /^upload \d-\d$/);
    });
  },
);

test('openStores keeps avatars in MongoDB, where every node reads them', { skip: mongoSkipped }, async () => {
  await withMongoTestDatabase('avatars_open', async ({ url }) => {
    const [writer, reader] = [
      await openTestStores({ mongodbUrl: url }),
      await openTestStores({ mongodbUrl: url }),
    ];
    try {
      const id = randomUUID();
      await writer.avatars.put(id, avatar(Buffer.from('seen everywhere'), 'image/jpeg'));
      assert.deepEqual(await reader.avatars.find(id), avatar(Buffer.from('seen everywhere'), 'image/jpeg'));
    } finally {
      await Promise.all([writer.close(), reader.close()]);
    }
  });
});
