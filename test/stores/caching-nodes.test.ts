/**
 * The CachingNodeRegistry contract, run against memory always and against MongoDB (or
 * FerretDB) when MONGODB_URL is set: the latest announcement wins, whoever made it and in
 * whatever order they arrive, and processes announcing at once all succeed.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { MemoryCachingNodeRegistry } from '../../src/stores/memory/index.ts';
import type { CachingNodeRegistry } from '../../src/stores/types.ts';
import { mongoSkipped, openMongoTestDatabase } from '../support/mongo.ts';

interface Harness {
  /** Registries over one backend: more than one when the backend is shared by processes. */
  registries: CachingNodeRegistry[];
  close(): Promise<void>;
}

function registryContract(open: () => Promise<Harness>): void {
  let h: Harness;
  before(async () => {
    h = await open();
  });
  after(() => h?.close());

  test('nothing announced reads as null; then the latest announcement, never an earlier one', async () => {
    const [registry] = h.registries;
    assert.ok(registry);
    assert.equal(await registry.lastAnnouncement(), null);
    const at = new Date(Date.UTC(2025, 5, 1, 12));
    await registry.announce(at);
    assert.deepEqual(await registry.lastAnnouncement(), at);
    await registry.announce(new Date(at.getTime() - 60_000));
    for (const other of h.registries) assert.deepEqual(await other.lastAnnouncement(), at);
    const later = new Date(at.getTime() + 60_000);
    await h.registries.at(-1)?.announce(later);
    assert.deepEqual(await registry.lastAnnouncement(), later);
  });

  test('processes announcing at once all succeed', async () => {
    const now = Date.now();
    await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        h.registries[i % h.registries.length]?.announce(new Date(now + i)),
      ),
    );
    const last = await h.registries[0]?.lastAnnouncement();
    assert.ok(last && last.getTime() >= now, 'one of them is the latest');
  });
}

describe('CachingNodeRegistry: memory', () => {
  registryContract(async () => ({ registries: [new MemoryCachingNodeRegistry()], close: async () => {} }));
});

describe('CachingNodeRegistry: MongoDB', { skip: mongoSkipped }, () => {
  registryContract(async () => {
    const database = await openMongoTestDatabase('caching_nodes_test');
    const others = await Promise.all([database.connectAgain(), database.connectAgain()]);
    return {
      registries: [database.stores.cachingNodes, ...others.map((other) => other.cachingNodes)],
      async close() {
        await Promise.all(others.map((other) => other.close()));
        await database.drop();
      },
    };
  });
});
