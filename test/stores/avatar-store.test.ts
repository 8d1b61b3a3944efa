import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { test } from 'node:test';
import {
  type Avatar,
  type AvatarStore,
  FINAL_AVATAR_GENERATION,
  nextAvatarGeneration,
} from '../../src/accounts/avatar-store.ts';
import { MemoryAvatarStore } from '../../src/stores/memory/avatars.ts';
import { AVATARS_COLLECTION, type AvatarDoc, MongoAvatarStore } from '../../src/stores/mongo/avatars.ts';
import { mongoSkipped, withMongoTestDatabase } from '../support/mongo.ts';
import { describeStoreContract, onConnections } from '../support/store-contract.ts';
import { openTestStores } from '../support/stores.ts';

/** A new generation, later than every one drawn before. */
const next = () => nextAvatarGeneration(new Date());

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
    /** Whether the latest change left an image, without reading it. */
    const has = async (id: string) => (await h.store.latestChange(id))?.present ?? false;
    /** What the store holds for the account, its bytes as a Buffer to compare. */
    const read = async (id: string) => {
      const found = await h.store.find(id);
      return found && { mediaType: found.mediaType, bytes: Buffer.from(found.bytes) };
    };

    test('an avatar is found under its account until it is replaced or deleted', async () => {
      const [id, other] = [randomUUID(), randomUUID()];
      assert.equal(await read(id), null);
      assert.equal(await has(id), false);
      await h.store.put(id, avatar(Buffer.from('first')), next());
      assert.equal(await has(id), true);
      await h.store.put(other, avatar(Buffer.from('other'), 'image/webp'), next());
      assert.deepEqual(await read(id), avatar(Buffer.from('first')));
      await h.store.put(id, avatar(Buffer.from('second'), 'image/jpeg'), next());
      assert.deepEqual(await read(id), avatar(Buffer.from('second'), 'image/jpeg'));
      assert.equal(await h.store.delete(id, next()), 'removed');
      assert.equal(await read(id), null);
      assert.equal(await has(id), false);
      assert.equal(await h.store.delete(id, next()), 'absent', 'nothing left to delete');
      assert.deepEqual(await read(other), avatar(Buffer.from('other'), 'image/webp'));
    });

    test('every byte comes back as it went in, a megabyte of them too', async () => {
      const id = randomUUID();
      const bytes = Buffer.concat([
        Buffer.from(Array.from({ length: 256 }, (_, i) => i)),
        randomBytes(1 << 20),
      ]);
      await h.store.put(id, avatar(bytes), next());
      const found = await h.store.find(id);
      assert.ok(found);
      assert.equal(Buffer.compare(Buffer.from(found.bytes), bytes), 0);
    });

    test('what a caller holds is its own: changing it changes nothing stored', async () => {
      const id = randomUUID();
      const given = Buffer.from('image');
      await h.store.put(id, avatar(given), next());
      given.fill(0);
      const held = await h.store.find(id);
      assert.ok(held);
      held.bytes.fill(0);
      assert.deepEqual(await read(id), avatar(Buffer.from('image')));
    });

    test('a change older than the one stored is refused, a removal leaving its generation behind', async () => {
      const id = randomUUID();
      const [g1, g2, g3, g4] = [next(), next(), next(), next()];
      assert.equal(await h.store.latestChange(id), null);
      assert.equal(await h.store.put(id, avatar(Buffer.from('second')), g2), true);
      assert.deepEqual(await h.store.latestChange(id), { generation: g2, present: true });
      assert.equal(await h.store.put(id, avatar(Buffer.from('first')), g1), false, 'older, arriving late');
      assert.equal(await h.store.put(id, avatar(Buffer.from('again')), g2), false, 'not later: equal');
      assert.equal(await h.store.delete(id, g1), 'superseded');
      assert.deepEqual(await read(id), avatar(Buffer.from('second')));
      assert.equal(await h.store.delete(id, g3), 'removed');
      assert.deepEqual(await h.store.latestChange(id), { generation: g3, present: false });
      // The removal stays: an upload older than it brings no image back.
      assert.equal(await h.store.put(id, avatar(Buffer.from('late')), g2), false);
      assert.equal(await has(id), false);
      assert.equal(await read(id), null);
      assert.equal(await h.store.put(id, avatar(Buffer.from('fourth')), g4), true);
      assert.deepEqual(await read(id), avatar(Buffer.from('fourth')));
      // A deletion's generation is later than any drawn, however far the clock runs ahead.
      assert.equal(await h.store.delete(id, FINAL_AVATAR_GENERATION), 'removed');
      const ahead = nextAvatarGeneration(new Date(Date.now() + 100 * 365 * 86_400_000));
      assert.equal(await h.store.put(id, avatar(Buffer.from('after')), ahead), false);
      assert.equal(await h.store.delete(id, FINAL_AVATAR_GENERATION), 'superseded', 'already');
      assert.equal(await read(id), null);
    });

    test('changes at once, from several processes, leave the latest generation stored', async () => {
      const id = randomUUID();
      const generations = Array.from({ length: 12 }, () => next());
      const latest = generations.length - 1;
      await onConnections(h, 2, async (connections) => {
        // Latest first, so that every other change arrives late; removals among them.
        const changes = generations.map((generation, n) => {
          const { store } = connections[n % connections.length] ?? h;
          return n % 3 === 1 && n !== latest
            ? store.delete(id, generation)
            : store.put(id, avatar(Buffer.from(`change ${n}`)), generation);
        });
        await Promise.all(changes.reverse());
      });
      assert.deepEqual(await read(id), avatar(Buffer.from(`change ${latest}`)));
    });

    test('first uploads at once, from several processes: each is taken, and one of them stays', async () => {
      const id = randomUUID();
      await onConnections(h, 3, async (connections) => {
        const puts = connections.flatMap(({ store }, n) =>
          [0, 1].map((k) => store.put(id, avatar(Buffer.from(`upload ${n}-${k}`)), next())),
        );
        await Promise.all(puts);
      });
      const found = await h.store.find(id);
      assert.match(Buffer.from(found?.bytes ?? []).toString(), /^upload \d-\d$/);
    });
  },
);

