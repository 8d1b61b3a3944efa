/**
 * The CachingNodeRegistry contract, run against memory always and against MongoDB (or
 * FerretDB) when MONGODB_URL is set: the latest announcement wins, whoever made it and in
 * whatever order they arrive, and processes announcing at once all succeed.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CachingNodeRegistry } from '../../src/deployment-model.ts';
import { MemoryCachingNodeRegistry } from '../../src/stores/memory/index.ts';
import { DEPLOYMENT_COLLECTION } from '../../src/stores/mongo/caching-nodes.ts';
import { mongoCatalogStores } from '../../src/stores/mongo/index.ts';
import { describeStoreContract, onConnections } from '../support/store-contract.ts';

describeStoreContract<{ registry: CachingNodeRegistry }>(
  'CachingNodeRegistry',
  {
    memory: () => ({ registry: new MemoryCachingNodeRegistry() }),
    mongo: {
      database: 'caching_nodes',
      collections: [DEPLOYMENT_COLLECTION],
      stores: (db) => ({ registry: mongoCatalogStores(db).cachingNodes }),
    },
  },
  (h) => {
    test('nothing announced reads as null; then the latest announcement, never an earlier one', async () => {
      await onConnections(h, 2, async (connections) => {
        const { registry } = h;
        assert.equal(await registry.lastAnnouncement(), null);
        const at = new Date(Date.UTC(2025, 5, 1, 12));
        await registry.announce(at);
        assert.deepEqual(await registry.lastAnnouncement(), at);
        await registry.announce(new Date(at.getTime() - 60_000));
        for (const other of connections) assert.deepEqual(await other.registry.lastAnnouncement(), at);
        const later = new Date(at.getTime() + 60_000);
        await connections.at(-1)?.registry.announce(later);
        assert.deepEqual(await registry.lastAnnouncement(), later);
      });
    });

    test('processes announcing at once all succeed', async () => {
      await onConnections(h, 2, async (connections) => {
        const now = Date.now();
        await Promise.all(
          Array.from({ length: 12 }, (_, i) =>
            connections[i % connections.length]?.registry.announce(new Date(now + i)),
          ),
        );
        const last = await h.registry.lastAnnouncement();
        assert.ok(last && last.getTime() >= now, 'one of them is the latest');
      });
    });
  },
);
