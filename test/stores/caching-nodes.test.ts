/**
 * The CachingNodeRegistry contract, run against memory always and against MongoDB (or
 * FerretDB) when MONGODB_URL is set: the latest announcement wins, whoever made it and in
 * whatever order they arrive, and processes announcing at once all succeed.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { MemoryCachingNodeRegistry } from '../../src/stores/memory/index.ts';
import type { CachingNodeRegistry } from '../../src/stores/types.ts';
import { mongoSkipped, type SharedStore, sharedMongoStore } from '../support/mongo.ts';

/** Registries over one backend: more than one when the backend is shared by processes. */
type Harness = SharedStore<CachingNodeRegistry>;

function registryContract(open: () => Promise<Harness>): void {
  let h: Harness;
  before(async () => {
    h = await open();
  });
  after(() => h?.close());

  test('nothing announced reads as null; then the latest announcement, never an earlier one', async () => {
    const [registry] = h.connections;
    assert.ok(registry);
    assert.equal(await registry.lastAnnouncement(), null);
    const at = new Date(Date.UTC(2025, 5, 1, 12));
    await registry.announce(at);
    assert.deepEqual(await registry.lastAnnouncement(), at);
    await registry.announce(new Date(at.getTime() - 60_000));
    for (const other of h.connections) assert.deepEqual(await other.lastAnnouncement(), at);
    const later = new Date(at.getTime() + 60_000);
    await h.connections.at(-1)?.announce(later);
    assert.deepEqual(await registry.lastAnnouncement(), later);
  });

  test('processes announcing at once all succeed', async () => {
    const now = Date.now();
    await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        h.connections[i % h.connections.length]?.announce(new Date(now + i)),
      ),
    );
    const last = await h.connections[0]?.lastAnnouncement();
    assert.ok(last && last.getTime() >= now, 'one of them is the latest');
  });
}

describe('CachingNodeRegistry: memory', () => {
  registryContract(async () => ({ connections: [new MemoryCachingNodeRegistry()], close: async () => {} }));
});

describe('CachingNodeRegistry: MongoDB', { skip: mongoSkipped }, () => {
  registryContract(() => sharedMongoStore('caching_nodes_test', (stores) => stores.cachingNodes));
});