test('an avatar stored before generations existed is served, and replaced or removed by any change', {
  skip: mongoSkipped,
}, async () => {
  await withMongoTestDatabase('avatars_legacy', async ({ db, stores }) => {
    const legacy = db.collection<{ _id: string; mediaType: string; bytes: Buffer }>(AVATARS_COLLECTION);
    const [first, second] = [randomUUID(), randomUUID()];
    for (const id of [first, second])
      await legacy.insertOne({ _id: id, mediaType: 'image/png', bytes: Buffer.from('old') });
    assert.deepEqual(await stores.avatars.latestChange(first), { generation: '', present: true });
    assert.equal(Buffer.from((await stores.avatars.find(first))?.bytes ?? []).toString(), 'old');
    assert.equal(await stores.avatars.put(first, avatar(Buffer.from('new')), next()), true);
    assert.equal(Buffer.from((await stores.avatars.find(first))?.bytes ?? []).toString(), 'new');
    assert.equal(await stores.avatars.delete(second, next()), 'removed');
    assert.equal(await stores.avatars.find(second), null);
    // Each account keeps the one document of its latest change.
    assert.equal(await db.collection(AVATARS_COLLECTION).countDocuments({}), 2);
  });
});

test('openStores keeps avatars in MongoDB, where every node reads them', { skip: mongoSkipped }, async () => {
  await withMongoTestDatabase('avatars_open', async ({ url }) => {
    const [writer, reader] = [
      await openTestStores({ mongodbUrl: url }),
      await openTestStores({ mongodbUrl: url }),
    ];
    try {
      const id = randomUUID();
      await writer.avatars.put(id, avatar(Buffer.from('seen everywhere'), 'image/jpeg'), next());
      assert.deepEqual(await reader.avatars.find(id), avatar(Buffer.from('seen everywhere'), 'image/jpeg'));
    } finally {
      await Promise.all([writer.close(), reader.close()]);
    }
  });
});
